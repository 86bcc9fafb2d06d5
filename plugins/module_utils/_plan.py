# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""What every planner returns or raises.

A planner takes the current and the desired state and decides, without running anything. A module reads,
plans, applies the plan unless in check mode, and exits; so check mode predicts with the very code that works.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class PlanError(Exception):
    """Input the planner refuses, worded for the operator: the field and the fix. Nothing has changed."""


class Plan(object):
    """steps: the commands or API calls to make, in order; before/after: the diff; predicted: the state after."""

    def __init__(self, steps, before, after, predicted=None, changed_fields=None):
        self.steps, self.before, self.after, self.predicted = steps, before, after, predicted
        self.changed_fields = changed_fields or []
