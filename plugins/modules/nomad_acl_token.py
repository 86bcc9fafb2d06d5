#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_acl_token
short_description: Manage a Nomad ACL token by name, without ever rotating it by accident
version_added: 0.1.0
description:
  - Creates, updates or removes one Nomad ACL token, found by its name. Nomad does not require token names to be
    unique; this module does, and refuses a name several tokens share.
  - The secret is returned once, by the run that creates the token. A re-run neither rotates it nor reports a
    change; a change of policies or type updates the token and keeps its secret.
  - With O(variable), the secret is also written into a Nomad Variable item, so a job can read it
    (C(nomadVar)) and no one has to handle it.
  - Costs one list of the tokens; a create or update adds a list of the policies, since Nomad takes a token
    naming a policy that does not exist. An update or a secret to write to O(variable) adds a read of the token,
    and O(variable) a read of the variable.
  - Managing tokens needs a management token.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
  - nomad_zfs.csi.nomad
options:
  name:
    description: The token's name, unique among the cluster's tokens.
    type: str
    required: true
  type:
    description: V(client) tokens have O(policies); V(management) tokens can do everything and have none.
    type: str
    choices: [client, management]
    default: client
  policies:
    description: ACL policies of a V(client) token, by name. Required for V(client) with O(state=present).
    type: list
    elements: str
    default: []
  global:
    description: Replicate the token to every region. Nomad cannot change this for an existing token.
    type: bool
    default: false
  variable:
    description:
      - Also write the token's secret into this Nomad Variable item. The variable's other items are kept.
      - Only with O(state=present). With O(state=absent) the variable is left as it is.
    type: dict
    suboptions:
      path:
        description: Variable path, for example C(nomad/jobs/zfs-controller).
        type: str
        required: true
      item:
        description: The item that holds the secret.
        type: str
        default: token
      namespace:
        description: The variable's namespace; defaults to O(namespace).
        type: str
  state:
    description: V(present) creates or updates the token; V(absent) deletes it, and its secret stops working.
    type: str
    choices: [present, absent]
    default: present
notes:
  - Give the task C(no_log=true) when it creates a token whose secret you register, so the secret is not
    printed with the result.
seealso:
  - module: nomad_zfs.csi.nomad_acl_policy
  - module: nomad_zfs.csi.nomad_variable
"""

EXAMPLES = r"""
- name: Team A's submitter token, its secret kept in a Nomad Variable only the operator's jobs read
  nomad_zfs.csi.nomad_acl_token:
    name: team-a-submitter
    policies: [team-a-submit]
    variable:
      path: nomad/jobs/team-a-deployer
      namespace: team-a
  no_log: true

- name: Revoke it
  nomad_zfs.csi.nomad_acl_token:
    name: team-a-submitter
    state: absent
"""

RETURN = r"""
token:
  description: The token after the task, without its secret (in check mode, as it would be).
  returned: with O(state=present)
  type: dict
  sample: {"accessor_id": "b1f0c5a2-7d1e-4c1b-8a53-2f9d0e6c4a11", "name": "team-a-submitter", "type": "client",
           "policies": ["team-a-submit"], "global": false}
secret_id:
  description: The token's secret. Only the run that creates the token returns it; no run returns it again.
  returned: when the token was created by this run
  type: str
  sample: 7a6f2d8e-0c1b-4a5e-9f3d-1e2c3b4a5d6f
changed_fields:
  description: Fields that differed and were (or in check mode would be) written.
  returned: always
  type: list
  elements: str
  sample: [policies]
variable_changed:
  description: Whether the secret was (or in check mode would be) written to O(variable).
  returned: always
  type: bool
  sample: false
"""


from ansible_collections.nomad_zfs.csi.plugins.module_utils._acl_token_plan import (
    named,
    plan_secret_variable,
    plan_token,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._variable_plan import is_variable_path


def check_input(p):
    if not p['name'] or len(p['name']) > 256:
        raise PlanError('name must be 1 to 256 characters; name the token after its holder.')
    if p['state'] == 'absent':
        return
    if p['type'] == 'client' and not p['policies']:
        raise PlanError('policies is required for a client token; name at least one ACL policy.')
    if p['type'] == 'management' and p['policies']:
        raise PlanError('a management token has no policies; drop policies, or use type=client.')
    variable = p['variable']
    if variable and not is_variable_path(variable['path']):
        raise PlanError(
            'variable.path %r is not a Nomad variable path; use letters, digits and _ ~ - / (at most 128).'
            % variable['path']
        )


def call(client, method, target, fields):
    """One planned call; 'update' puts the token as read with the planned fields changed, so the rest is kept."""
    if method == 'update':
        full = client.get('acl/token/' + target)
        full.update(fields)
        return client.put('acl/token/' + target, body=full)
    return getattr(client, method)(target, **fields)


def token_answered(plan, answers):
    """The token Nomad answered (with its secret) to a create or update, else None."""
    tokens = [a for (method, _t, _f), a in zip(plan.steps, answers) if method in ('put', 'update')]
    return tokens[-1] if tokens else None


def converge(module):
    p, client = module.params, module.client
    check_input(p)
    stub = named(client.get('acl/tokens'), p['name'])
    plan = plan_token(p, stub)
    result = dict(changed=bool(plan.steps), changed_fields=plan.changed_fields, variable_changed=False)
    if module._diff:
        result['diff'] = dict(before=plan.before, after=plan.after)
    if plan.steps and p['state'] == 'present' and p['policies']:
        # Nomad takes a token naming a policy it does not have, and the token then grants nothing.
        known = set(policy['Name'] for policy in client.get('acl/policies'))
        missing = sorted(set(p['policies']) - known)
        if missing and module.check_mode:
            # As Ansible's own modules do: an earlier task of the same play may create them.
            module.warn(
                'policies: %s is not an ACL policy in Nomad yet; create it before this runs for real.'
                % ', '.join(missing)
            )
        elif missing:
            raise PlanError(
                'policies: %s is not an ACL policy in Nomad; create it first (nomad_acl_policy), or fix the name.'
                % ', '.join(missing)
            )
    token = token_answered(plan, module.apply(plan.steps, call=lambda *step: call(client, *step)))
    if p['state'] == 'absent':
        return result
    accessor = (token or stub or {}).get('AccessorID')
    created = token is not None and stub is None
    if created:
        result['secret_id'] = token['SecretID']
    if p['variable']:
        variable = dict(p['variable'], path=p['variable']['path'].strip('/'))
        variable['namespace'] = variable['namespace'] or client.namespace
        if accessor is None:  # check mode, and the token is yet to be made
            result['variable_changed'] = True
        else:
            secret = token['SecretID'] if token else client.get('acl/token/' + accessor)['SecretID']
            if not created:  # only the creating run returns it
                module.no_log_values.add(secret)
            current = client.get(
                'var/' + variable['path'], params={'namespace': variable['namespace']}, missing_ok=True
            )
            steps = plan_secret_variable(secret, variable, current)
            result['variable_changed'] = bool(steps)
            module.apply(steps)
        result['changed'] = result['changed'] or result['variable_changed']
    result['token'] = dict(plan.predicted, accessor_id=accessor, name=p['name'])
    return result


def main():
    module = NomadModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            type=dict(type='str', choices=['client', 'management'], default='client'),
            policies=dict(type='list', elements='str', default=[]),
            variable=dict(
                type='dict',
                options=dict(
                    path=dict(type='str', required=True),
                    item=dict(type='str', default='token', no_log=False),
                    namespace=dict(type='str'),
                ),
            ),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            **{'global': dict(type='bool', default=False)},
        ),
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: converge(module), changed_fields=[]))


if __name__ == '__main__':
    main()
