# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""Readable lines from the Diff object that Nomad's job plan returns."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

MARKS = {'Added': '+', 'Deleted': '-', 'Edited': '~', 'None': ' '}


def diff_lines(diff, indent=''):
    """`+`/`-`/`~` lines for every changed field, object, group and task, like `nomad job plan`."""
    lines = []
    if diff.get('Type', 'None') == 'None':
        return lines
    name = diff.get('Name') or diff.get('ID') or ''
    if name:
        lines.append('%s%s %s' % (indent, MARKS.get(diff['Type'], '?'), name))
        indent += '  '
    for field in diff.get('Fields') or []:
        if field.get('Type', 'None') != 'None':
            mark = MARKS.get(field['Type'], '?')
            lines.append(
                '%s%s %s: %r => %r' % (indent, mark, field.get('Name'), field.get('Old', ''), field.get('New', ''))
            )
    for key in ('Objects', 'TaskGroups', 'Tasks'):
        for child in diff.get(key) or []:
            lines.extend(diff_lines(child, indent))
    return lines
