# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""nomad_host_volume's decisions, without calling Nomad: the volume Nomad has in, the API calls out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import Plan, PlanError


def find(stubs, name, node_id):
    """The one listed volume called name (on node_id, when given), or None; several is the caller's to resolve."""
    found = [s for s in stubs or [] if s.get('Name') == name and (not node_id or s.get('NodeID') == node_id)]
    if len(found) > 1:
        raise PlanError(
            'volume name %r is on several nodes (%s); give node_id to choose one.'
            % (name, ', '.join(sorted(s.get('NodeID', '') for s in found)))
        )
    return found[0] if found else None


def requested(p, capacity):
    """The volume as the create or register endpoint takes it, without the ID."""
    body = {
        'Name': p['name'],
        'Namespace': p['namespace'],
        'RequestedCapacityMinBytes': capacity[0],
        'RequestedCapacityMaxBytes': capacity[1],
        'RequestedCapabilities': [
            {'AccessMode': c['access_mode'], 'AttachmentMode': c['attachment_mode']} for c in p['capabilities']
        ],
        'Parameters': p['parameters'],
    }
    if p['mode'] == 'create':
        body['PluginID'] = p['plugin_id']
    else:
        body['HostPath'] = p['host_path']
    for field, key in (('node_id', 'NodeID'), ('node_pool', 'NodePool')):
        if p[field]:
            body[key] = p[field]
    return body


# Parameters that are an instruction to the plugin's create, not a property of the volume: a move passes
# adopt_replica once, so that the zfs-dataset plugin renames the replica into place, and Nomad keeps it with the
# parameters. A later declaration of the volume does not name it, and must not see a difference.
CREATE_ONLY_PARAMETERS = ('adopt_replica',)


def comparable(vol, mode):
    """The fields the module owns, alike from a request and from Nomad's read (which gives null for empty).

    A created volume's host path is the plugin's answer, and a registered one has no plugin.
    """
    fields = dict(
        capacity_min=vol.get('RequestedCapacityMinBytes') or 0,
        capacity_max=vol.get('RequestedCapacityMaxBytes') or 0,
        capabilities=sorted(
            (c.get('AccessMode') or '', c.get('AttachmentMode') or '') for c in vol.get('RequestedCapabilities') or []
        ),
        parameters=dict((k, v) for k, v in (vol.get('Parameters') or {}).items() if k not in CREATE_ONLY_PARAMETERS),
    )
    if mode == 'create':
        fields['plugin_id'] = vol.get('PluginID') or ''
    else:
        fields['host_path'] = vol.get('HostPath') or ''
    return fields


def shown(vol):
    """The result's view of a volume: what Nomad stores, in the module's words."""
    return dict(
        comparable(vol, 'create'),
        host_path=vol.get('HostPath') or '',
        id=vol.get('ID', ''),
        name=vol.get('Name', ''),
        namespace=vol.get('Namespace', ''),
        node_id=vol.get('NodeID', ''),
        node_pool=vol.get('NodePool', ''),
        capacity_bytes=vol.get('CapacityBytes') or 0,
        state=vol.get('State', ''),
        capabilities=[
            dict(access_mode=c.get('AccessMode'), attachment_mode=c.get('AttachmentMode'))
            for c in vol.get('RequestedCapabilities') or []
        ],
    )


def allocations(vol):
    """The allocations Nomad lists on a volume read whole, in the modules' words."""
    return [
        dict(
            id=a.get('ID'),
            job_id=a.get('JobID'),
            namespace=a.get('Namespace'),
            task_group=a.get('TaskGroup'),
            node_id=a.get('NodeID'),
            client_status=a.get('ClientStatus'),
        )
        for a in vol.get('Allocations') or []
    ]


def _refuse_what_cannot_change(p, current, want):
    registered = not current.get('PluginID')
    if registered != (p['mode'] == 'register'):
        raise PlanError(
            'volume %s was %s, so mode=%s cannot manage it; use mode=%s or another name.'
            % (p['name'], 'registered' if registered else 'created', p['mode'], 'register' if registered else 'create')
        )
    for field, key in (('plugin_id', 'PluginID'), ('node_id', 'NodeID'), ('node_pool', 'NodePool')):
        if p['mode'] == 'register' and field == 'plugin_id':
            continue
        if p[field] and p[field] != current.get(key):
            raise PlanError(
                '%s of volume %s is %r and cannot change to %r; delete the volume and make it again, or use '
                'another name.' % (field, p['name'], current.get(key), p[field])
            )
    provisioned = current.get('CapacityBytes') or 0
    if want['RequestedCapacityMaxBytes'] and want['RequestedCapacityMaxBytes'] < provisioned:
        raise PlanError(
            'capacity_max (%d bytes) is below the %d bytes volume %s has; a volume cannot shrink. Keep capacity_max '
            'at or above it, or make a smaller volume and move the data.'
            % (want['RequestedCapacityMaxBytes'], provisioned, p['name'])
        )


def plan_host_volume(p, capacity, current, claims=()):
    # type: (dict, tuple, dict | None, list) -> Plan
    """The calls that give volume p['name'] the state p asks for; current is Nomad's read of it, or None.

    claims are the sticky claims Nomad lists for the volume's name: a deleted volume's own go with it, since Nomad
    keeps them and would never place their task groups again (on a volume of that name made later, too).
    """
    if p['state'] == 'deleted':
        steps = []
        if current:
            steps = [('delete', 'volume/host/' + current['ID'], {'params': {'force': 'true'} if p['force'] else None})]
            steps += [
                ('delete', 'volumes/claim/' + c['ID'], {}) for c in claims or [] if c.get('VolumeID') == current['ID']
            ]
        return Plan(
            steps,
            before='host volume %s: %s\n' % (p['name'], 'present' if current else 'absent'),
            after='host volume %s: absent\n' % p['name'],
            changed_fields=['state'] if steps else [],
        )
    want = requested(p, capacity)
    if current:
        _refuse_what_cannot_change(p, current, want)
        want['ID'] = current['ID']
    desired = comparable(want, p['mode'])
    have = comparable(current, p['mode']) if current else {}
    changed = sorted(k for k in desired if not current or desired[k] != have.get(k))
    endpoint = 'volume/host/' + ('create' if p['mode'] == 'create' else 'register')
    return Plan(
        [('put', endpoint, {'body': {'Volume': want}})] if changed else [],
        before=dict((k, have.get(k)) for k in changed),
        after=dict((k, desired[k]) for k in changed),
        predicted=dict(current or {}, **want),
        changed_fields=changed,
    )
