# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""nomad_csi_volume's decisions, without calling Nomad: the volume Nomad has in, the API calls out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import csi_secrets_header
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import Plan, PlanError


def requested(p, capacity, current=None):
    """The API body for one volume, secrets included.

    Without a topology option the body keeps the current volume's: Nomad refuses to change the topology
    request of a volume that has topologies, so an update must send the same one.
    """
    vol = {
        'ID': p['id'],
        'Name': p['name'] or p['id'],
        'PluginID': p['plugin_id'],
        'RequestedCapabilities': [
            {'AccessMode': c['access_mode'], 'AttachmentMode': c['attachment_mode']} for c in p['capabilities']
        ],
        'MountOptions': {'FSType': p['fs_type'], 'MountFlags': p['mount_flags']},
        'Parameters': p['parameters'],
        'Secrets': p['secrets'],
        'RequestedTopologies': topology_request(p.get('topology'))
        if p.get('topology') is not None
        else (current or {}).get('RequestedTopologies'),
    }
    if p['mode'] == 'register':
        vol.update(ExternalID=p['external_id'], Context=p['context'])
    else:
        vol.update(
            RequestedCapacityMin=capacity[0],
            RequestedCapacityMax=capacity[1],
            SnapshotID=p.get('snapshot_id') or '',
            CloneID=p.get('clone_id') or '',
        )
    return vol


def items_from_spec(doc, namespace):
    """nomad_csi_volume's options for each volume of a spec file; ValueError names what does not fit.

    Two shapes: the zfs_csi pack's volumes.json ({"plugin_id": ..., "volumes": [the module's own options]}) and
    Nomad's API body ({"Volumes": [...]}, as PUT /v1/volume/csi/:id/create takes it).
    """
    if isinstance(doc, dict) and isinstance(doc.get('volumes'), list):
        if doc.get('namespace') and doc['namespace'] != namespace:
            raise ValueError('it is for namespace %s, not %s; set namespace to match' % (doc['namespace'], namespace))
        own = []
        for i, vol in enumerate(doc['volumes']):
            if not isinstance(vol, dict):
                raise ValueError('volumes[%d] is not an object' % i)
            vol = dict((k, v) for k, v in vol.items() if v is not None)
            if doc.get('plugin_id'):
                vol.setdefault('plugin_id', doc['plugin_id'])
            own.append(vol)
        return own
    if not isinstance(doc, dict) or not isinstance(doc.get('Volumes'), list):
        raise ValueError('no "volumes" (or Nomad\'s "Volumes") list at the top')
    items = []
    for i, vol in enumerate(doc['Volumes']):
        if not isinstance(vol, dict):
            raise ValueError('Volumes[%d] is not an object' % i)
        if vol.get('Namespace') and vol['Namespace'] != namespace:
            raise ValueError(
                'Volumes[%d] is for namespace %s, not %s; set namespace to match' % (i, vol['Namespace'], namespace)
            )
        mount = vol.get('MountOptions') or {}
        item = dict(
            id=vol.get('ID'),
            name=vol.get('Name') or None,
            plugin_id=vol.get('PluginID') or None,
            mode='register' if vol.get('ExternalID') else 'create',
            external_id=vol.get('ExternalID') or None,
            capacity_min=str(vol['RequestedCapacityMin']) if vol.get('RequestedCapacityMin') else None,
            capacity_max=str(vol['RequestedCapacityMax']) if vol.get('RequestedCapacityMax') else None,
            snapshot_id=vol.get('SnapshotID') or None,
            clone_id=vol.get('CloneID') or None,
            capabilities=capabilities_of(vol) or None,
            topology=topology_of(vol['RequestedTopologies']) if vol.get('RequestedTopologies') else None,
            fs_type=mount.get('FSType') or '',
            mount_flags=mount.get('MountFlags') or [],
            parameters=vol.get('Parameters') or {},
            context=vol.get('Context') or {},
            secrets=vol.get('Secrets') or {},
        )
        items.append(dict((k, v) for k, v in item.items() if v is not None))
    return items


def topology_request(topology):
    """Nomad's RequestedTopologies from the option's {required: [segments], preferred: [segments]}; None for none.

    None rather than empty lists: Nomad tells a missing request from an empty one.
    """
    request = dict(
        (key.capitalize(), [{'Segments': segments} for segments in topology.get(key) or []])
        for key in ('required', 'preferred')
    )
    return request if request['Required'] or request['Preferred'] else None


def topology_of(request):
    """The option's shape from Nomad's RequestedTopologies; empty lists for none."""
    request = request or {}
    return dict(
        (key, [dict(t.get('Segments') or {}) for t in request.get(key.capitalize()) or [] if t])
        for key in ('required', 'preferred')
    )


def capabilities_of(vol):
    """Nomad's RequestedCapabilities in the modules' own shape."""
    # .get: a spec file's missing mode is left for the options' validation to name.
    return [
        dict(access_mode=c.get('AccessMode'), attachment_mode=c.get('AttachmentMode'))
        for c in vol.get('RequestedCapabilities') or []
        if isinstance(c, dict)
    ]


def comparable(vol, mode):
    """The fields the module owns, from a request or from Nomad's read. Secrets and mount flags are write-only."""
    caps = sorted((c.get('AccessMode'), c.get('AttachmentMode')) for c in vol.get('RequestedCapabilities') or [])
    fields = dict(
        name=vol.get('Name'),
        plugin_id=vol.get('PluginID'),
        capabilities=caps,
        fs_type=(vol.get('MountOptions') or {}).get('FSType') or '',
        parameters=vol.get('Parameters') or {},
    )
    if mode == 'register':
        fields.update(external_id=vol.get('ExternalID'), context=vol.get('Context') or {})
    else:
        fields.update(
            capacity_min=vol.get('RequestedCapacityMin') or 0, capacity_max=vol.get('RequestedCapacityMax') or 0
        )
    return fields


def plan_volume(p, capacity, current):
    # type: (dict, tuple[int, int], dict | None) -> Plan
    """The calls that give volume p['id'] the state p asks for; current is Nomad's read of it, or None.

    Each step is (method, path, keyword arguments for the client). Steps may carry secrets; only the diff and
    changed_fields are for output.
    """
    path = 'volume/csi/' + p['id']
    if p['state'] != 'present':
        return _plan_removal(p, path, current)
    want = requested(p, capacity, current)
    desired = comparable(want, p['mode'])
    have = comparable(current, p['mode']) if current else {}
    if current and current.get('PluginID') != p['plugin_id']:
        raise PlanError(
            'volume %s belongs to plugin %s, not %s; a volume cannot move between plugins. Use another '
            'id, or remove it first (state=absent keeps the data).' % (p['id'], current.get('PluginID'), p['plugin_id'])
        )
    if current and p['mode'] == 'create' and capacity[1] and capacity[1] < (current.get('Capacity') or 0):
        raise PlanError(
            'capacity_max (%d bytes) is below the %d bytes volume %s has; a volume cannot shrink. Keep '
            'capacity_max at or above its capacity, or make a smaller volume and move the data.'
            % (capacity[1], current['Capacity'], p['id'])
        )
    for field, key in (('snapshot_id', 'SnapshotID'), ('clone_id', 'CloneID')):
        if current and p.get(field) and p[field] != (current.get(key) or ''):
            raise PlanError(
                '%s applies when a volume is created, and volume %s exists (%s %r); remove %s, or '
                'create another volume.' % (field, p['id'], field, current.get(key) or '', field)
            )
    # Nomad keeps the first topology request (refusing or ignoring another), so a change is refused here.
    if current and p.get('topology') is not None:
        asked, kept = topology_of(want['RequestedTopologies']), topology_of(current.get('RequestedTopologies'))
        if asked != kept:
            raise PlanError(
                'topology applies when a volume is created or registered, and volume %s exists with topology %s; '
                'leave topology out or as it was, or remove the volume first (state=absent keeps the data).'
                % (p['id'], kept)
            )
    if current and p['mode'] == 'register' and current.get('ExternalID') != p['external_id']:
        raise PlanError(
            'volume %s is registered with external_id %s, not %s; deregister it first (state=absent) '
            'to point it at other storage.' % (p['id'], current.get('ExternalID'), p['external_id'])
        )
    changed = sorted(k for k in desired if not current or desired[k] != have.get(k))
    # Nomad updates an existing volume through the same endpoint that made it.
    endpoint = path + '/create' if p['mode'] == 'create' else path
    steps = [('put', endpoint, {'body': {'Volumes': [want]}})] if changed else []
    return Plan(
        steps,
        before=dict((k, have.get(k)) for k in changed),
        after=dict((k, desired[k]) for k in changed),
        changed_fields=changed,
    )


# Client statuses of an allocation whose tasks no longer run, and 'gone' for one Nomad no longer lists (claims()):
# Nomad's volume watcher frees their claims by itself.
STOPPED = frozenset(('complete', 'failed', 'lost', 'gone'))
# How long state=deleted waits for those claims to be freed.
RELEASE_SECONDS = 120


def claims(vol):
    # type: (dict | None) -> list[tuple[str, str, str]]
    """The allocations that claim volume vol, as (ID, job, client status); status 'gone' once Nomad no longer
    lists the allocation (its claim still stands until the volume watcher frees it)."""
    vol = vol or {}
    stubs = dict((a.get('ID'), a) for a in vol.get('Allocations') or [])
    ids = sorted(set(vol.get('ReadAllocs') or {}) | set(vol.get('WriteAllocs') or {}))
    return [(i, stubs.get(i, {}).get('JobID', ''), stubs.get(i, {}).get('ClientStatus', 'gone')) for i in ids]


def being_released(vol):
    """Whether vol's only claims are of allocations that stopped: Nomad frees them within seconds."""
    held = claims(vol)
    return bool(held) and all(claim[2] in STOPPED for claim in held)


def _plan_removal(p, path, current):
    steps = []
    held = claims(current)
    if held and p['state'] == 'deleted':
        # Nomad (1.11) has the plugin destroy the storage first and checks claims only when it deregisters.
        raise PlanError(
            'volume %s is claimed by %s; stop those allocations%s and run again. Nomad has the plugin destroy a '
            "volume's data before it looks at its claims, so a delete now would destroy the data under them and "
            'still fail.'
            % (
                p['id'],
                ', '.join('allocation %s of job %s (%s)' % (i[:8], job or '?', status) for i, job, status in held),
                ''
                if not being_released(current)
                else ' (they stopped, but their claims were not freed within %d s: the node and controller plugins '
                'must be running to release them)' % RELEASE_SECONDS,
            )
        )
    if current and p['state'] == 'deleted':
        steps.append(('delete', path + '/delete', {'headers': csi_secrets_header(p['secrets'])}))
    elif current:
        steps.append(('delete', path, {'params': {'force': str(p['force']).lower()}}))
    destroyed = ', data destroyed' if p['state'] == 'deleted' and current else ''
    return Plan(
        steps,
        before='volume %s: %s\n' % (p['id'], 'present' if current else 'absent'),
        after='volume %s: absent%s\n' % (p['id'], destroyed),
    )
