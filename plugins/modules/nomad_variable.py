#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_variable
short_description: Store secrets for the CSI plugin as a Nomad Variable
version_added: 0.1.0
description:
  - Creates, updates or removes one Nomad Variable, such as the SSH key democratic-csi's
    controller reads with C(nomadVar) at run time, so secrets never appear in job specs.
  - Item values are never shown in output, logs or diffs; the diff names the items that
    change and hides their values.
  - Writes use check-and-set on the variable's modify index, so a concurrent writer makes
    the task fail rather than be overwritten.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
  - nomad_zfs.csi.nomad
options:
  path:
    description: Variable path, for example C(nomad/jobs/zfs-controller).
    type: str
    required: true
  items:
    description:
      - The variable's items. With O(state=present) the variable holds exactly these.
      - Values are strings; they are treated as secrets.
    type: dict
    default: {}
  state:
    description: V(present) writes the items, V(absent) deletes the variable.
    type: str
    choices: [present, absent]
    default: present
"""

EXAMPLES = r"""
- name: Give the controller its SSH key
  nomad_zfs.csi.nomad_variable:
    path: nomad/jobs/zfs-controller
    namespace: storage
    items:
      ssh_private_key: "{{ lookup('ansible.builtin.file', 'files/csi_ed25519') }}"

- name: Remove it
  nomad_zfs.csi.nomad_variable:
    path: nomad/jobs/zfs-controller
    namespace: storage
    state: absent
"""

RETURN = r"""
path:
  description: The variable path.
  returned: always
  type: str
  sample: nomad/jobs/zfs-controller
item_keys:
  description:
    - Item names the variable holds after the task (values are never returned).
    - Named C(keys) before 0.3.0, which Jinja's dot notation cannot reach (it finds the dictionary's method).
  returned: always
  type: list
  elements: str
  sample: [ssh_private_key]
changed_keys:
  description: Item names that were (or in check mode would be) added, changed or removed.
  returned: always
  type: list
  elements: str
  sample: [ssh_private_key]
modify_index:
  description: The variable's modify index after the task; V(0) when it does not exist (or, in check mode, would not).
  returned: always
  type: int
  sample: 42
"""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._variable_plan import is_variable_path, plan_variable


def check_input(p, path):
    """Refuse, naming the field and the fix, before any call."""
    if not is_variable_path(path):
        raise PlanError(
            'path %r is not a Nomad variable path; use letters, digits and _ ~ - / '
            '(at most 128), for example nomad/jobs/zfs-controller.' % p['path']
        )
    items = p['items']
    bad = sorted(k for k, v in items.items() if not isinstance(v, str))
    if bad:
        raise PlanError('items: values must be strings; quote the value of %s.' % ', '.join(bad))
    if p['state'] == 'present' and not items:
        raise PlanError('items is empty; give at least one item, or use state=absent.')


def converge(module, path):
    """Read the variable, plan, apply unless in check mode; the module's result."""
    client, p = module.client, module.params
    check_input(p, path)
    current = client.get('var/' + path, missing_ok=True)
    plan = plan_variable(path, client.namespace, p['items'], p['state'], current)
    index = plan.predicted['modify_index']
    for (method, _path, _kwargs), answer in zip(plan.steps, module.apply(plan.steps)):
        if method == 'put':
            index = answer.get('ModifyIndex', index)
    changed = bool(plan.steps)
    result = dict(
        changed=changed,
        path=path,
        item_keys=plan.predicted['keys'],
        changed_keys=plan.changed_fields,
        modify_index=index,
    )
    if module._diff:
        result['diff'] = dict(
            before=plan.before,
            after=plan.after,
            before_header='nomad var %s' % path,
            after_header='nomad var %s' % path,
        )
    return result


def main():
    module = NomadModule(
        argument_spec=dict(
            path=dict(type='str', required=True),
            items=dict(type='dict', default={}, no_log=True),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
        ),
        supports_check_mode=True,
    )
    path = module.params['path'].strip('/')
    module.exit_json(**module.run(lambda: converge(module, path), path=path))


if __name__ == '__main__':
    main()
