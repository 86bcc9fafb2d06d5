# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Modules that change things: full check and diff support.
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    support: full
    description: Reports what would change and changes nothing.
  diff_mode:
    support: full
    description: Shows the state before and after the change.
"""

    # Read-only *_info modules.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    description: This module only reads, and works the same in check mode.
  diff_mode:
    support: none
    description: This module changes nothing, so it has no diff.
"""
