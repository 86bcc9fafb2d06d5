#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: zfs_host_volume_source
short_description: Freeze and mark a zfs-dataset host volume's dataset for its move, or put it back
version_added: 0.2.0
description:
  - Run as root on the node a host volume moves from. With O(state=marked) the dataset is made read-only, left out of
    the scheduled snapshots (C(com.sun:auto-snapshot=false)) and marked C(nomad-zfs-csi:moved-to=<moved_to>), so that
    the zfs-dataset plugin keeps it when Nomad deletes the volume and never offers it again; then the final snapshot
    O(final) is taken, once.
  - O(in_pulls) says whether the target's pulls still take the dataset (C(syncoid:sync) inherited), as they must
    until the replica holds the final snapshot, or leave it (C(syncoid:sync=false)), as they must once the volume is
    adopted there.
  - With O(state=unmarked), a move given up, those four properties are inherited again.
  - One C(zfs get) reads the dataset and the final snapshot; a run that finds everything in place changes nothing.
    The C(nomad_zfs.csi.host_volume_move) role calls it.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
options:
  dataset:
    description: The volume's dataset, C(<plugin parent>/<namespace>/<name>).
    type: str
    required: true
  state:
    description: C(marked) for the move, C(unmarked) when it is given up.
    type: str
    choices: [marked, unmarked]
    required: true
  moved_to:
    description: The Nomad node the volume moves to. Required with O(state=marked).
    type: str
  final:
    description: The final snapshot's short name (after C(@)), taken once the dataset is read-only.
    type: str
  in_pulls:
    description: With O(state=marked), whether the target's pulls still take the dataset.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: Freeze pgdata for its move to storage-2, with its final snapshot
  nomad_zfs.csi.zfs_host_volume_source:
    dataset: tank/nomad/volumes/team-a/pgdata
    state: marked
    moved_to: storage-2
    final: nomad-zfs-csi-move_2026-11-26_14:00:00
  become: true
  register: frozen

- name: Leave it out of storage-2's pulls once the replica holds the final snapshot
  nomad_zfs.csi.zfs_host_volume_source:
    dataset: tank/nomad/volumes/team-a/pgdata
    state: marked
    moved_to: storage-2
    in_pulls: false
  become: true
"""

RETURN = r"""
final_guid:
  description: The final snapshot's C(guid), when O(final) is given and the snapshot exists (in check mode, when it
    existed already).
  returned: success
  type: str
commands:
  description: The zfs commands run, or in check mode those that would run.
  returned: success
  type: list
  elements: list
"""


from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_source import READ, plan
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_module import ZfsModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_names import is_snapshot_short_name


def read(module, names):
    """{name: {property: (value, source)}} of those of names that exist, with one zfs get."""
    return module.zfs.get(names, READ)[0]


def work(module):
    p = module.params
    module.check_name('dataset')
    if p['state'] == 'marked' and not p['moved_to']:
        raise PlanError('moved_to is required with state=marked: name the Nomad node the volume moves to.')
    if p['final'] is not None and not is_snapshot_short_name(p['final']):
        raise PlanError("final %r is not a snapshot's short name; give the part after '@'." % p['final'])
    snapshot = '%s@%s' % (p['dataset'], p['final']) if p['final'] else None
    props = read(module, [p['dataset']] + ([snapshot] if snapshot else []))
    commands = plan(p, props)
    module.apply(commands)
    result = dict(changed=bool(commands), commands=[['zfs'] + c for c in commands])
    after = props
    if snapshot and commands and not module.check_mode:
        after = read(module, [snapshot])
    if snapshot in after:
        result['final_guid'] = after[snapshot]['guid'][0]
    if module._diff and commands:
        result['diff'] = diff(props.get(p['dataset'], {}), commands, snapshot)
    return result


def diff(current, commands, snapshot):
    """The marks before and after the commands (an inherited one shown as such), and the final snapshot."""
    before = dict((k, v[0]) for k, v in current.items() if k != 'guid')
    after = dict(before)
    for command in commands:
        if command[0] == 'set':
            after.update(change.split('=', 1) for change in command[1:-1])
        elif command[0] == 'inherit':
            after[command[1]] = '(inherited)'
    if snapshot:
        before['final_snapshot'] = snapshot if ['snapshot', snapshot] not in commands else None
        after['final_snapshot'] = snapshot
    return dict(before=before, after=after)


def main():
    module = ZfsModule(
        argument_spec=dict(
            dataset=dict(type='str', required=True),
            state=dict(type='str', required=True, choices=['marked', 'unmarked']),
            moved_to=dict(type='str'),
            final=dict(type='str'),
            in_pulls=dict(type='bool', default=True),
        ),
        required_if=[('state', 'marked', ['moved_to'])],
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: work(module)))


if __name__ == '__main__':
    main()
