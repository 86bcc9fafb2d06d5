#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: zfs_replication_info
short_description: Report how far a standby's replicas are behind their primary, volume by volume
version_added: 0.2.0
description:
  - Run on a standby that the C(nomad_zfs.csi.zfs_replication) role set up to pull O(parent) from O(host) into
    O(target). For every dataset under O(parent) on the primary it reports the newest snapshot on each side, the
    newest one they have in common (where the next increment starts; a bookmark on the primary counts), and the
    lag, how old the newest data on the replica is in seconds (the recovery point).
  - Reads the primary through the pull's own key and forced command (C(zfs list) only), and the replica with one
    local C(zfs list). Changes nothing on either side.
  - A playbook asserts on RV(lag_seconds), for example C(failed_when) it is null or over a threshold.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes.info_module
options:
  host:
    description: The primary's host name or address, as in the role's C(zfs_replication_pulls).
    type: str
    required: true
  port:
    description: The primary's SSH port.
    type: int
    default: 22
  parent:
    description: The parent pulled from the primary, for example C(tank/nomad/csi).
    type: str
    required: true
  target:
    description: Where its datasets land on this standby, for example C(backup/replica/storage-1/tank/nomad/csi).
    type: str
    required: true
  user:
    description: The replication user, on both hosts.
    type: str
    default: zfs-replica
  ssh_key:
    description: The standby's private key, which the primary binds to the forced command.
    type: path
    default: /var/lib/zfs-replica/.ssh/id_ed25519
  known_hosts:
    description: The primaries' host keys, as the role writes them; no other host key is accepted.
    type: path
    default: /etc/nomad-zfs-csi/replication-known_hosts
  primary_lost:
    description:
      - The primary is gone, as in a failover. Only the replicas are read, and each is reported with its newest
        snapshot and its lag, the age of the data a failover to it brings back. What the primary has is unknown, so
        RV(volumes[].newest_source), RV(volumes[].newest_common) and RV(volumes[].behind) are null, and
        RV(without_snapshots) lists replicas with no snapshot.
      - The volumes are the replicas under O(target), not the primary's datasets.
    type: bool
    default: false
    version_added: 0.2.0
"""

EXAMPLES = r"""
- name: After storage-1 was lost, how old the data in each replica is
  nomad_zfs.csi.zfs_replication_info:
    host: storage-1
    parent: tank/nomad/volumes
    target: backup/replica/storage-1/tank/nomad/volumes
    primary_lost: true
  register: recovery_points

- name: Read how far the replicas of storage-1's CSI volumes are behind
  nomad_zfs.csi.zfs_replication_info:
    host: storage-1
    parent: tank/nomad/csi
    target: backup/replica/storage-1/tank/nomad/csi
  register: replicas
  failed_when: replicas.lag_seconds is none or replicas.lag_seconds > 7200
"""

RETURN = r"""
lag_seconds:
  description:
    - The worst lag over the volumes that have snapshots on the primary, in seconds; null when one of them has no
      snapshot on the replica yet.
  returned: success
  type: int
  sample: 1260
not_replicated:
  description: The volumes with snapshots on the primary and none in common with the replica.
  returned: success
  type: list
  elements: str
without_snapshots:
  description:
    - The volumes with no snapshot on the primary (for example C(com.sun:auto-snapshot=false)), which have nothing
      to replicate.
  returned: success
  type: list
  elements: str
volumes:
  description: Every dataset under O(parent) on the primary, parents before children.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: The dataset on the primary.
      type: str
    replica:
      description: Its replica's name on this standby.
      type: str
    replica_exists:
      description: Whether the replica exists.
      type: bool
    newest_source:
      description:
        - The newest snapshot on the primary (C(name), C(guid), C(created) in seconds since the epoch), or null.
      type: dict
    newest_replica:
      description: The newest snapshot on the replica, or null.
      type: dict
    newest_common:
      description: The newest replica snapshot that the primary still has as a snapshot or bookmark, or null.
      type: dict
    in_sync:
      description:
        - Whether the replica holds the primary's newest data, that is, the primary still has the replica's newest
          snapshot and every snapshot it took since wrote nothing (its C(written) is 0). The role's pull leaves such
          a volume out of syncoid, unless its newest snapshot is a move's final one.
        - Null with O(primary_lost).
      type: bool
    recovery_point:
      description:
        - The snapshot whose data is the newest the replica holds (C(name), C(guid), C(created)), or null; see
          RV(volumes[].lag_seconds). The C(nomad_zfs.csi.zfs_metrics) role reports its C(created) as
          C(nomad_zfs_replica_recovery_point_timestamp_seconds), from the same code.
      type: dict
      version_added: 0.2.0
    lag_seconds:
      description:
        - How old the newest data on the replica is (its recovery point), in seconds, or null when it has no
          snapshot. The point is the replica's newest snapshot, or the newest of the primary's snapshots after it
          that wrote nothing, since the replica holds their data too.
      type: int
    behind:
      description: How many of the primary's snapshots are newer than the newest common one.
      type: int
"""

import re
import time

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._replication_status import (
    LIST_ARGS,
    listing_ssh_argv,
    replica_report,
    report,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_module import ZfsModule

HOST_CHARS = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-')
# A login name: user@host is one word of ssh's argv, which must not read as an option.
USER_NAME = re.compile(r'[a-z_][a-z0-9_-]*\Z')


def check_input(module):
    """Refuses bad input, naming the field and the fix, before any zfs or ssh process."""
    module.check_name('parent')
    module.check_name('target')
    host = module.params['host']
    if not host or host[0] in '.-' or not HOST_CHARS.issuperset(host):
        raise PlanError('host %r is not a host name or IPv4 address, as in zfs_replication_pulls' % host)
    if not USER_NAME.match(module.params['user']):
        raise PlanError('user %r is not a login name such as zfs-replica' % module.params['user'])


def read_primary(module):
    p = module.params
    options = ['BatchMode=yes', 'StrictHostKeyChecking=yes', 'UserKnownHostsFile=%s' % p['known_hosts']]
    login = '%s@%s' % (p['user'], p['host'])
    ssh = module.get_bin_path('ssh', required=True)
    rc, out, err = module.run_command(listing_ssh_argv(ssh, p['ssh_key'], p['port'], options, login, p['parent']))
    if rc != 0:
        why = (p['host'], p['parent'], rc, err.strip(), p['known_hosts'], p['parent'])
        raise PlanError(
            'the primary %s did not list %s through the replication key (rc=%s): %s. Check the pull: the '
            "primary's zfs_replication_standby_keys, its host key in %s, and that %s is one of its "
            'zfs_replication_snapshots parents.' % why
        )
    return out


def read(module):
    p = module.params
    rc, replica, err = module.zfs.run(LIST_ARGS + [p['target']], check=False)
    if rc != 0:
        raise PlanError(
            'target %s cannot be listed on this standby: %s. Run the zfs_replication role with this pull first.'
            % (p['target'], err.strip())
        )
    if p['primary_lost']:
        return replica_report(replica, p['parent'], p['target'], int(time.time()))
    return report(read_primary(module), replica, p['parent'], p['target'], int(time.time()))


def main():
    module = ZfsModule(
        argument_spec=dict(
            host=dict(type='str', required=True),
            port=dict(type='int', default=22),
            parent=dict(type='str', required=True),
            target=dict(type='str', required=True),
            user=dict(type='str', default='zfs-replica'),
            ssh_key=dict(type='path', default='/var/lib/zfs-replica/.ssh/id_ed25519'),
            known_hosts=dict(type='path', default='/etc/nomad-zfs-csi/replication-known_hosts'),
            primary_lost=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    module.run(lambda: check_input(module))
    module.exit_json(changed=False, **module.run(lambda: read(module)))


if __name__ == '__main__':
    main()
