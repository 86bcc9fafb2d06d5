#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_csi_volume
short_description: Create or register Nomad CSI volumes, or remove them
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
  - O(state=deleted) is refused, with nothing changed, while allocations claim the volume, because Nomad has the
    plugin destroy the data before it looks at the claims, and then refuses to deregister a volume in use.
    Claims of allocations that stopped are freed by Nomad within seconds; the module waits up to 120
    seconds for that (in check mode too) before it decides.
  - O(secrets) and O(mount_flags) are write-only (Nomad redacts them when read), so they are
    sent whenever the volume is written but never compared.
  - O(volumes) or O(spec_file) converge many volumes in one task. Each item takes this module's own
    options for one volume, and every item is checked before Nomad is called, so a bad item changes
    nothing. Nomad is asked for its list of volumes once; then each listed volume that is to stay is read,
    and only what differs is written. A second run costs one list call, those reads, and no write.
  - Every write retries for up to 300 seconds while Nomad answers V(plugin has no controller) (for a
    while after a plugin turns healthy) or the plugin answers gRPC V(Aborted) (an operation on the
    volume is still in progress, for example the node unstaging it for an allocation that just stopped)
    or V(Unavailable) (the controller is restarting, for example while its job is updated). A delete
    also retries while the storage host finds the dataset busy (V(dataset is busy)), as it may for a
    minute after the volume's last workload stopped.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
  - nomad_zfs.csi.nomad
options:
  id:
    description:
      - The volume ID that jobs claim, for example C(pgdata). One of O(id), O(volumes) and O(spec_file) is required.
      - democratic-csi takes only IDs (names, for O(mode=create)) matching V(^[a-z0-9][a-z0-9_-]*$), so Nomad's
        C(per_alloc) names such as V(web[0]) need the zfs_csi pack's C(volume_id_hash).
    type: str
  volumes:
    description:
      - Many volumes, each a dictionary of this module's options for one volume, which is then required to have
        O(volumes[].id). O(plugin_id) is the default for items that do not give one; the other options for one
        volume cannot be given beside O(volumes).
      - Each item's O(volumes[].secrets) are no_log, as O(secrets) is.
    type: list
    elements: dict
    suboptions:
      id:
        description: As O(id).
        type: str
        required: true
      name:
        description: As O(name).
        type: str
      plugin_id:
        description: As O(plugin_id); defaults to the task's O(plugin_id).
        type: str
      mode:
        description: As O(mode).
        type: str
        choices: [create, register]
        default: create
      external_id:
        description: As O(external_id).
        type: str
      capacity_min:
        description: As O(capacity_min).
        type: str
      capacity_max:
        description: As O(capacity_max).
        type: str
      snapshot_id:
        description: As O(snapshot_id).
        type: str
      clone_id:
        description: As O(clone_id).
        type: str
      capabilities:
        description: As O(capabilities).
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
      topology:
        description: As O(topology).
        type: dict
        suboptions:
          required:
            description: As O(topology.required).
            type: list
            elements: dict
            default: []
          preferred:
            description: As O(topology.preferred).
            type: list
            elements: dict
            default: []
      fs_type:
        description: As O(fs_type).
        type: str
        default: ""
      mount_flags:
        description: As O(mount_flags).
        type: list
        elements: str
        default: []
      parameters:
        description: As O(parameters).
        type: dict
        default: {}
      context:
        description: As O(context).
        type: dict
        default: {}
      secrets:
        description: As O(secrets); never logged.
        type: dict
        default: {}
      state:
        description: As O(state).
        type: str
        choices: [present, absent, deleted]
        default: present
      force:
        description: As O(force).
        type: bool
        default: false
  spec_file:
    description:
      - A JSON file of volumes, converged like O(volumes). Either the C(volumes.json) that C(nomad-pack render)
        writes for the zfs_csi pack (an object with C(plugin_id), optionally C(namespace), and C(volumes), a list
        in the shape of O(volumes)), or Nomad's API form (an object with a C(Volumes) list, as
        C(PUT /v1/volume/csi/:id/create) takes it; a volume with an C(ExternalID) is registered, any other created).
      - A namespace in the file must be O(namespace).
    type: path
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
  topology:
    description:
      - Where the volume may be used, as CSI topology segments; Nomad places a claiming allocation only on a node
        whose plugin reports a matching segment.
      - With O(mode=register), O(topology.required) becomes the volume's topology. With O(mode=create), Nomad
        passes both lists to the plugin, and the volume's topology is what the plugin answers; democratic-csi's
        zfs-local drivers answer the node that created the volume, under the key
        C(org.democratic-csi.topology/node).
      - Nomad keeps a volume's first topology request, so a different one for an existing volume fails and
        changes nothing. Left out, an update keeps the volume's own.
    type: dict
    suboptions:
      required:
        description: Segments, each a mapping of key to value; the volume is usable where any one matches.
        type: list
        elements: dict
        default: []
      preferred:
        description: Segments the plugin should prefer when it creates the volume.
        type: list
        elements: dict
        default: []
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
  timeout:
    description:
      - Seconds to wait for each HTTP call.
      - Longer than other modules' 10, because Nomad answers a create or delete only once the CSI plugin has
        made or destroyed the storage.
    type: int
    default: 120
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

- name: Every volume the pack rendered (nomad-pack render packs/zfs_csi -f vars.hcl -o out)
  nomad_zfs.csi.nomad_csi_volume:
    spec_file: out/zfs_csi/volumes.json

- name: Many volumes in one task
  nomad_zfs.csi.nomad_csi_volume:
    plugin_id: zfs
    volumes:
      - id: web-0
        capacity_min: 1G
      - id: web-1
        capacity_min: 1G
      - id: old-cache
        state: deleted

- name: A dataset that exists on node storage-1's pool, registered for the zfs-local plugin there only
  nomad_zfs.csi.nomad_csi_volume:
    id: scratch
    plugin_id: zfs-local
    mode: register
    external_id: scratch
    topology:
      required:
        - org.democratic-csi.topology/node: storage-1

- name: Forget the volume in Nomad, keep its dataset
  nomad_zfs.csi.nomad_csi_volume:
    id: pgdata
    state: absent
"""

RETURN = r"""
volume:
  description: The volume as Nomad reports it after the task, without secrets.
  returned: with O(id), when the volume exists after the task
  type: dict
  sample: {"id": "pgdata", "name": "pgdata", "plugin_id": "zfs", "external_id": "pgdata",
           "capacity": 1073741824, "schedulable": true, "topologies": [],
           "capabilities": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}]}
changed_fields:
  description:
    - Fields that differed from the request and were (or in check mode would be) written.
    - With many volumes, the fields that differed in any of them.
  returned: always
  type: list
  elements: str
  sample: [capabilities]
volumes:
  description: With O(volumes) or O(spec_file), one result per volume, in the given order.
  returned: with O(volumes) or O(spec_file)
  type: list
  elements: dict
  contains:
    id:
      description: The volume ID.
      type: str
      sample: pgdata
    changed:
      description: Whether the volume was (or in check mode would be) written.
      type: bool
      sample: false
    changed_fields:
      description: Its fields that differed.
      type: list
      elements: str
      sample: []
    volume:
      description: The volume as Nomad reports it after the task, as RV(volume); absent when it does not exist.
      type: dict
      sample: {"id": "pgdata", "capacity": 1073741824}
"""

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._bulk import (
    bulk_result,
    read_json,
    refuse_single_options,
    validated_items,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._csi_retry import csi_write_retryable
from ansible_collections.nomad_zfs.csi.plugins.module_utils._csi_volume_plan import (
    RELEASE_SECONDS,
    being_released,
    capabilities_of,
    items_from_spec,
    plan_volume,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import CSI_CALL_TIMEOUT, NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._poll import poll_until
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_props import PropertyError, parse_size

# Nomad's rule for volume IDs.
ID_RE = re.compile(r'^[a-zA-Z0-9_.-]{1,128}$')


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
        topologies=[dict(t.get('Segments') or {}) for t in vol.get('Topologies') or [] if t],
        fs_type=(vol.get('MountOptions') or {}).get('FSType') or '',
        parameters=vol.get('Parameters') or {},
        context=vol.get('Context') or {},
        claims=len(vol.get('ReadAllocs') or {}) + len(vol.get('WriteAllocs') or {}),
    )


def check_volume(p, where=''):
    """The requested (capacity_min, capacity_max) in bytes; PlanError naming the field (after where) and the fix."""
    if not ID_RE.match(p['id'] or ''):
        raise PlanError(
            '%sid %r is not a Nomad volume ID; use up to 128 letters, digits, "-", "_" or ".".' % (where, p['id'])
        )
    if p['state'] != 'present':
        return (0, 0)
    refusals = [
        (not p['plugin_id'], 'plugin_id is required with state=present; give the CSI plugin ID, e.g. zfs.'),
        (
            p['mode'] == 'register' and not p['external_id'],
            'external_id is required with mode=register; give the storage ID of the volume.',
        ),
        (
            p['mode'] == 'create' and (p['external_id'] or p['context']),
            'external_id and context are for mode=register; the plugin chooses them with mode=create.',
        ),
        (
            p['mode'] == 'register' and (p['capacity_min'] or p['capacity_max']),
            'capacity_min and capacity_max are for mode=create; a registered volume has its size.',
        ),
        (
            p['mode'] == 'register' and (p['snapshot_id'] or p['clone_id']),
            'snapshot_id and clone_id are for mode=create; a registered volume exists already.',
        ),
        (p['snapshot_id'] and p['clone_id'], 'snapshot_id and clone_id are mutually exclusive; give one source.'),
        (not p['capabilities'], 'capabilities is empty; give at least one access_mode/attachment_mode pair.'),
    ]
    for refused, why in refusals:
        if refused:
            raise PlanError(where + why)
    for key, segments_list in sorted((p.get('topology') or {}).items()):
        for i, segments in enumerate(segments_list or []):
            if not segments or not all(isinstance(v, str) and v for v in segments.values()):
                raise PlanError(
                    '%stopology.%s[%d] is %r; give each segment as key: "value" strings, e.g. '
                    'org.democratic-csi.topology/node: NODE_NAME.' % (where, key, i, segments)
                )
    capacity = []
    for field in ('capacity_min', 'capacity_max'):
        try:
            capacity.append(parse_size(p[field]) if p[field] else 0)
        except PropertyError as e:
            raise PlanError('%s%s: %s' % (where, field, e))
    if capacity[1] and capacity[0] > capacity[1]:
        raise PlanError(
            '%scapacity_min (%s) is above capacity_max (%s); swap or raise capacity_max.'
            % (where, p['capacity_min'], p['capacity_max'])
        )
    return tuple(capacity)


def released(client, path, current):
    """The volume to delete once Nomad freed the claims of allocations that stopped, or after RELEASE_SECONDS.

    Read-only, so check mode waits too and predicts what a run would do.
    """
    if not being_released(current):
        return current
    current, _freed = poll_until(
        lambda: client.get(path, missing_ok=True), lambda vol: not being_released(vol), RELEASE_SECONDS
    )
    return current


def converge(module, capacity):
    """One volume: read it, plan, apply unless in check mode; the module's result."""
    p, client = module.params, module.client
    path = 'volume/csi/' + p['id']
    current = client.get(path, missing_ok=True)
    if p['state'] == 'deleted':
        current = released(client, path, current)
    plan = plan_volume(p, capacity, current)
    result = dict(changed=bool(plan.steps), changed_fields=plan.changed_fields)
    if module._diff:
        result['diff'] = dict(before=plan.before, after=plan.after)
        if p['state'] == 'present':
            result['diff'].update(before_header='volume %s' % p['id'], after_header='volume %s' % p['id'])
    if module.apply(plan.steps, retry=csi_write_retryable) and p['state'] == 'present':
        current = client.get(path)
    if current and p['state'] == 'present':
        result['volume'] = public(current)
    return result


def bulk_items(module):
    """Every item of volumes or spec_file, validated as the single form's options, with their capacities.

    All are checked before Nomad is called, so a bad item changes nothing.
    """
    p = module.params
    refuse_single_options(p, VOLUME_OPTIONS, 'id', shared=('plugin_id',))
    if p['volumes'] is not None:
        raw = [('volumes[%d].' % i, item) for i, item in enumerate(p['volumes'])]
    else:
        raw = read_spec_file(p['spec_file'], p['namespace'])
    checked = []
    for label, item in validated_items(raw, VOLUME_OPTIONS, 'id', module.no_log_values):
        item.update(plugin_id=item['plugin_id'] or p['plugin_id'], namespace=p['namespace'])
        checked.append((item, check_volume(item, label)))
    return checked


def read_spec_file(path, namespace):
    """The volumes of a JSON file that the zfs_csi pack renders (or in Nomad's API form), as [(label, item)]."""
    try:
        raw = items_from_spec(read_json(path, 'volumes'), namespace)
    except ValueError as e:
        raise PlanError('spec_file %s: %s; give the volumes JSON that the zfs_csi pack renders.' % (path, e))
    return [('spec_file %s: volumes[%d].' % (path, i), item) for i, item in enumerate(raw)]


def converge_many(module):
    """Many volumes: one list call, a read of each listed volume that is to be present, then the writes."""
    client = module.client
    items = bulk_items(module)
    listed = set(v['ID'] for v in client.get('volumes', params={'type': 'csi'}) or [])
    plans = []
    for item, capacity in items:
        path = 'volume/csi/' + item['id']
        current = None
        if item['id'] in listed:
            # The list shows no capacity, capabilities, parameters or claims; deregistering needs only to know
            # the volume exists.
            current = client.get(path, missing_ok=True) if item['state'] != 'absent' else {'ID': item['id']}
        if item['state'] == 'deleted':
            current = released(client, path, current)
        plans.append((item, current, plan_volume(item, capacity, current)))
    entries = []
    for item, current, plan in plans:
        if module.apply(plan.steps, retry=csi_write_retryable):
            current = client.get('volume/csi/' + item['id']) if item['state'] == 'present' else None
        entry = dict(id=item['id'], changed=bool(plan.steps), changed_fields=plan.changed_fields)
        if current and item['state'] == 'present':
            entry['volume'] = public(current)
        entries.append((item['id'], entry, plan))
    return bulk_result(entries, module._diff)


VOLUME_OPTIONS = dict(
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
    topology=dict(
        type='dict',
        options=dict(
            required=dict(type='list', elements='dict', default=[]),
            preferred=dict(type='list', elements='dict', default=[]),
        ),
    ),
    fs_type=dict(type='str', default=''),
    mount_flags=dict(type='list', elements='str', default=[], no_log=False),
    parameters=dict(type='dict', default={}),
    context=dict(type='dict', default={}),
    secrets=dict(type='dict', default={}, no_log=True),
    state=dict(type='str', choices=['present', 'absent', 'deleted'], default='present'),
    force=dict(type='bool', default=False),
)


def main():
    single = dict(VOLUME_OPTIONS, id=dict(type='str'))
    module = NomadModule(
        argument_spec=dict(
            single,
            # options=, so that AnsibleModule knows the items' secrets are no_log before it logs its invocation.
            volumes=dict(type='list', elements='dict', options=VOLUME_OPTIONS),
            spec_file=dict(type='path'),
            timeout=dict(type='int', default=CSI_CALL_TIMEOUT),
        ),
        required_one_of=[('id', 'volumes', 'spec_file')],
        mutually_exclusive=[('id', 'volumes', 'spec_file')],
        supports_check_mode=True,
    )
    if module.params['id'] is None:
        module.exit_json(**module.run(lambda: converge_many(module), changed_fields=[], volumes=[]))
    capacity = module.run(lambda: check_volume(module.params), changed_fields=[])
    module.exit_json(**module.run(lambda: converge(module, capacity), changed_fields=[]))


if __name__ == '__main__':
    main()
