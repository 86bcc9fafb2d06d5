# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""CSI snapshots through Nomad: reading the plugin's list, finding a snapshot by name, planning its calls.

CSI's ListSnapshots has no names, so a snapshot is known by its source volume's storage ID and the last part
of its own ID: democratic-csi's ZFS drivers name a snapshot <volume>@<name> (or <volume>/<name> when it is
detached), relative to their parent.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import csi_secrets_header
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import Plan, PlanError

SNAPSHOTS = 'volumes/snapshot'


def leaf_name(snapshot_id):
    """The name part of a snapshot ID: after the '@' of a ZFS snapshot, or after the last '/'."""
    return snapshot_id.rsplit('@', 1)[1] if '@' in snapshot_id else snapshot_id.rsplit('/', 1)[-1]


def list_snapshots(client, plugin_id, secrets):
    """Every snapshot the plugin lists, following Nomad's pagination."""
    snapshots, token = [], None
    while True:
        params = {'plugin_id': plugin_id}
        if token:
            params['next_token'] = token
        answer = client.get(SNAPSHOTS, params=params, headers=csi_secrets_header(secrets)) or {}
        snapshots.extend(answer.get('Snapshots') or [])
        token = answer.get('NextToken')
        if not token:
            return snapshots


def public(snap, name=None):
    """One snapshot in the modules' shape."""
    return dict(
        id=snap['ID'],
        name=name or snap.get('Name') or leaf_name(snap['ID']),
        plugin_id=snap.get('PluginID'),
        source_volume_id=snap.get('SourceVolumeID') or '',
        external_source_volume_id=snap.get('ExternalSourceVolumeID') or '',
        size_bytes=snap.get('SizeBytes') or 0,
        create_time=snap.get('CreateTime') or 0,
        is_ready=bool(snap.get('IsReady')),
    )


def matching(snapshots, external_source_id=None, name=None, snapshot_id=None):
    """The listed snapshots that fit every filter given."""
    return [
        s
        for s in snapshots
        if (snapshot_id is None or s['ID'] == snapshot_id)
        and (external_source_id is None or s.get('ExternalSourceVolumeID') == external_source_id)
        and (name is None or leaf_name(s['ID']) == name)
    ]


def plan_snapshot(p, volume, snapshots):
    # type: (dict, dict | None, list[dict]) -> Plan
    """The call that makes the snapshot p asks for, or removes it.

    volume: Nomad's read of p['source_volume_id'], or None; snapshots: the plugin's list. predicted is
    the snapshot as listed, when it exists before the call.
    """
    label = p['id'] or '%s of volume %s' % (p['name'], p['source_volume_id'])
    if volume and volume.get('PluginID') != p['plugin_id']:
        raise PlanError(
            'source_volume_id %s belongs to plugin %s, not plugin_id %s; give its plugin.'
            % (p['source_volume_id'], volume.get('PluginID'), p['plugin_id'])
        )
    if p['id']:
        found = matching(snapshots, snapshot_id=p['id'])
    else:
        # A volume that is gone may leave detached snapshots; democratic-csi's storage ID is the volume ID.
        external = volume.get('ExternalID') if volume else p['source_volume_id']
        found = matching(snapshots, external_source_id=external, name=p['name'])
    current = found[0] if found else None
    before = 'snapshot %s: %s\n' % (label, 'present' if current else 'absent')
    if p['state'] == 'absent':
        steps = []
        if current:
            params = {'plugin_id': p['plugin_id'], 'snapshot_id': current['ID']}
            steps.append(('delete', SNAPSHOTS, {'params': params, 'headers': csi_secrets_header(p['secrets'])}))
        return Plan(steps, before, 'snapshot %s: absent\n' % label, predicted=current)
    if current:
        return Plan([], before, before, predicted=current)
    if not volume:
        raise PlanError(
            'source_volume_id %s: no such CSI volume in namespace %s; create or register it first.'
            % (p['source_volume_id'], p['namespace'])
        )
    body = {
        'Snapshots': [
            {
                'SourceVolumeID': p['source_volume_id'],
                'PluginID': p['plugin_id'],
                'Name': p['name'],
                'Parameters': p['parameters'],
                'Secrets': p['secrets'],
            }
        ]
    }
    return Plan([('put', SNAPSHOTS, {'body': body})], before, 'snapshot %s: present\n' % label)
