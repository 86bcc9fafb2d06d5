#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_acl_policy
short_description: Manage a Nomad ACL policy from HCL rules
version_added: 0.1.0
description:
  - Creates, updates or removes one Nomad ACL policy.
  - Idempotent on what Nomad stores. Nomad keeps the rules as the text it was given, so a re-run with the same
    text changes nothing, and other whitespace is a change.
  - Nomad parses the rules when they are written, strictly, so a bad rule fails with Nomad's own reason
    and nothing changes. Check mode does not write, so it cannot report such a rule.
  - Writing policies needs a management token.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
  - nomad_zfs.csi.nomad
options:
  name:
    description: The policy, up to 128 letters, digits and C(-).
    type: str
    required: true
  description:
    description: Human-readable description.
    type: str
    default: ''
  rules:
    description:
      - The policy's rules in HCL, as C(nomad acl policy apply) takes them. Required with O(state=present).
      - For example C(namespace "team-a" { capabilities = ["submit-job", "csi-mount-volume"] }).
      - Keys the policy schema does not have are refused before Nomad is called, at any depth. Nomad itself refuses
        them only at the top level and stores a misspelt key inside a block (C(capabilites)), which then grants
        nothing. Rules this check cannot read are left to Nomad's parser, which names the error.
    type: str
  job_acl:
    description:
      - Binds the policy to workload identities instead of tokens; tasks of this job (group, task) get it.
    type: dict
    suboptions:
      namespace:
        description: The job's namespace.
        type: str
        default: default
      job_id:
        description: The job.
        type: str
        required: true
      group:
        description: Only this task group.
        type: str
      task:
        description: Only this task (needs O(job_acl.group)).
        type: str
  state:
    description: V(present) creates or updates the policy; V(absent) removes it.
    type: str
    choices: [present, absent]
    default: present
notes:
  - O(namespace) (the connection option) plays no part here; namespaces are named in the rules.
seealso:
  - module: nomad_zfs.csi.nomad_namespace
  - module: nomad_zfs.csi.nomad_acl_token
"""

EXAMPLES = r"""
- name: Team A may run jobs and use CSI volumes in its namespace, and nothing elsewhere
  nomad_zfs.csi.nomad_acl_policy:
    name: team-a-submit
    description: Submit jobs and mount volumes in team-a
    rules: |
      namespace "team-a" {
        capabilities = ["submit-job", "read-job", "csi-read-volume", "csi-mount-volume"]
      }

- name: From a file
  nomad_zfs.csi.nomad_acl_policy:
    name: csi-operator
    rules: "{{ lookup('ansible.builtin.file', 'policies/csi-operator.hcl') }}"
"""

RETURN = r"""
policy:
  description: The policy's name, description and rules after the task (in check mode, as they would be).
  returned: with O(state=present)
  type: dict
  sample: {"name": "team-a-submit", "description": "Submit jobs and mount volumes in team-a",
           "rules": "namespace \"team-a\" {\n  capabilities = [\"submit-job\"]\n}\n", "job_acl": null}
changed_fields:
  description: Fields that differed and were (or in check mode would be) written.
  returned: always
  type: list
  elements: str
  sample: [rules]
"""

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._acl_policy_plan import comparable, plan_policy
from ansible_collections.nomad_zfs.csi.plugins.module_utils._acl_rules_keys import describe, unknown_keys
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

# Nomad's own rule (ValidPolicyName).
NAME_RE = re.compile(r'^[a-zA-Z0-9-]{1,128}$')


def check_input(p):
    if not NAME_RE.match(p['name']):
        raise PlanError('name %r is not a Nomad policy name; use 1 to 128 letters, digits and "-".' % p['name'])
    if p['state'] == 'present' and not (p['rules'] or '').strip():
        raise PlanError('rules is required with state=present; give the policy in HCL, or use state=absent.')
    found = unknown_keys(p['rules'] or '') if p['state'] == 'present' else []
    if found:
        raise PlanError(
            'rules: %s. Nomad would store these keys and grant nothing for them; correct them.' % describe(found)
        )
    acl = p['job_acl']
    if acl and acl['task'] and not acl['group']:
        raise PlanError('job_acl.task needs job_acl.group; name the task group the task is in.')


def converge(module):
    p = module.params
    check_input(p)
    return module.converge_at(
        'acl/policy/' + p['name'],
        lambda current: plan_policy(p, current),
        'policy',
        lambda body: dict(comparable(body), name=p['name']),
    )


def main():
    module = NomadModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            description=dict(type='str', default=''),
            rules=dict(type='str'),
            job_acl=dict(
                type='dict',
                options=dict(
                    namespace=dict(type='str', default='default'),
                    job_id=dict(type='str', required=True),
                    group=dict(type='str'),
                    task=dict(type='str'),
                ),
            ),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: converge(module), changed_fields=[]))


if __name__ == '__main__':
    main()
