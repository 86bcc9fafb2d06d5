#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: zfs_host_volume_standby
short_description: Make a node's copy of a zfs-dataset host volume the standby of the node that holds it now
version_added: 0.2.0
description:
  - Run as root on the node a host volume left, by a planned move or by a failover. Its copy of the volume
    (O(dataset)) becomes the replica that this node's pull of the new source keeps (O(replica)), holding the
    snapshot the volume on the new source started from (O(common)), so that the next pull sends only what changed
    since.
  - A copy with nothing after that snapshot (a planned move stops writes before its final snapshot) is renamed into
    place, and the properties it kept of its life as a volume are inherited again.
  - A copy that wrote after it (a node that was lost, then returned) is kept whole. A clone of its common snapshot,
    promoted, becomes the replica, with the snapshots up to that one. The copy, with everything it wrote after, is
    renamed aside to C(<dataset>.diverged-after-<common>), read-only and marked C(nomad-zfs-csi:moved-to), so
    that the zfs-dataset plugin never offers it again. Nothing is rolled back or destroyed. Save what is needed from
    it, then destroy it by hand (its origin is the replica's common snapshot, which stays until then).
  - Each step leaves a state that a second run goes on from; a run after the last changes nothing.
  - The C(nomad_zfs.csi.host_volume_move) role calls it when replication turns around, and after a failover when
    the lost node returns (C(playbooks/rejoin_host_volume.yml)).
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
options:
  dataset:
    description: The volume's dataset on this node, C(<plugin parent>/<namespace>/<name>).
    type: str
    required: true
  replica:
    description:
      - Where this node's pull of the new source keeps the volume, C(<pull target>/<namespace>/<name>).
      - It must be in the pool of O(dataset). Its parent, the namespace's replica, must exist (a pull receives it).
    type: str
    required: true
  common:
    description: The short name (after C(@)) of the snapshot the volume on the new source started from.
    type: str
    required: true
  common_guid:
    description:
      - That snapshot's C(guid) on the new source. Only a snapshot of the same guid counts as common.
      - Without it, the snapshot of that name counts (a planned move's final snapshot, which only the move makes).
    type: str
  moved_to:
    description: The Nomad node that holds the volume now, for the mark on a copy set aside.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Make this node's copy of pgdata the standby of storage-1
  nomad_zfs.csi.zfs_host_volume_standby:
    dataset: tank/nomad/volumes/team-a/pgdata
    replica: tank/nomad/replica/storage-1/tank/nomad/volumes/team-a/pgdata
    common: autosnap_2026-11-26_14:00:00_hourly
    common_guid: "12398475619283746501"
    moved_to: storage-1
  become: true
"""

RETURN = r"""
standby:
  description: The replica the pull keeps from now on.
  returned: success
  type: str
aside:
  description: Where the copy that diverged is kept, or null when it had not diverged.
  returned: success
  type: str
diverged:
  description: Whether the copy wrote after the common snapshot, and was kept aside.
  returned: success
  type: bool
commands:
  description: The zfs commands run, or in check mode those that would run.
  returned: success
  type: list
  elements: list
"""

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_standby import (
    COLUMNS,
    VOLUME_ONLY,
    aside_name,
    parse_listing,
    plan,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_module import ZfsModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_names import is_snapshot_short_name


def read(module):
    """The listing of the copy, the replica and the aside copy with their snapshots, and the replica's local
    VOLUME_ONLY properties."""
    p = module.params
    names = [p['dataset'], p['replica'], aside_name(p['dataset'], p['common'])]
    args = ['list', '-H', '-p', '-o', ','.join(COLUMNS), '-t', 'filesystem,volume,snapshot', '-s', 'createtxg']
    listing = parse_listing(module.zfs.listing(args + ['-d', '1'], names))
    local = []
    if p['replica'] in listing:
        out = module.zfs.run(['get', '-H', '-o', 'property', '-s', 'local', ','.join(VOLUME_ONLY), p['replica']])[1]
        local = out.split()
    return listing, local


def work(module):
    p = module.params
    for field in ('dataset', 'replica'):
        module.check_name(field)
    if not is_snapshot_short_name(p['common']):
        raise PlanError("common %r is not a snapshot's short name; give the part after '@'." % p['common'])
    if p['common_guid'] is not None and not re.match(r'^[0-9]+$', p['common_guid']):
        raise PlanError('common_guid %r is not a guid; give the number zfs get guid prints.' % p['common_guid'])
    listing, local = read(module)
    planned = plan(p, listing, local)
    module.apply(planned['commands'])
    result = dict(
        changed=bool(planned['commands']),
        standby=planned['standby'],
        aside=planned['aside'],
        diverged=planned['diverged'],
        commands=[['zfs'] + args for args in planned['commands']],
    )
    if module._diff and planned['commands']:
        roles = (('copy', p['dataset']), ('standby', p['replica']), ('aside', aside_name(p['dataset'], p['common'])))
        after = dict(standby=planned['standby'])
        if planned['aside']:
            after['aside'] = planned['aside']
        result['diff'] = dict(before=dict((role, name) for role, name in roles if name in listing), after=after)
    return result


def main():
    module = ZfsModule(
        argument_spec=dict(
            dataset=dict(type='str', required=True),
            replica=dict(type='str', required=True),
            common=dict(type='str', required=True),
            common_guid=dict(type='str'),
            moved_to=dict(type='str', required=True),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: work(module)))


if __name__ == '__main__':
    main()
