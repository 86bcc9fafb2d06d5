#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_host_volume_info
short_description: Read Nomad dynamic host volumes, with the allocations that use them
version_added: 0.2.0
description:
  - Lists the dynamic host volumes of O(namespace), or those called O(name), and reads each, as
    C(nomad volume status -type host) shows them.
  - Each volume comes with the allocations that claim it and are not yet client-terminal, which are the ones that
    keep Nomad from deleting or updating it.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes.info_module
  - nomad_zfs.csi.nomad
options:
  name:
    description: Only the volumes with this name (one per node at most). All of O(namespace) when left out.
    type: str
  node_id:
    description: Only the volumes on this node.
    type: str
notes:
  - Needs C(host-volume-read) in O(namespace).
"""

EXAMPLES = r"""
- name: Where pgdata is, and which jobs use it
  nomad_zfs.csi.nomad_host_volume_info:
    name: pgdata
    namespace: team-a
  register: pgdata
"""

RETURN = r"""
volumes:
  description: The volumes, each as M(nomad_zfs.csi.nomad_host_volume) returns one, with its allocations.
  returned: always
  type: list
  elements: dict
  sample: [{"id": "6d0f7a5e-2c1b-4f7e-9a35-0c6a2f3b9e11", "name": "pgdata", "namespace": "team-a",
            "plugin_id": "zfs-dataset", "node_id": "0b1d...", "host_path": "/tank/nomad/volumes/team-a/pgdata",
            "capacity_max": 1073741824, "parameters": {}, "state": "ready",
            "allocations": [{"id": "9c1e...", "job_id": "pgdata-db", "namespace": "team-a", "task_group": "db",
                             "node_id": "0b1d...", "client_status": "running"}]}]
"""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_plan import allocations, shown
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule


def read(module):
    client, p = module.client, module.params
    params = {'type': 'host', 'prefix': p['name']} if p['name'] else {'type': 'host'}
    if p['node_id']:
        params['node_id'] = p['node_id']
    listed = [
        stub
        for stub in client.get('volumes', params=params) or []
        if (not p['name'] or stub.get('Name') == p['name']) and (not p['node_id'] or stub.get('NodeID') == p['node_id'])
    ]
    volumes = []
    for stub in listed:
        vol = client.get('volume/host/' + stub['ID'], missing_ok=True)
        if vol:
            volumes.append(dict(shown(vol), allocations=allocations(vol)))
    return dict(changed=False, volumes=volumes)


def main():
    module = NomadModule(
        argument_spec=dict(name=dict(type='str'), node_id=dict(type='str')),
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: read(module)))


if __name__ == '__main__':
    main()
