#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
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
  - Every write retries for up to 120 seconds while Nomad answers V(plugin has no controller) (for a
    while after a plugin turns healthy) or the plugin answers gRPC V(Aborted) (an operation on the
    volume is still in progress, for example the node unstaging it for an allocation that just stopped).
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
    description:
      - Greatest capacity, as bytes or with a unit. O(mode=create) only.
      - Raising the capacity of an existing volume has Nomad expand it (for democratic-csi's ZFS drivers,
        C(refquota) or C(volsize) follows). A volume cannot shrink, so a O(capacity_max) below its current
        capacity fails and changes nothing.
    type: str
  snapshot_id:
    description:
      - Create the volume from this snapshot, as M(nomad_zfs.csi.nomad_csi_volume_info) or Nomad's snapshot
        list names it. O(mode=create) only, and only when the volume is created.
    type: str
  clone_id:
    description: Create the volume as a clone of this volume's external ID. O(mode=create) only, and only when created.
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
"""

EXAMPLES = r"""
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
"""

RETURN = r"""
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
"""

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._csi_volume_plan import capabilities_of, plan_volume
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import NomadError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._poll import poll_until
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_props import PropertyError, parse_size

# Nomad's rule for volume IDs.
ID_RE = re.compile(r'^[a-zA-Z0-9_.-]{1,128}$')
# Answers after which the same write succeeds a little later, so every write retries them for up to
# RETRY_SECONDS:
# - Nomad's 500 "plugin has no controller", seen in CI on a fresh dev agent right after the plugin
#   read healthy (once for more than 30 s on a busy emulated VM); Nomad refuses before calling the plugin.
# - The plugin's gRPC Aborted, which CSI defines as "an operation is pending for this volume, retry":
#   democratic-csi answers it to a DeleteVolume that arrives while the node still unstages the volume
#   for an allocation that just stopped.
NO_CONTROLLER = 'plugin has no controller'
ABORTED = 'code = Aborted'
RETRY_SECONDS = 120


def public(vol):
    return dict(
        id=vol['ID'],
        name=vol.get('Name'),
        namespace=vol.get('Namespace'),
        plugin_id=vol.get('PluginID'),
        external_id=vol.get('ExternalID'),
        capacity=vol.get('Capacity'),
        schedulable=vol.get('Schedulable'),
        capabilities=capabilities_of(vol),
        fs_type=(vol.get('MountOptions') or {}).get('FSType') or '',
        parameters=vol.get('Parameters') or {},
        context=vol.get('Context') or {},
        claims=len(vol.get('ReadAllocs') or {}) + len(vol.get('WriteAllocs') or {}),
    )


def worth_retrying(error):
    return error.status == 500 and (error.nomad_error.endswith(NO_CONTROLLER) or ABORTED in error.nomad_error)


def call_retrying(call, seconds=None, pause=2):
    """call(), again while Nomad answers worth_retrying; the last answer or error."""

    def attempt():
        try:
            return call()
        except NomadError as e:
            if not worth_retrying(e):
                raise
            return e

    seconds = RETRY_SECONDS if seconds is None else seconds
    answer, done = poll_until(attempt, lambda a: not isinstance(a, NomadError), seconds, pause=pause)
    if not done:
        raise answer
    return answer


def check_input(module):
    p = module.params
    if not ID_RE.match(p['id']):
        module.fail_json(
            msg='id %r is not a Nomad volume ID; use up to 128 letters, digits, "-", "_" or ".".' % p['id']
        )
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
    if p['mode'] == 'register' and (p['snapshot_id'] or p['clone_id']):
        module.fail_json(msg='snapshot_id and clone_id are for mode=create; a registered volume exists already.')
    capacity = []
    for field in ('capacity_min', 'capacity_max'):
        try:
            capacity.append(parse_size(p[field]) if p[field] else 0)
        except PropertyError as e:
            module.fail_json(msg='%s: %s' % (field, e))
    if capacity[1] and capacity[0] > capacity[1]:
        module.fail_json(
            msg='capacity_min (%s) is above capacity_max (%s); swap or raise capacity_max.'
            % (p['capacity_min'], p['capacity_max'])
        )
    if not p['capabilities']:
        module.fail_json(msg='capabilities is empty; give at least one access_mode/attachment_mode pair.')
    return tuple(capacity)


def converge(module, capacity):
    """Read the volume, plan, apply unless in check mode; the module's result."""
    p, client = module.params, module.client
    path = 'volume/csi/' + p['id']
    current = client.get(path, missing_ok=True)
    plan = plan_volume(p, capacity, current)
    result = dict(changed=bool(plan.steps), changed_fields=plan.changed_fields)
    if module._diff:
        result['diff'] = dict(before=plan.before, after=plan.after)
        if p['state'] == 'present':
            result['diff'].update(before_header='volume %s' % p['id'], after_header='volume %s' % p['id'])
    if plan.steps and not module.check_mode:
        for method, endpoint, kwargs in plan.steps:
            call = getattr(client, method)
            call_retrying(lambda call=call, endpoint=endpoint, kwargs=kwargs: call(endpoint, **kwargs))
        if p['state'] == 'present':
            current = client.get(path)
    if current and p['state'] == 'present':
        result['volume'] = public(current)
    return result


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
            snapshot_id=dict(type='str'),
            clone_id=dict(type='str'),
            capabilities=dict(
                type='list',
                elements='dict',
                default=[dict(access_mode='single-node-writer', attachment_mode='file-system')],
                options=dict(
                    access_mode=dict(
                        type='str',
                        required=True,
                        choices=[
                            'single-node-reader-only',
                            'single-node-writer',
                            'multi-node-reader-only',
                            'multi-node-single-writer',
                            'multi-node-multi-writer',
                        ],
                    ),
                    attachment_mode=dict(type='str', required=True, choices=['file-system', 'block-device']),
                ),
            ),
            fs_type=dict(type='str', default=''),
            mount_flags=dict(type='list', elements='str', default=[], no_log=False),
            parameters=dict(type='dict', default={}),
            context=dict(type='dict', default={}),
            secrets=dict(type='dict', default={}, no_log=True),
            state=dict(type='str', choices=['present', 'absent', 'deleted'], default='present'),
            force=dict(type='bool', default=False),
        ),
        mutually_exclusive=[('snapshot_id', 'clone_id')],
        supports_check_mode=True,
    )
    capacity = check_input(module)
    module.exit_json(**module.run(lambda: converge(module, capacity), changed_fields=[]))


if __name__ == '__main__':
    main()
