#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_csi_snapshot_info
short_description: List the snapshots a Nomad CSI plugin holds
version_added: 0.1.0
description:
  - Lists the plugin's snapshots through Nomad, optionally only those of one volume or with one name.
  - Costs the plugin's list (one call per page of Nomad's answer), plus one read of the volume with
    O(source_volume_id).
  - Names come from the snapshot IDs, as M(nomad_zfs.csi.nomad_csi_snapshot) explains.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes.info_module
  - nomad_zfs.csi.nomad
options:
  plugin_id:
    description: The CSI plugin, for example V(zfs).
    type: str
    required: true
  source_volume_id:
    description:
      - Only snapshots of this Nomad volume. A volume Nomad no longer knows is matched by its ID as the
        storage ID, which is democratic-csi's rule, so its detached snapshots can still be found.
    type: str
  name:
    description: Only snapshots with this name.
    type: str
  secrets:
    description: CSI secrets for the plugin's list. Sent in Nomad's V(X-Nomad-CSI-Secrets) header only.
    type: dict
    default: {}
seealso:
  - module: nomad_zfs.csi.nomad_csi_snapshot
"""

EXAMPLES = r"""
- name: The snapshots of pgdata
  nomad_zfs.csi.nomad_csi_snapshot_info:
    plugin_id: zfs
    source_volume_id: pgdata
  register: found

- name: Their IDs
  ansible.builtin.debug:
    msg: "{{ found.snapshots | map(attribute='id') }}"
"""

RETURN = r"""
snapshots:
  description: The snapshots that fit the filters, in the plugin's order.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: The plugin's snapshot ID.
      type: str
      sample: pgdata@nightly
    name:
      description: The snapshot's name.
      type: str
      sample: nightly
    plugin_id:
      description: The plugin.
      type: str
      sample: zfs
    source_volume_id:
      description: The source volume's Nomad ID, when Nomad gives it.
      type: str
      sample: ''
    external_source_volume_id:
      description: The source volume's storage ID.
      type: str
      sample: pgdata
    size_bytes:
      description: The size the plugin reports.
      type: int
      sample: 1073741824
    create_time:
      description: When the snapshot was taken, in seconds since the epoch.
      type: int
      sample: 1795425600
    is_ready:
      description: Whether a volume can be made from it.
      type: bool
      sample: true
"""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._csi_snapshot_plan import (
    list_snapshots,
    matching,
    public,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule


def read(module):
    p, client = module.params, module.client
    external = None
    if p['source_volume_id']:
        volume = client.get('volume/csi/' + p['source_volume_id'], missing_ok=True)
        external = volume.get('ExternalID') if volume else p['source_volume_id']
    found = matching(list_snapshots(client, p['plugin_id'], p['secrets']), external, p['name'])
    return dict(changed=False, snapshots=[public(dict(s, PluginID=s.get('PluginID') or p['plugin_id'])) for s in found])


def main():
    module = NomadModule(
        argument_spec=dict(
            plugin_id=dict(type='str', required=True),
            source_volume_id=dict(type='str'),
            name=dict(type='str'),
            secrets=dict(type='dict', default={}, no_log=True),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: read(module), snapshots=[]))


if __name__ == '__main__':
    main()
