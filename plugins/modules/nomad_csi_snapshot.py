#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_csi_snapshot
short_description: Take or delete a snapshot of a Nomad CSI volume
version_added: 0.1.0
description:
  - Asks Nomad to have the volume's CSI plugin take a snapshot, or to delete one.
  - A snapshot is known by its name and its source volume, so a second run finds it and changes
    nothing. CSI lists snapshots without their names; the module finds one by its source volume's
    storage ID and the last part of its ID, after V(@) or V(/), which is how democratic-csi's ZFS
    drivers name snapshots (V(<volume>@<name>), or V(<volume>/<name>) when detached).
  - Each run costs one read of the source volume and the plugin's snapshot list (one call per page),
    plus the write when one is needed.
  - Deleting a snapshot the plugin does not list sends nothing to the plugin.
  - To list snapshots use M(nomad_zfs.csi.nomad_csi_snapshot_info). To make a volume from a snapshot
    give its RV(snapshot.id) to O(nomad_zfs.csi.nomad_csi_volume#module:snapshot_id).
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
  - nomad_zfs.csi.nomad
options:
  plugin_id:
    description: The CSI plugin that holds the volume, for example V(zfs).
    type: str
    required: true
  source_volume_id:
    description:
      - The Nomad ID of the volume to snapshot.
      - Required with O(name); with O(state=absent) give either O(source_volume_id) and O(name), or O(id).
    type: str
  name:
    description:
      - The snapshot's name, unique per plugin. democratic-csi takes letters, digits and V(_-:.+).
    type: str
  id:
    description:
      - The snapshot's ID as the plugin lists it, for example V(pgdata@nightly). Only with O(state=absent).
    type: str
  parameters:
    description:
      - Parameters for the plugin. democratic-csi's V(detachedSnapshots=true) copies
        the snapshot into its snapshots parent with zfs send and receive, so it outlives the volume.
      - Used when the snapshot is taken; an existing snapshot is not compared with them.
    type: dict
    default: {}
  secrets:
    description: CSI secrets for the plugin. Sent in Nomad's V(X-Nomad-CSI-Secrets) header only, never logged.
    type: dict
    default: {}
  state:
    description: V(present) takes the snapshot if the plugin does not list it; V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  timeout:
    description:
      - Seconds to wait for each HTTP call.
      - Longer than other modules' 10, because Nomad answers only once the CSI plugin has taken or deleted the
        snapshot.
    type: int
    default: 120
notes:
  - Deleting a snapshot destroys its data; a volume cloned from it may keep the plugin from deleting it.
seealso:
  - module: nomad_zfs.csi.nomad_csi_snapshot_info
  - module: nomad_zfs.csi.nomad_csi_volume
"""

EXAMPLES = r"""
- name: Snapshot pgdata before an upgrade
  nomad_zfs.csi.nomad_csi_snapshot:
    plugin_id: zfs
    source_volume_id: pgdata
    name: before-upgrade
  register: snap

- name: A new volume from it
  nomad_zfs.csi.nomad_csi_volume:
    id: pgdata-restored
    plugin_id: zfs
    capacity_min: 1G
    snapshot_id: "{{ snap.snapshot.id }}"

- name: Delete the snapshot
  nomad_zfs.csi.nomad_csi_snapshot:
    plugin_id: zfs
    source_volume_id: pgdata
    name: before-upgrade
    state: absent
"""

RETURN = r"""
snapshot:
  description:
    - The snapshot as the plugin lists it (or, right after it was taken, as the plugin answered).
    - Absent when there is none, and in check mode before it is taken.
  returned: when the snapshot exists
  type: dict
  contains:
    id:
      description: The plugin's snapshot ID; give it to nomad_csi_volume's snapshot_id.
      type: str
      sample: pgdata@before-upgrade
    name:
      description: The snapshot's name.
      type: str
      sample: before-upgrade
    plugin_id:
      description: The plugin.
      type: str
      sample: zfs
    source_volume_id:
      description: The source volume's Nomad ID, when Nomad knows it (the plugin's list leaves it empty).
      type: str
      sample: pgdata
    external_source_volume_id:
      description: The source volume's storage ID.
      type: str
      sample: pgdata
    size_bytes:
      description: The size the plugin reports, which a volume made from the snapshot needs.
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

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._csi_retry import csi_write_retryable
from ansible_collections.nomad_zfs.csi.plugins.module_utils._csi_snapshot_plan import (
    list_snapshots,
    plan_snapshot,
    public,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import CSI_CALL_TIMEOUT, NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

# democratic-csi refuses other characters in snapshot names.
NAME_RE = re.compile(r'^[a-zA-Z0-9_\-:.+]{1,128}$')


def check_input(p):
    if p['name'] is not None and not NAME_RE.match(p['name']):
        raise PlanError('name %r: use up to 128 letters, digits or "_-:.+", e.g. before-upgrade.' % p['name'])
    if p['id'] and p['state'] == 'present':
        raise PlanError('id is for state=absent; to take a snapshot give source_volume_id and name.')
    if p['id'] and (p['name'] or p['source_volume_id']):
        raise PlanError('give id, or source_volume_id and name, not both.')
    if not p['id'] and not (p['name'] and p['source_volume_id']):
        raise PlanError('source_volume_id and name are required (or id, with state=absent).')


def converge(module):
    """Read the volume and the plugin's list, plan, apply unless in check mode; the module's result."""
    p, client = module.params, module.client
    check_input(p)
    volume = None
    if p['source_volume_id']:
        volume = client.get('volume/csi/' + p['source_volume_id'], missing_ok=True)
    plan = plan_snapshot(p, volume, list_snapshots(client, p['plugin_id'], p['secrets']))
    result = dict(changed=bool(plan.steps))
    if module._diff:
        result['diff'] = dict(before=plan.before, after=plan.after)
    snapshot = plan.predicted
    for (method, _path, _kwargs), answer in zip(plan.steps, module.apply(plan.steps, retry=csi_write_retryable)):
        if method == 'put':
            snapshot = dict(((answer or {}).get('Snapshots') or [{}])[0], PluginID=p['plugin_id'])
    if snapshot and snapshot.get('ID') and p['state'] == 'present':
        result['snapshot'] = public(snapshot, p['name'])
    return result


def main():
    module = NomadModule(
        argument_spec=dict(
            plugin_id=dict(type='str', required=True),
            source_volume_id=dict(type='str'),
            name=dict(type='str'),
            id=dict(type='str'),
            parameters=dict(type='dict', default={}),
            secrets=dict(type='dict', default={}, no_log=True),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            timeout=dict(type='int', default=CSI_CALL_TIMEOUT),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: converge(module), changed=False))


if __name__ == '__main__':
    main()
