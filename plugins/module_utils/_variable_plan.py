# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""nomad_variable's decisions, without calling Nomad. Every write is check-and-set on the index that was read,
so a variable changed by someone else in between is refused by Nomad instead of overwritten."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import Plan

# Nomad's own rule for variable paths.
PATH_RE = re.compile(r'^[a-zA-Z0-9_~\-/]{1,128}$')


def is_variable_path(path):
    """Whether Nomad takes path (leading and trailing slashes stripped) as a variable path."""
    path = path.strip('/')
    return bool(PATH_RE.match(path)) and '//' not in path


def plan_variable(path, namespace, items, state, current):
    # type: (str, str, dict[str, str], str, dict | None) -> Plan
    """The calls that give variable path the items (state present) or remove it; current is Nomad's read or None.

    before and after are the item keys, each marked hidden: values never leave the module.
    """
    before = (current or {}).get('Items') or {}
    index = (current or {}).get('ModifyIndex', 0)
    if state == 'absent':
        changed = sorted(before)
        steps = [('delete', 'var/' + path, {'params': {'cas': index}})] if current else []
        after = {}
    else:
        changed = sorted(k for k in set(before) | set(items) if before.get(k) != items.get(k))
        body = {'Namespace': namespace, 'Path': path, 'Items': items}
        steps = [('put', 'var/' + path, {'body': body, 'params': {'cas': index}})] if changed else []
        after = items
    # Unchanged items stay '<hidden>'; changed ones differ only in the marker.
    return Plan(
        steps,
        before=dict((k, '<hidden, before>' if k in changed else '<hidden>') for k in sorted(before)),
        after=dict((k, '<hidden, after>' if k in changed else '<hidden>') for k in sorted(after)),
        predicted={'keys': sorted(after), 'modify_index': 0 if state == 'absent' else index},
        changed_fields=changed,
    )
