#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_csi_volume_info
short_description: List Nomad CSI volumes, with their capacity and claims when asked
version_added: 0.1.0
description:
  - Lists the CSI volumes of O(namespace), all of them or those with one O(id), an ID O(prefix) or one
    O(plugin_id), in one call to Nomad.
  - Nomad's list has no capacity, capabilities or claims. With O(claims=true) each listed volume is read
    once more for them; so a read costs one call, plus one per volume only when claims are asked for.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes.info_module
  - nomad_zfs.csi.nomad
options:
  id:
    description: Only the volume with this ID. An empty list when there is none.
    type: str
  prefix:
    description: Only volumes whose ID starts with this.
    type: str
  plugin_id:
    description: Only volumes of this CSI plugin.
    type: str
  claims:
    description:
      - Also read each volume for its capacity, requested capacity, capabilities and the allocations that
        claim it (allocation, node, job, and whether it reads or writes).
    type: bool
    default: false
seealso:
  - module: nomad_zfs.csi.nomad_csi_volume
"""

EXAMPLES = r"""
- name: Every volume of the ZFS plugin, with who claims it
  nomad_zfs.csi.nomad_csi_volume_info:
    plugin_id: zfs
    claims: true
  register: zfs_volumes

- name: Fail when a volume is still claimed
  ansible.builtin.assert:
    that: zfs_volumes.volumes | selectattr('id', 'equalto', 'pgdata') | map(attribute='claims') | first | length == 0
"""

RETURN = r"""
volumes:
  description: The volumes, sorted by ID.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: The volume ID.
      type: str
    name:
      description: The display name.
      type: str
    namespace:
      description: The namespace.
      type: str
    plugin_id:
      description: The CSI plugin.
      type: str
    provider:
      description: The plugin's provider name, such as C(org.democratic-csi.zfs-generic-nfs).
      type: str
    external_id:
      description: The storage's own ID; for democratic-csi the dataset's name under the parent.
      type: str
    schedulable:
      description: Whether jobs can claim it now (its plugin is healthy).
      type: bool
    access_mode:
      description: The access mode of its current claims; empty when unclaimed.
      type: str
    attachment_mode:
      description: The attachment mode of its current claims; empty when unclaimed.
      type: str
    readers:
      description: How many allocations claim it to read.
      type: int
    writers:
      description: How many allocations claim it to write.
      type: int
    capacity:
      description: Capacity in bytes, as the plugin reported it.
      type: int
      returned: when O(claims=true)
    capacity_min:
      description: The requested least capacity in bytes.
      type: int
      returned: when O(claims=true)
    capacity_max:
      description: The requested greatest capacity in bytes.
      type: int
      returned: when O(claims=true)
    capabilities:
      description: The access and attachment modes jobs may claim it with.
      type: list
      elements: dict
      returned: when O(claims=true)
    claims:
      description:
        - The allocations that claim it, each with C(allocation), C(node), C(job), C(task_group) and
          C(access) (V(read) or V(write)).
      type: list
      elements: dict
      returned: when O(claims=true)
  sample: [{"id": "pgdata", "name": "pgdata", "namespace": "default", "plugin_id": "zfs", "schedulable": true,
            "provider": "org.democratic-csi.zfs-generic-nfs", "external_id": "pgdata", "access_mode": "",
            "attachment_mode": "", "readers": 0, "writers": 0}]
"""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._csi_volume_plan import capabilities_of
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule


def listed(stub):
    """What the list call says of one volume."""
    return dict(
        id=stub['ID'],
        name=stub.get('Name'),
        namespace=stub.get('Namespace'),
        plugin_id=stub.get('PluginID'),
        provider=stub.get('Provider'),
        external_id=stub.get('ExternalID'),
        schedulable=stub.get('Schedulable'),
        access_mode=stub.get('AccessMode') or '',
        attachment_mode=stub.get('AttachmentMode') or '',
        readers=stub.get('CurrentReaders', 0),
        writers=stub.get('CurrentWriters', 0),
    )


def details(vol):
    """What only a read of the volume says: capacity, capabilities and the claiming allocations."""
    writers = set(vol.get('WriteAllocs') or {})
    claimed = set(writers) | set(vol.get('ReadAllocs') or {})
    claims = [
        dict(
            allocation=alloc['ID'],
            node=alloc.get('NodeName') or alloc.get('NodeID'),
            job=alloc.get('JobID'),
            task_group=alloc.get('TaskGroup'),
            access='write' if alloc['ID'] in writers else 'read',
        )
        for alloc in vol.get('Allocations') or []
        if alloc['ID'] in claimed
    ]
    return dict(
        capacity=vol.get('Capacity') or 0,
        capacity_min=vol.get('RequestedCapacityMin') or 0,
        capacity_max=vol.get('RequestedCapacityMax') or 0,
        capabilities=capabilities_of(vol),
        claims=sorted(claims, key=lambda c: c['allocation']),
    )


def read(module):
    p, client = module.params, module.client
    query = {'type': 'csi'}
    if p['id'] or p['prefix']:
        query['prefix'] = p['id'] or p['prefix']
    if p['plugin_id']:
        query['plugin_id'] = p['plugin_id']
    stubs = [s for s in client.get('volumes', params=query) or [] if not p['id'] or s['ID'] == p['id']]
    volumes = []
    for stub in sorted(stubs, key=lambda s: s['ID']):
        volume = listed(stub)
        if p['claims']:
            volume.update(details(client.get('volume/csi/' + stub['ID'])))
        volumes.append(volume)
    return dict(changed=False, volumes=volumes)


def main():
    module = NomadModule(
        argument_spec=dict(
            id=dict(type='str'),
            prefix=dict(type='str'),
            plugin_id=dict(type='str'),
            claims=dict(type='bool', default=False),
        ),
        mutually_exclusive=[('id', 'prefix')],
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: read(module)))


if __name__ == '__main__':
    main()
