# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""nomad_acl_token's decisions, without calling Nomad.

Nomad knows tokens by accessor ID; the module knows them by name, so the token list is the current state and
one token per name is the rule. An update keeps the secret: Nomad stores the token as sent, so the planner
asks for the full token (secret included) and sends it back with the new fields.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import Plan, PlanError


def named(tokens, name):
    """The one token stub called name, or None; PlanError when several are."""
    matches = [t for t in tokens if t.get('Name') == name]
    if len(matches) > 1:
        raise PlanError(
            '%d tokens are named %s (accessors %s); the module needs one per name. Delete the extra ones with '
            '`nomad acl token delete ACCESSOR`, or choose another name.'
            % (len(matches), name, ', '.join(sorted(t['AccessorID'] for t in matches)))
        )
    return matches[0] if matches else None


def comparable(token):
    return dict(
        type=token.get('Type'),
        policies=sorted(token.get('Policies') or []),
        global_=bool(token.get('Global')),
    )


def plan_token(p, stub):
    # type: (dict, dict | None) -> Plan
    """The calls for token p['name']; stub is its entry in Nomad's token list, or None.

    A step ('update', accessor, fields) stands for read-then-write, since the write needs the secret.
    """
    name = p['name']
    if p['state'] == 'absent':
        return Plan(
            [('delete', 'acl/token/' + stub['AccessorID'], {})] if stub else [],
            before='acl token %s: %s\n' % (name, 'present' if stub else 'absent'),
            after='acl token %s: absent\n' % name,
        )
    desired = dict(type=p['type'], policies=sorted(p['policies']), global_=p['global'])
    have = comparable(stub) if stub else {}
    if stub and have['global_'] != desired['global_']:
        raise PlanError(
            'token %s exists with global=%s, and Nomad cannot change that; remove it first (state=absent) and '
            'create it again, which gives it a new secret.' % (name, have['global_'])
        )
    changed = sorted(k.rstrip('_') for k in desired if not stub or desired[k] != have.get(k))
    fields = {'Name': name, 'Type': p['type'], 'Policies': p['policies'], 'Global': p['global']}
    if not stub:
        steps = [('put', 'acl/token', {'body': fields})]
    elif changed:
        steps = [('update', stub['AccessorID'], fields)]
    else:
        steps = []
    shown = dict((k.rstrip('_'), v) for k, v in desired.items())
    return Plan(
        steps,
        before=dict((k.rstrip('_'), v) for k, v in have.items() if k.rstrip('_') in changed),
        after=dict((k, shown[k]) for k in changed),
        predicted=shown,
        changed_fields=changed,
    )


def plan_secret_variable(secret, variable, current):
    # type: (str, dict, dict | None) -> list
    """The write that puts secret into the variable's item, keeping its other items; [] if it holds it."""
    items = dict((current or {}).get('Items') or {})
    if items.get(variable['item']) == secret:
        return []
    items[variable['item']] = secret
    body = {'Namespace': variable['namespace'], 'Path': variable['path'], 'Items': items}
    params = {'cas': (current or {}).get('ModifyIndex', 0), 'namespace': variable['namespace']}
    return [('put', 'var/' + variable['path'], {'body': body, 'params': params})]
