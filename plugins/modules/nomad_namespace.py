#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_namespace
short_description: Manage a Nomad namespace, the boundary CSI volumes and ACL policies are bound to
version_added: 0.1.0
description:
  - Creates, updates or removes one Nomad namespace with its description, meta and capabilities.
  - A CSI volume belongs to one namespace, and only jobs in that namespace can claim it; so a namespace per
    tenant, with a policy per namespace (M(nomad_zfs.csi.nomad_acl_policy)), keeps tenants off each other's data.
  - Writing namespaces needs a management token.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
  - nomad_zfs.csi.nomad
options:
  name:
    description: The namespace, up to 128 letters, digits and C(-).
    type: str
    required: true
  description:
    description:
      - Human-readable description.
      - Left out, the namespace's description is kept as it is (empty for a new one).
    type: str
  meta:
    description:
      - Key/value metadata; values are strings. The whole map is managed; V({}) removes every key.
      - Left out, the namespace's meta is kept as it is, so that meta set elsewhere survives a run that does not
        name it.
    type: dict
  enabled_task_drivers:
    description:
      - If not empty, jobs in the namespace may use only these task drivers.
      - Left out, kept as it is.
    type: list
    elements: str
  disabled_task_drivers:
    description:
      - Task drivers jobs in the namespace may not use.
      - Left out, kept as it is.
    type: list
    elements: str
  node_pool_config:
    description:
      - The namespace's default node pool and the pools its jobs may or may not use.
      - Nomad Enterprise only; Nomad CE refuses it as C(Node Pools Governance is unlicensed) and nothing changes.
      - Left out, the namespace's node pool configuration is not managed.
    type: dict
    suboptions:
      default:
        description: Node pool for jobs that name none.
        type: str
      allowed:
        description: Node pools jobs may use.
        type: list
        elements: str
        default: []
      denied:
        description: Node pools jobs may not use.
        type: list
        elements: str
        default: []
  state:
    description:
      - V(present) creates or updates the namespace; V(absent) removes it.
      - Nomad refuses to remove a namespace that still has jobs, volumes or variables, and the error says so.
    type: str
    choices: [present, absent]
    default: present
notes:
  - O(namespace) (the connection option) plays no part here; the namespace managed is O(name).
seealso:
  - module: nomad_zfs.csi.nomad_acl_policy
"""

EXAMPLES = r"""
- name: A namespace per tenant, whose jobs may use exec only
  nomad_zfs.csi.nomad_namespace:
    name: team-a
    description: Team A's jobs and CSI volumes
    meta:
      owner: team-a@example.com
    enabled_task_drivers: [exec]

- name: Remove it once its jobs and volumes are gone
  nomad_zfs.csi.nomad_namespace:
    name: team-a
    state: absent
"""

RETURN = r"""
namespace:
  description: The namespace as Nomad stores it after the task (in check mode, as it would be).
  returned: with O(state=present)
  type: dict
  sample: {"name": "team-a", "description": "Team A's jobs and CSI volumes", "meta": {"owner": "team-a@example.com"},
           "enabled_task_drivers": ["exec"], "disabled_task_drivers": []}
changed_fields:
  description: Fields that differed and were (or in check mode would be) written.
  returned: always
  type: list
  elements: str
  sample: [enabled_task_drivers]
"""

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._namespace_plan import comparable, plan_namespace
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

# Nomad's own rule (validNamespaceName).
NAME_RE = re.compile(r'^[a-zA-Z0-9-]{1,128}$')


def check_input(p):
    if not NAME_RE.match(p['name']):
        raise PlanError('name %r is not a Nomad namespace; use 1 to 128 letters, digits and "-".' % p['name'])
    if p['state'] == 'absent' and p['name'] == 'default':
        raise PlanError('the default namespace cannot be removed; name another namespace.')
    bad = sorted(k for k, v in (p['meta'] or {}).items() if not isinstance(v, str))
    if bad:
        raise PlanError('meta: values must be strings; quote the value of %s.' % ', '.join(bad))
    both = sorted(set(p['enabled_task_drivers'] or []) & set(p['disabled_task_drivers'] or []))
    if both:
        raise PlanError('%s is in enabled_task_drivers and disabled_task_drivers; keep it in one.' % ', '.join(both))


def converge(module):
    p = module.params
    check_input(p)
    return module.converge_at(
        'namespace/' + p['name'],
        lambda current: plan_namespace(p, current),
        'namespace',
        lambda body: dict(comparable(body, p['node_pool_config'] is not None), name=p['name']),
    )


def main():
    module = NomadModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            description=dict(type='str'),
            meta=dict(type='dict'),
            enabled_task_drivers=dict(type='list', elements='str'),
            disabled_task_drivers=dict(type='list', elements='str'),
            node_pool_config=dict(
                type='dict',
                options=dict(
                    default=dict(type='str'),
                    allowed=dict(type='list', elements='str', default=[]),
                    denied=dict(type='list', elements='str', default=[]),
                ),
            ),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: converge(module), changed_fields=[]))


if __name__ == '__main__':
    main()
