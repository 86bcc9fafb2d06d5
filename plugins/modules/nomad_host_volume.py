#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_host_volume
short_description: Create or register Nomad dynamic host volumes, or delete them
version_added: 0.1.0
description:
  - A dynamic host volume lives on one Nomad client and needs no CSI plugin, controller or container engine.
  - With O(mode=create), Nomad places the volume on a client and runs the host volume plugin O(plugin_id) there; the
    collection's C(zfs-dataset) plugin (role C(nomad_zfs.csi.host_volume_plugin)) makes a quota'd ZFS dataset under
    the delegated parent. With O(mode=register), Nomad records a directory that exists on node O(node_id).
  - The volume is found by O(name) in O(namespace); names are unique per node, so a name on several nodes needs
    O(node_id).
  - An existing volume is left alone when its capacity, capabilities and parameters (and plugin or host path) match;
    otherwise Nomad updates it, which runs the plugin's create again. Nomad refuses to update a volume that an
    allocation uses. Its node, node pool and plugin cannot change, and it cannot shrink; the module says so and
    changes nothing.
  - O(state=deleted) has Nomad run the plugin's delete, which destroys the data of a created volume. For
    C(zfs-dataset) that is the dataset, refused while it has snapshots unless its parameters say
    C(delete_snapshots=true), and kept when it is marked as moved to another node. A registered volume's directory
    is left alone.
  - The sticky claims on a deleted volume go with it. Nomad keeps them otherwise, and a job group with such a claim
    is never placed again, not even on a new volume of the same name.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
  - nomad_zfs.csi.nomad
options:
  name:
    description:
      - The volume name that jobs ask for in their C(volume) block (C(type = "host")).
      - One of O(name), O(volumes) and O(spec_file) is required.
    type: str
  volumes:
    description:
      - Many volumes, each a dictionary of this module's options for one volume, which is then required to have
        O(volumes[].name). The options for one volume cannot be given beside O(volumes).
      - Every item is checked before Nomad is called, and every item is planned before the first write, so a bad
        item, or one that Nomad's state refuses (a change that cannot be made), changes nothing. Nomad is asked for
        its list of host volumes once; each listed volume that is to stay is read, and only what differs is written.
      - A name may be given once per O(volumes[].node_id), so one name can be declared on several nodes.
    type: list
    elements: dict
    suboptions:
      name:
        description: As O(name).
        type: str
        required: true
      mode:
        description: As O(mode).
        type: str
        choices: [create, register]
        default: create
      plugin_id:
        description: As O(plugin_id).
        type: str
        default: zfs-dataset
      host_path:
        description: As O(host_path).
        type: str
      node_id:
        description: As O(node_id).
        type: str
      node_pool:
        description: As O(node_pool).
        type: str
      capacity_min:
        description: As O(capacity_min).
        type: str
      capacity_max:
        description: As O(capacity_max).
        type: str
      capabilities:
        description: As O(capabilities).
        type: list
        elements: dict
        default: [{access_mode: single-node-writer, attachment_mode: file-system}]
        suboptions:
          access_mode:
            description: Access mode.
            type: str
            required: true
            choices: [single-node-reader-only, single-node-writer, single-node-single-writer, single-node-multi-writer]
          attachment_mode:
            description: Attachment mode.
            type: str
            required: true
            choices: [file-system, block-device]
      parameters:
        description: As O(parameters).
        type: dict
        default: {}
      state:
        description: As O(state).
        type: str
        choices: [present, deleted]
        default: present
      force:
        description: As O(force).
        type: bool
        default: false
  spec_file:
    description:
      - A JSON file of volumes, converged like O(volumes), as the zfs_csi pack's C(host_volumes.json) holds them (an
        object with optionally C(namespace), and C(volumes), a list in the shape of O(volumes)).
      - A namespace in the file must be O(namespace).
    type: path
  mode:
    description: V(create) has the plugin make the volume; V(register) records an existing directory.
    type: str
    choices: [create, register]
    default: create
  plugin_id:
    description:
      - The host volume plugin, for O(mode=create). V(zfs-dataset) is the collection's ZFS plugin; V(mkdir) is the
        one built into Nomad.
    type: str
    default: zfs-dataset
  host_path:
    description: The directory on the node, for O(mode=register); required there.
    type: str
  node_id:
    description:
      - The node the volume is on. Required with O(mode=register); with O(mode=create), Nomad places the volume
        on a node of O(node_pool) whose plugin matches when it is left out.
    type: str
  node_pool:
    description: The node pool to place a created volume in.
    type: str
  node_free_bytes:
    description:
      - Each candidate node's free bytes under the host volume plugin's parent, by node name or ID, for example from
        M(nomad_zfs.csi.zfs_info)'s C(available) of that parent, read on each node just before. A new volume with
        O(mode=create) and no O(node_id) then goes to the candidate with the most free bytes that can hold its
        O(capacity_max) (or O(capacity_min)) and that Nomad could place it on (ready, eligible, not draining, in
        O(node_pool) when given); the module sets its O(node_id) to that node.
      - When no candidate can hold it, the module fails before anything is made, naming each candidate's free
        bytes or why Nomad could not use it.
      - Nomad itself places a volume on the first feasible node, with no look at free space. An existing volume
        stays where it is.
      - With O(volumes) or O(spec_file), it applies to every item; each placed volume's capacity counts against its
        node's figure for the items after it.
    type: dict
    version_added: 0.2.0
  capacity_min:
    description: Least capacity, as bytes or with a unit (C(1G), C(512MiB)). C(zfs-dataset) sets C(refquota) to
      O(capacity_max), or to this when there is no maximum.
    type: str
  capacity_max:
    description:
      - Greatest capacity, as bytes or with a unit.
      - Raising it has Nomad run the plugin's create again, which raises C(refquota). A volume cannot shrink, so a
        O(capacity_max) below its current capacity fails and changes nothing.
    type: str
  capabilities:
    description: Access and attachment modes jobs may use the volume with.
    type: list
    elements: dict
    default: [{access_mode: single-node-writer, attachment_mode: file-system}]
    suboptions:
      access_mode:
        description: Access mode.
        type: str
        required: true
        choices: [single-node-reader-only, single-node-writer, single-node-single-writer, single-node-multi-writer]
      attachment_mode:
        description: Attachment mode.
        type: str
        required: true
        choices: [file-system, block-device]
  parameters:
    description:
      - Parameters passed to the plugin as strings.
      - C(zfs-dataset) takes C(compression), C(recordsize), C(atime) and C(com.sun:auto-snapshot) as dataset
        properties, and C(delete_snapshots); it refuses any other.
    type: dict
    default: {}
  state:
    description:
      - V(present) creates, registers or updates the volume.
      - V(deleted) has Nomad delete it, running the plugin's delete (see the description).
    type: str
    choices: [present, deleted]
    default: present
  force:
    description: With O(state=deleted), remove the volume from Nomad even when its node is gone.
    type: bool
    default: false
  timeout:
    description:
      - Seconds to wait for each HTTP call, and for a written volume to turn ready.
      - Longer than other modules' 10, because Nomad answers a create or delete only once the plugin on the node has
        made or destroyed the storage (it gives the plugin 60 seconds), and the volume turns ready only when the
        node next reports it.
    type: int
    default: 120
notes:
  - Nomad checks C(host-volume-create) (or C(host-volume-register)) for writes, C(host-volume-read) to find the volume
    and its claims, and C(host-volume-delete) to delete them, in the volume's namespace.
  - With O(node_free_bytes), Nomad also checks C(node) read (C(node { policy = "read" })) for its list of nodes.
seealso:
  - module: nomad_zfs.csi.nomad_csi_volume
  - name: Nomad dynamic host volumes
    description: The volume specification and the plugin protocol.
    link: https://developer.hashicorp.com/nomad/docs/other-specifications/volume/host
"""

EXAMPLES = r"""
- name: A 1 GiB ZFS dataset for team A's database, on whichever node has the plugin
  nomad_zfs.csi.nomad_host_volume:
    name: pgdata
    namespace: team-a
    capacity_max: 1G
    parameters:
      compression: zstd
      recordsize: 16K

- name: The free bytes under the plugin's parent on each Nomad client
  nomad_zfs.csi.zfs_info:
    name: tank/nomad/volumes
    depth: 0
    types: [filesystem]
    properties: [available]
  delegate_to: "{{ item }}"
  loop: "{{ groups['host_volume_clients'] }}"
  register: host_volume_parents

- name: A 20 GiB volume on the client with the most room that can hold it (inventory names are node names here)
  nomad_zfs.csi.nomad_host_volume:
    name: pgdata
    namespace: team-a
    capacity_max: 20G
    node_free_bytes: >-
      {{ dict(host_volume_parents.results | map(attribute='item')
              | zip(host_volume_parents.results | map(attribute='datasets.0.properties.available.value'))) }}

- name: Every host volume the pack rendered (nomad-pack render packs/zfs_csi -f vars.hcl -o out)
  nomad_zfs.csi.nomad_host_volume:
    spec_file: out/zfs_csi/host_volumes.json

- name: Delete it, snapshots included
  nomad_zfs.csi.nomad_host_volume:
    name: pgdata
    namespace: team-a
    state: deleted
"""

RETURN = r"""
volume:
  description: The volume as Nomad stores it after the task (in check mode, as it would be).
  returned: with O(state=present)
  type: dict
  sample: {"id": "6d0f7a5e-2c1b-4f7e-9a35-0c6a2f3b9e11", "name": "pgdata", "namespace": "team-a",
           "plugin_id": "zfs-dataset", "node_id": "0b1d...", "node_pool": "default",
           "host_path": "/tank/nomad/volumes/team-a/pgdata", "capacity_bytes": 1073741824,
           "capacity_min": 0, "capacity_max": 1073741824, "state": "ready", "parameters": {"compression": "zstd"},
           "capabilities": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}]}
volumes:
  description: With O(volumes) or O(spec_file), one entry per item in their order.
  returned: with O(volumes) or O(spec_file)
  type: list
  elements: dict
  sample: [{"name": "pgdata", "changed": false, "changed_fields": [], "volume": {"id": "6d0f7a5e-..."}}]
changed_fields:
  description: Fields that differed and were (or in check mode would be) written.
  returned: always
  type: list
  elements: str
  sample: [capacity_max]
"""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._bulk import (
    bulk_result,
    read_json,
    refuse_single_options,
    validated_items,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_placement import choose_node, free_figures
from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_plan import find, plan_host_volume, shown
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import NomadError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import CSI_CALL_TIMEOUT, NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_nodes import summary
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._poll import poll_until
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_props import PropertyError, parse_size


def check_input(p):
    """The requested (capacity_min, capacity_max) in bytes; PlanError naming the field and the fix."""
    refusals = [
        (not p['name'], 'name is empty; give the name jobs ask for.'),
        (
            p['mode'] == 'register' and not (p['host_path'] and p['node_id']),
            'mode=register needs host_path and node_id.',
        ),
        (p['mode'] == 'create' and p['host_path'], 'host_path is for mode=register; the plugin chooses it.'),
        (not p['capabilities'], 'capabilities is empty; give at least one access_mode/attachment_mode pair.'),
    ]
    for refused, why in refusals:
        if refused and p['state'] == 'present':
            raise PlanError(why)
    bad = sorted(k for k, v in p['parameters'].items() if not isinstance(v, str))
    if bad:
        raise PlanError('parameters: values must be strings; quote the value of %s.' % ', '.join(bad))
    capacity = []
    for field in ('capacity_min', 'capacity_max'):
        try:
            capacity.append(parse_size(p[field]) if p[field] else 0)
        except PropertyError as e:
            raise PlanError('%s: %s' % (field, e))
    if capacity[1] and capacity[0] > capacity[1]:
        raise PlanError(
            'capacity_min (%s) is above capacity_max (%s); swap or raise capacity_max.'
            % (p['capacity_min'], p['capacity_max'])
        )
    return tuple(capacity)


def write(client, method, endpoint, kwargs, p):
    """One write; Nomad's placement failure gains what the plugin and the nodes must have."""
    try:
        return getattr(client, method)(endpoint, **kwargs)
    except NomadError as e:
        if 'could not place volume' not in e.nomad_error:
            raise
        raise NomadError(
            '%s. A node is feasible when it is ready, in node_pool, has no volume named %s, and reports host volume '
            'plugin %s (node attribute plugins.host_volume.%s.version; the host_volume_plugin role installs '
            'zfs-dataset).' % (e, p['name'], p['plugin_id'], p['plugin_id']),
            e.status,
            e.nomad_error,
        )


def wait_ready(client, volume_id, timeout):
    """The volume once its node reports it (Nomad answers a write while it is still pending)."""
    path = 'volume/host/' + volume_id
    volume, ready = poll_until(lambda: client.get(path), lambda vol: vol.get('State') == 'ready', timeout, pause=1)
    if not ready:
        raise NomadError(
            'host volume %s (%s) is still %s after %ds: its node has not reported it. Check the node (nomad node '
            'status %s) and the agent log there.'
            % (volume['Name'], volume_id, volume.get('State'), timeout, volume['NodeID'])
        )
    return volume


class Placement:
    """node_free_bytes, and Nomad's nodes read once: the node for each new volume, its capacity then counted
    against that node's figure."""

    def __init__(self, module):
        self.module = module
        self.figures = free_figures(module.params['node_free_bytes'])
        self.nodes = None

    def place(self, p, capacity):
        """p with node_id set for a volume to create with no node named, when node_free_bytes is given."""
        if self.module.params['node_free_bytes'] is None or p['node_id'] or p['mode'] != 'create':
            return p
        if self.nodes is None:
            self.nodes = [summary(node) for node in self.module.client.get('nodes')]
        need = capacity[1] or capacity[0]
        node = choose_node(p['name'], need, self.figures, self.nodes, p['node_pool'])
        key = node['id'] if node['id'] in self.figures else node['name']
        self.figures[key] -= need
        return dict(p, node_id=node['id'])


def plan_one(module, p, capacity, listed, placement):
    """One volume from Nomad's list: read it and plan; (current, plan). Nothing is written. A volume not yet made
    is placed first, when node_free_bytes is given."""
    client = module.client
    stub = find(listed, p['name'], p['node_id'])
    if stub is None and p['state'] == 'present':
        p = placement.place(p, capacity)
    current = client.get('volume/host/' + stub['ID']) if stub and p['state'] == 'present' else stub
    claims = client.get('volumes/claims', params={'volume_name': p['name']}) if stub and p['state'] == 'deleted' else []
    return current, plan_host_volume(p, capacity, current, claims)


def apply_one(module, p, current, plan):
    """A planned volume's writes unless in check mode, and its entry in the result."""
    client = module.client
    entry = dict(changed=bool(plan.steps), changed_fields=plan.changed_fields)
    answers = module.apply(
        plan.steps, call=lambda method, path, kwargs: write(client, method, path, kwargs, p), what=p['name']
    )
    if answers and p['state'] == 'present':
        current = wait_ready(client, answers[-1]['Volume']['ID'], p['timeout'])
    if p['state'] == 'present':
        entry['volume'] = shown(plan.predicted if plan.steps and module.check_mode else current)
    return entry


def converge(module):
    p = module.params
    capacity = check_input(p)
    placement = Placement(module)
    listed = module.client.get('volumes', params={'type': 'host', 'prefix': p['name']})
    current, plan = plan_one(module, p, capacity, listed, placement)
    result = apply_one(module, p, current, plan)
    if module._diff:
        result['diff'] = dict(before=plan.before, after=plan.after)
    return result


def bulk_items(module):
    """Every item of volumes or spec_file with its capacities, all checked before Nomad is called."""
    p = module.params
    refuse_single_options(p, VOLUME_OPTIONS, 'name')
    if p['volumes'] is not None:
        raw = [('volumes[%d].' % i, item) for i, item in enumerate(p['volumes'])]
    else:
        doc = read_json(p['spec_file'], 'host_volumes')
        if not isinstance(doc, dict) or not isinstance(doc.get('volumes'), list):
            raise PlanError('spec_file %s: no "volumes" list at the top.' % p['spec_file'])
        if doc.get('namespace') and doc['namespace'] != p['namespace']:
            raise PlanError(
                'spec_file %s is for namespace %s, not %s; set namespace to match.'
                % (p['spec_file'], doc['namespace'], p['namespace'])
            )
        raw = [
            ('spec_file %s: volumes[%d].' % (p['spec_file'], i), dict((k, v) for k, v in item.items() if v is not None))
            for i, item in enumerate(doc['volumes'])
        ]
    checked = []
    # One name may be on several nodes (a system job's volume on each), once per node.
    for label, item in validated_items(raw, VOLUME_OPTIONS, ('name', 'node_id'), module.no_log_values):
        item.update(namespace=p['namespace'], timeout=p['timeout'])
        try:
            checked.append((item, check_input(item)))
        except PlanError as e:
            raise PlanError(label + str(e))
    return checked


def converge_many(module):
    """Many volumes: one list call, a read of each listed volume that is to stay, every item planned, and only
    then the writes, so that a refusal of any item comes before anything is written."""
    items = bulk_items(module)
    placement = Placement(module)
    listed = module.client.get('volumes', params={'type': 'host'})
    planned = [(item,) + plan_one(module, item, capacity, listed, placement) for item, capacity in items]
    entries = []
    for item, current, plan in planned:
        entry = dict(apply_one(module, item, current, plan), name=item['name'])
        entries.append((item['name'], entry, plan))
    return bulk_result(entries, module._diff)


VOLUME_OPTIONS = dict(
    name=dict(type='str', required=True),
    mode=dict(type='str', choices=['create', 'register'], default='create'),
    plugin_id=dict(type='str', default='zfs-dataset'),
    host_path=dict(type='str'),
    node_id=dict(type='str'),
    node_pool=dict(type='str'),
    capacity_min=dict(type='str'),
    capacity_max=dict(type='str'),
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
                    'single-node-single-writer',
                    'single-node-multi-writer',
                ],
            ),
            attachment_mode=dict(type='str', required=True, choices=['file-system', 'block-device']),
        ),
    ),
    parameters=dict(type='dict', default={}),
    state=dict(type='str', choices=['present', 'deleted'], default='present'),
    force=dict(type='bool', default=False),
)


def main():
    module = NomadModule(
        argument_spec=dict(
            VOLUME_OPTIONS,
            name=dict(type='str'),
            volumes=dict(type='list', elements='dict', options=VOLUME_OPTIONS),
            spec_file=dict(type='path'),
            node_free_bytes=dict(type='dict'),
            timeout=dict(type='int', default=CSI_CALL_TIMEOUT),
        ),
        required_one_of=[('name', 'volumes', 'spec_file')],
        mutually_exclusive=[('name', 'volumes', 'spec_file')],
        supports_check_mode=True,
    )
    if module.params['name'] is None:
        module.exit_json(**module.run(lambda: converge_many(module), changed_fields=[], volumes=[]))
    module.exit_json(**module.run(lambda: converge(module), changed_fields=[]))


if __name__ == '__main__':
    main()
