#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: zfs_host_volume_info
short_description: Read a zfs-dataset host volume's dataset and replicas on one node
version_added: 0.2.0
description:
  - Run as root on a Nomad client with the zfs-dataset host volume plugin (the C(nomad_zfs.csi.host_volume_plugin)
    role). It reads the plugin's configuration (its parent and replica parent), and the pulls of the
    C(nomad_zfs.csi.zfs_replication) role into that replica parent (their C(SOURCE) and C(TARGET)). Then, with one
    C(zfs list), the volume's dataset C(<parent>/<namespace>/<name>) with its marks and snapshots, and the volume's
    replica where each of those pulls keeps it.
  - The C(nomad_zfs.csi.host_volume_move) role reads both nodes with it, and
    M(nomad_zfs.csi.nomad_host_volume_move_plan) decides from both reads. It changes nothing.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes.info_module
options:
  plugin_conf:
    description: The plugin's configuration, C(<the agent's host_volume_plugin_dir>/<plugin id>.conf).
    type: path
    required: true
  namespace:
    description: The volume's Nomad namespace.
    type: str
    required: true
  name:
    description: The volume's name.
    type: str
    required: true
  pulls_dir:
    description: Where the C(nomad_zfs.csi.zfs_replication) role keeps one C(<instance>.conf) per pull.
    type: path
    default: /etc/nomad-zfs-csi/pulls
"""

EXAMPLES = r"""
- name: The volume pgdata on this node, and its replicas
  nomad_zfs.csi.zfs_host_volume_info:
    plugin_conf: /opt/nomad/host_volume_plugins/zfs-dataset.conf
    namespace: team-a
    name: pgdata
  become: true
  register: here
"""

RETURN = r"""
parent:
  description: The plugin's parent, where it makes volumes.
  returned: always
  type: str
  sample: tank/nomad/volumes
replica_parent:
  description: The plugin's replica parent, where it adopts replicas from; empty when it has none.
  returned: always
  type: str
  sample: tank/replica
dataset:
  description:
    - The volume's dataset on this node, C(<parent>/<namespace>/<name>). C(exists), and when it does, C(type),
      C(readonly), C(mark) (the volume ID it belongs to), C(moved_to) (the node its data moved to, or null) and
      C(snapshots), oldest first (by transaction group), each with C(name), C(guid), C(creation) (Unix seconds),
      C(txg) (the transaction group that made it) and C(written) (bytes it holds that the snapshot before it does
      not; 0 when it holds the same data).
  returned: always
  type: dict
  sample: {"name": "tank/nomad/volumes/team-a/pgdata", "exists": true, "type": "filesystem", "readonly": false,
           "mark": "6d0f7a5e-2c1b-4f7e-9a35-0c6a2f3b9e11", "moved_to": null,
           "snapshots": [{"name": "tank/nomad/volumes/team-a/pgdata@autosnap_2026-11-26_09:00:00_hourly",
                          "guid": "1460469617387316839", "creation": 1795683600, "txg": 1844, "written": 131072}]}
pulls:
  description:
    - Each pull of the C(nomad_zfs.csi.zfs_replication) role into the replica parent, with C(instance) (its systemd
      instance), C(host), C(parent) (whence it pulls), C(target), C(adopt) (what the plugin's C(adopt_replica) names
      for a replica there), C(namespace_replica_exists), and C(replica), the volume's replica there as RV(dataset)
      describes one.
  returned: always
  type: list
  elements: dict
"""

import glob
import os

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_node import (
    COLUMNS,
    candidates,
    node_view,
    parse_conf,
    parse_listing,
    parse_pull,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_module import ZfsModule


def _text(path, why):
    try:
        with open(path) as f:
            return f.read()
    except (IOError, OSError) as e:
        raise PlanError('cannot read %s (%s); %s' % (path, e.strerror, why))


def read(module):
    p = module.params
    conf = parse_conf(
        _text(
            p['plugin_conf'],
            'only a volume of the zfs-dataset plugin, which the host_volume_plugin role installs with that file '
            'beside it, can move. Nothing was changed',
        )
    )
    pulls = [
        parse_pull(os.path.basename(path)[: -len('.conf')], _text(path, 'run the zfs_replication role again'))
        for path in sorted(glob.glob(os.path.join(p['pulls_dir'], '*.conf')))
    ]
    names = candidates(conf, pulls, p['namespace'], p['name'])
    listing = {}
    if names:
        args = ['list', '-H', '-p', '-o', ','.join(COLUMNS), '-t', 'filesystem,volume,snapshot', '-d', '1']
        listing = parse_listing(module.zfs.listing(args, names))
    view = node_view(conf, pulls, listing, p['namespace'], p['name'])
    return dict(changed=False, **view)


def main():
    module = ZfsModule(
        argument_spec=dict(
            plugin_conf=dict(type='path', required=True),
            namespace=dict(type='str', required=True),
            name=dict(type='str', required=True),
            pulls_dir=dict(type='path', default='/etc/nomad-zfs-csi/pulls'),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: read(module)))


if __name__ == '__main__':
    main()
