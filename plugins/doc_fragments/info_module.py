# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Attributes shared by every read-only *_info module.
    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    support: full
    description: This module only reads, and works the same in check mode.
  diff_mode:
    support: none
    description: This module changes nothing, so it has no diff.
'''
