#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
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
'''

EXAMPLES = r'''
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
'''

RETURN = r'''
path:
  description: The variable path.
  returned: always
  type: str
  sample: nomad/jobs/zfs-controller
keys:
  description: Item names the variable holds after the task (values are never returned).
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
'''

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils.nomad_client import NomadError, NomadModule

# Nomad's own rule for variable paths.
PATH_RE = re.compile(r'^[a-zA-Z0-9_~\-/]{1,128}$')


def main():
    module = NomadModule(
        argument_spec=dict(
            path=dict(type='str', required=True),
            items=dict(type='dict', default={}, no_log=True),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
        ),
        supports_check_mode=True,
    )
    path, state = module.params['path'].strip('/'), module.params['state']
    if not PATH_RE.match(path) or '//' in path:
        module.fail_json(msg='path %r is not a Nomad variable path; use letters, digits and _ ~ - / '
                             '(at most 128), for example nomad/jobs/zfs-controller.' % module.params['path'])
    items = module.params['items']
    bad = sorted(k for k, v in items.items() if not isinstance(v, str))
    if bad:
        module.fail_json(msg='items: values must be strings; quote the value of %s.' % ', '.join(bad))
    if state == 'present' and not items:
        module.fail_json(msg='items is empty; give at least one item, or use state=absent.')

    client = module.client
    try:
        current = client.get('var/' + path, missing_ok=True)
        before = (current or {}).get('Items') or {}
        index = (current or {}).get('ModifyIndex', 0)
        if state == 'absent':
            changed_keys = sorted(before)
            if current and not module.check_mode:
                client.delete('var/' + path, params={'cas': index})
            after, index = {}, 0
        else:
            changed_keys = sorted(k for k in set(before) | set(items) if before.get(k) != items.get(k))
            after = items
            if changed_keys and not module.check_mode:
                body = {'Namespace': client.namespace, 'Path': path, 'Items': items}
                index = client.put('var/' + path, body, params={'cas': index}).get('ModifyIndex', index)
    except NomadError as e:
        module.fail_json(msg=str(e), path=path)

    changed = bool(changed_keys) if state == 'present' else current is not None
    result = dict(changed=changed, path=path, keys=sorted(after), changed_keys=changed_keys, modify_index=index)
    if module._diff:
        # Unchanged items stay '<hidden>'; changed ones differ only in the marker.
        result['diff'] = dict(
            before=dict((k, '<hidden>' if k not in changed_keys else '<hidden, before>') for k in sorted(before)),
            after=dict((k, '<hidden>' if k not in changed_keys else '<hidden, after>') for k in sorted(after)),
            before_header='nomad var %s' % path, after_header='nomad var %s' % path)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
