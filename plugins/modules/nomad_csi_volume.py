#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: nomad_csi_volume
short_description: Create or register a Nomad CSI volume, or remove it
version_added: 0.1.0
description:
  - With O(mode=create), Nomad asks the CSI plugin's controller to create the volume (for
    democratic-csi's ZFS drivers, a dataset under the delegated parent). With O(mode=register),
    Nomad records a volume that already exists, named by O(external_id).
  - An existing volume is left alone when its plugin, name, capabilities, capacity, file system,
    parameters and context match; otherwise it is updated in place. Its plugin and external ID
    cannot change; the module says so and changes nothing.
  - O(state=absent) deregisters the volume and keeps its data. Deleting the data needs
    O(state=deleted), which asks the plugin to destroy the volume.
  - O(secrets) and O(mount_flags) are write-only (Nomad redacts them when read), so they are
    sent whenever the volume is written but never compared.
  - Just after a plugin turns healthy, Nomad can still answer V(plugin has no controller) for a
    moment; O(mode=create) then retries for up to 30 seconds, since nothing was created.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
  - nomad_zfs.csi.nomad
options:
  id:
    description: The volume ID that jobs claim, for example C(pgdata).
    type: str
    required: true
  name:
    description: Display name; for O(mode=create) also the name the plugin gives the volume. Defaults to O(id).
    type: str
  plugin_id:
    description: The CSI plugin ID. Required unless O(state=absent) or O(state=deleted).
    type: str
  mode:
    description: V(create) has the plugin make the volume; V(register) records an existing one.
    type: str
    choices: [create, register]
    default: create
  external_id:
    description: The storage's own ID of the volume. Required with O(mode=register).
    type: str
  capacity_min:
    description: Least capacity, as bytes or with a unit (C(1G), C(512MiB)). O(mode=create) only.
    type: str
  capacity_max:
    description: Greatest capacity, as bytes or with a unit. O(mode=create) only.
    type: str
  capabilities:
    description: Access and attachment modes jobs may claim the volume with.
    type: list
    elements: dict
    default: [{access_mode: single-node-writer, attachment_mode: file-system}]
    suboptions:
      access_mode:
        description: CSI access mode.
        type: str
        required: true
        choices: [single-node-reader-only, single-node-writer, multi-node-reader-only,
                  multi-node-single-writer, multi-node-multi-writer]
      attachment_mode:
        description: CSI attachment mode.
        type: str
        required: true
        choices: [file-system, block-device]
  fs_type:
    description: File system type for the mount; empty leaves it to the plugin.
    type: str
    default: ""
  mount_flags:
    description: Mount flags. Write-only, see the description.
    type: list
    elements: str
    default: []
  parameters:
    description: Plugin parameters.
    type: dict
    default: {}
  context:
    description: Plugin context, for O(mode=register).
    type: dict
    default: {}
  secrets:
    description: Secrets passed to the plugin. Write-only and never logged.
    type: dict
    default: {}
  state:
    description:
      - V(present) creates or registers the volume.
      - V(absent) deregisters it and keeps the data.
      - V(deleted) has the plugin destroy the volume and its data.
    type: str
    choices: [present, absent, deleted]
    default: present
  force:
    description: With O(state=absent), deregister even if allocations still claim the volume.
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: A 1 GiB ZFS-backed volume, created by democratic-csi under the delegated parent
  nomad_zfs.csi.nomad_csi_volume:
    id: pgdata
    plugin_id: zfs
    capacity_min: 1G
    capacity_max: 1G
    capabilities:
      - access_mode: single-node-writer
        attachment_mode: file-system

- name: Forget the volume in Nomad, keep its dataset
  nomad_zfs.csi.nomad_csi_volume:
    id: pgdata
    state: absent
'''

RETURN = r'''
volume:
  description: The volume as Nomad reports it after the task, without secrets.
  returned: when the volume exists after the task
  type: dict
  sample: {"id": "pgdata", "name": "pgdata", "plugin_id": "zfs", "external_id": "tank/nomad/csi/pgdata",
           "capacity": 1073741824, "schedulable": true,
           "capabilities": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}]}
changed_fields:
  description: Fields that differed from the request and were (or in check mode would be) written.
  returned: always
  type: list
  elements: str
  sample: [capabilities]
'''

import re
import time

from ansible_collections.nomad_zfs.csi.plugins.module_utils.nomad_client import NomadError, NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils.zfs_props import PropertyError, parse_size

# Nomad's rule for volume IDs.
ID_RE = re.compile(r'^[a-zA-Z0-9_.-]{1,128}$')


def requested(p, capacity):
    """The API body for one volume, secrets included."""
    vol = {
        'ID': p['id'], 'Name': p['name'] or p['id'], 'PluginID': p['plugin_id'],
        'RequestedCapabilities': [{'AccessMode': c['access_mode'], 'AttachmentMode': c['attachment_mode']}
                                  for c in p['capabilities']],
        'MountOptions': {'FSType': p['fs_type'], 'MountFlags': p['mount_flags']},
        'Parameters': p['parameters'], 'Secrets': p['secrets'],
    }
    if p['mode'] == 'register':
        vol.update(ExternalID=p['external_id'], Context=p['context'])
    else:
        vol.update(RequestedCapacityMin=capacity[0], RequestedCapacityMax=capacity[1])
    return vol


def comparable(vol, mode):
    """The fields the module owns, from a request or from Nomad's read."""
    caps = sorted((c.get('AccessMode'), c.get('AttachmentMode')) for c in vol.get('RequestedCapabilities') or [])
    fields = dict(name=vol.get('Name'), plugin_id=vol.get('PluginID'), capabilities=caps,
                  fs_type=(vol.get('MountOptions') or {}).get('FSType') or '',
                  parameters=vol.get('Parameters') or {})
    if mode == 'register':
        fields.update(external_id=vol.get('ExternalID'), context=vol.get('Context') or {})
    else:
        fields.update(capacity_min=vol.get('RequestedCapacityMin') or 0, capacity_max=vol.get('RequestedCapacityMax') or 0)
    return fields


def public(vol):
    return dict(
        id=vol['ID'], name=vol.get('Name'), namespace=vol.get('Namespace'), plugin_id=vol.get('PluginID'),
        external_id=vol.get('ExternalID'), capacity=vol.get('Capacity'), schedulable=vol.get('Schedulable'),
        capabilities=[dict(access_mode=c['AccessMode'], attachment_mode=c['AttachmentMode'])
                      for c in vol.get('RequestedCapabilities') or []],
        fs_type=(vol.get('MountOptions') or {}).get('FSType') or '', parameters=vol.get('Parameters') or {},
        context=vol.get('Context') or {},
        claims=len(vol.get('ReadAllocs') or {}) + len(vol.get('WriteAllocs') or {}))


# Seen once in CI on a fresh dev agent: the plugin read healthy, then the create got a 500
# "plugin has no controller". Nomad refuses before calling the plugin, so a retry is safe;
# only volume creation gets this answer, so every write can go through here.
NO_CONTROLLER = 'plugin has no controller'
NO_CONTROLLER_RETRY_SECONDS = 30


def put_retrying_no_controller(client, endpoint, body, seconds=NO_CONTROLLER_RETRY_SECONDS, pause=2):
    deadline = time.time() + seconds
    while True:
        try:
            return client.put(endpoint, body)
        except NomadError as e:
            if NO_CONTROLLER not in str(e) or time.time() + pause > deadline:
                raise
            time.sleep(pause)


def check_input(module):
    p = module.params
    if not ID_RE.match(p['id']):
        module.fail_json(msg='id %r is not a Nomad volume ID; use up to 128 letters, digits, "-", "_" or ".".'
                             % p['id'])
    if p['state'] != 'present':
        return (0, 0)
    if not p['plugin_id']:
        module.fail_json(msg='plugin_id is required with state=present; give the CSI plugin ID, e.g. zfs.')
    if p['mode'] == 'register' and not p['external_id']:
        module.fail_json(msg='external_id is required with mode=register; give the storage ID of the volume.')
    if p['mode'] == 'create' and (p['external_id'] or p['context']):
        module.fail_json(msg='external_id and context are for mode=register; the plugin chooses them with mode=create.')
    if p['mode'] == 'register' and (p['capacity_min'] or p['capacity_max']):
        module.fail_json(msg='capacity_min and capacity_max are for mode=create; a registered volume has its size.')
    capacity = []
    for field in ('capacity_min', 'capacity_max'):
        try:
            capacity.append(parse_size(p[field]) if p[field] else 0)
        except PropertyError as e:
            module.fail_json(msg='%s: %s' % (field, e))
    if capacity[1] and capacity[0] > capacity[1]:
        module.fail_json(msg='capacity_min (%s) is above capacity_max (%s); swap or raise capacity_max.'
                             % (p['capacity_min'], p['capacity_max']))
    if not p['capabilities']:
        module.fail_json(msg='capabilities is empty; give at least one access_mode/attachment_mode pair.')
    return tuple(capacity)


def main():
    module = NomadModule(
        argument_spec=dict(
            id=dict(type='str', required=True),
            name=dict(type='str'),
            plugin_id=dict(type='str'),
            mode=dict(type='str', choices=['create', 'register'], default='create'),
            external_id=dict(type='str'),
            capacity_min=dict(type='str'),
            capacity_max=dict(type='str'),
            capabilities=dict(type='list', elements='dict', default=[
                dict(access_mode='single-node-writer', attachment_mode='file-system')], options=dict(
                access_mode=dict(type='str', required=True, choices=[
                    'single-node-reader-only', 'single-node-writer', 'multi-node-reader-only',
                    'multi-node-single-writer', 'multi-node-multi-writer']),
                attachment_mode=dict(type='str', required=True, choices=['file-system', 'block-device']))),
            fs_type=dict(type='str', default=''),
            mount_flags=dict(type='list', elements='str', default=[], no_log=False),
            parameters=dict(type='dict', default={}),
            context=dict(type='dict', default={}),
            secrets=dict(type='dict', default={}, no_log=True),
            state=dict(type='str', choices=['present', 'absent', 'deleted'], default='present'),
            force=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    p, client = module.params, module.client
    capacity = check_input(module)
    path = 'volume/csi/' + p['id']
    result = dict(changed=False, changed_fields=[])
    try:
        current = client.get(path, missing_ok=True)
        if p['state'] != 'present':
            result['changed'] = current is not None
            if current and not module.check_mode:
                if p['state'] == 'deleted':
                    # Secrets travel in a header, never in the URL that proxies log.
                    secrets = ','.join('%s=%s' % kv for kv in sorted(p['secrets'].items()))
                    client.delete(path + '/delete', headers={'X-Nomad-CSI-Secrets': secrets} if secrets else None)
                else:
                    client.delete(path, params={'force': str(p['force']).lower()})
            if module._diff:
                result['diff'] = dict(before='volume %s: %s\n' % (p['id'], 'present' if current else 'absent'),
                                      after='volume %s: absent%s\n' % (
                                          p['id'], ', data destroyed' if p['state'] == 'deleted' and current else ''))
            module.exit_json(**result)

        want = requested(p, capacity)
        desired = comparable(want, p['mode'])
        if current:
            have = comparable(current, p['mode'])
            if current.get('PluginID') != p['plugin_id']:
                module.fail_json(msg='volume %s belongs to plugin %s, not %s; a volume cannot move between plugins. '
                                     'Use another id, or remove it first (state=absent keeps the data).'
                                     % (p['id'], current.get('PluginID'), p['plugin_id']))
            if p['mode'] == 'register' and current.get('ExternalID') != p['external_id']:
                module.fail_json(msg='volume %s is registered with external_id %s, not %s; deregister it first '
                                     '(state=absent) to point it at other storage.'
                                     % (p['id'], current.get('ExternalID'), p['external_id']))
            result['changed_fields'] = sorted(k for k in desired if desired[k] != have.get(k))
        else:
            have = {}
            result['changed_fields'] = sorted(desired)
        result['changed'] = bool(result['changed_fields'])
        if module._diff:
            result['diff'] = dict(before=dict((k, have.get(k)) for k in result['changed_fields']),
                                  after=dict((k, desired[k]) for k in result['changed_fields']),
                                  before_header='volume %s' % p['id'], after_header='volume %s' % p['id'])
        if result['changed'] and not module.check_mode:
            # Nomad updates an existing volume through the same endpoint that made it.
            endpoint = path + '/create' if p['mode'] == 'create' else path
            put_retrying_no_controller(client, endpoint, {'Volumes': [want]})
            current = client.get(path)
        if current:
            result['volume'] = public(current)
    except NomadError as e:
        module.fail_json(msg=str(e), changed_fields=result['changed_fields'])
    module.exit_json(**result)


if __name__ == '__main__':
    main()
