# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""nomad_acl_policy's decisions, without calling Nomad. Nomad stores a policy's rules as the text it was given,
so the text is what is compared; Nomad itself parses it when it is written."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import Plan


def requested(p):
    """The API body for policy p['name']."""
    body = {'Name': p['name'], 'Description': p['description'], 'Rules': p['rules']}
    if p.get('job_acl'):
        acl = p['job_acl']
        body['JobACL'] = {
            'Namespace': acl['namespace'],
            'JobID': acl['job_id'],
            'Group': acl['group'] or '',
            'Task': acl['task'] or '',
        }
    return body


def comparable(policy):
    acl = policy.get('JobACL') or {}
    return dict(
        description=policy.get('Description') or '',
        rules=policy.get('Rules') or '',
        job_acl=dict(
            namespace=acl.get('Namespace') or '',
            job_id=acl.get('JobID') or '',
            group=acl.get('Group') or '',
            task=acl.get('Task') or '',
        )
        if acl
        else None,
    )


def plan_policy(p, current):
    # type: (dict, dict | None) -> Plan
    """The calls that give policy p['name'] the state p asks for; current is Nomad's read of it, or None."""
    path = 'acl/policy/' + p['name']
    if p['state'] == 'absent':
        return Plan(
            [('delete', path, {})] if current else [],
            before='acl policy %s: %s\n' % (p['name'], 'present' if current else 'absent'),
            after='acl policy %s: absent\n' % p['name'],
        )
    want = requested(p)
    desired = comparable(want)
    have = comparable(current) if current else {}
    changed = sorted(k for k in desired if not current or desired[k] != have.get(k))
    # The rules are text; the diff shows them as text, the other fields as data.
    return Plan(
        [('put', path, {'body': want})] if changed else [],
        before=_shown(have, changed),
        after=_shown(desired, changed),
        changed_fields=changed,
    )


def _shown(fields, changed):
    if not fields:
        return ''
    lines = ['%s: %r\n' % (k, fields[k]) for k in changed if k != 'rules']
    if 'rules' in changed:
        lines.append('rules:\n' + fields['rules'] + ('' if fields['rules'].endswith('\n') else '\n'))
    return ''.join(lines)
