#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_node_info
short_description: Read Nomad client nodes, with the host volume plugins they report
version_added: 0.2.0
description:
  - Lists Nomad's client nodes, or the one called O(name), and reads each, for its status, whether it is eligible for
    placements, its node pool and the dynamic host volume plugins it fingerprinted.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes.info_module
  - nomad_zfs.csi.nomad
options:
  name:
    description: Only the node of this name. All nodes when left out.
    type: str
notes:
  - Needs C(node:read). O(namespace) plays no part; nodes belong to no namespace.
"""

EXAMPLES = r"""
- name: Is storage-2 ready for a zfs-dataset volume?
  nomad_zfs.csi.nomad_node_info:
    name: storage-2
  register: storage_2
"""

RETURN = r"""
nodes:
  description: The nodes, by name.
  returned: always
  type: list
  elements: dict
  sample: [{"id": "0b1d...", "name": "storage-2", "status": "ready", "status_updated_at": 1795699200,
            "eligible": true, "drain": false,
            "node_pool": "default", "datacenter": "dc1", "http_addr": "10.0.0.12:4646",
            "host_volume_plugins": {"mkdir": "0.0.1", "zfs-dataset": "0.2.0"},
            "host_volumes": {"pgdata": "6d0f7a5e-2c1b-4f7e-9a35-0c6a2f3b9e11"}}]
"""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_nodes import summary


def read(module):
    client, name = module.client, module.params['name']
    stubs = [s for s in client.get('nodes') or [] if not name or s.get('Name') == name]
    nodes = [client.get('node/' + s['ID'], missing_ok=True) for s in sorted(stubs, key=lambda s: s.get('Name'))]
    return dict(changed=False, nodes=[summary(n) for n in nodes if n])


def main():
    module = NomadModule(argument_spec=dict(name=dict(type='str')), supports_check_mode=True)
    module.exit_json(**module.run(lambda: read(module)))


if __name__ == '__main__':
    main()
