# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""nomad_namespace's decisions, without calling Nomad: the namespace Nomad has in, the API calls out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import Plan

# Nomad's own bookkeeping in a read, which a write does not carry.
READ_ONLY = ('CreateIndex', 'ModifyIndex', 'Hash')


def requested(p, current=None):
    """The API body for namespace p['name']: current (Nomad's read, or None) with the fields the module owns set.

    Nomad stores a namespace as it is sent, so what the module does not manage (network modes, Vault and Consul
    defaults, a quota, node pools when node_pool_config is left out, and any option left out) is carried over, or
    the write would drop it.
    """
    body = dict((k, v) for k, v in (current or {}).items() if k not in READ_ONLY)
    body['Name'] = p['name']
    # A field left out (None) is kept as Nomad has it: a run that does not name it does not manage it.
    for field, key in (('description', 'Description'), ('meta', 'Meta')):
        if p[field] is not None:
            body[key] = p[field]
    capabilities = dict(body.get('Capabilities') or {})
    for field, key in (
        ('enabled_task_drivers', 'EnabledTaskDrivers'),
        ('disabled_task_drivers', 'DisabledTaskDrivers'),
    ):
        if p[field] is not None:
            capabilities[key] = p[field]
    if capabilities:
        body['Capabilities'] = capabilities
    pools = p.get('node_pool_config')
    if pools is not None:
        body['NodePoolConfiguration'] = {
            'Default': pools['default'] or '',
            'Allowed': pools['allowed'],
            'Denied': pools['denied'],
        }
    return body


def comparable(ns, with_pools):
    """The fields the module owns, alike from a request and from Nomad's read (which gives null for empty)."""
    caps = ns.get('Capabilities') or {}
    fields = dict(
        description=ns.get('Description') or '',
        meta=ns.get('Meta') or {},
        enabled_task_drivers=sorted(caps.get('EnabledTaskDrivers') or []),
        disabled_task_drivers=sorted(caps.get('DisabledTaskDrivers') or []),
    )
    if with_pools:
        pools = ns.get('NodePoolConfiguration') or {}
        fields['node_pool_config'] = dict(
            default=pools.get('Default') or '',
            allowed=sorted(pools.get('Allowed') or []),
            denied=sorted(pools.get('Denied') or []),
        )
    return fields


def plan_namespace(p, current):
    # type: (dict, dict | None) -> Plan
    """The calls that give namespace p['name'] the state p asks for; current is Nomad's read of it, or None."""
    path = 'namespace/' + p['name']
    if p['state'] == 'absent':
        return Plan(
            [('delete', path, {})] if current else [],
            before='namespace %s: %s\n' % (p['name'], 'present' if current else 'absent'),
            after='namespace %s: absent\n' % p['name'],
        )
    want = requested(p, current)
    with_pools = p.get('node_pool_config') is not None
    desired = comparable(want, with_pools)
    have = comparable(current, with_pools) if current else {}
    changed = sorted(k for k in desired if not current or desired[k] != have.get(k))
    return Plan(
        [('put', path, {'body': want})] if changed else [],
        before=dict((k, have.get(k)) for k in changed),
        after=dict((k, desired[k]) for k in changed),
        changed_fields=changed,
    )
