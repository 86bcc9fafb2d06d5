#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_variable_info
short_description: Read the items of a Nomad Variable
version_added: 0.1.0
description:
  - Reads one Nomad Variable, for example the one M(nomad_zfs.csi.nomad_acl_token) wrote a token's secret to,
    so that later plays can use the secret.
  - The items' values are returned, so they are secrets in the result. Give the task C(no_log=true), and keep
    them in facts or variables that are not printed.
  - A missing variable is not an error; RV(exists) says whether there is one.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes.info_module
  - nomad_zfs.csi.nomad
options:
  path:
    description: Variable path, for example C(nomad-access/tokens/csi-operator).
    type: str
    required: true
notes:
  - The token needs C(variables) C(read) on the path in O(namespace).
seealso:
  - module: nomad_zfs.csi.nomad_variable
  - module: nomad_zfs.csi.nomad_acl_token
"""

EXAMPLES = r"""
- name: The CSI operator's token secret, which nomad_acl_token stored
  nomad_zfs.csi.nomad_variable_info:
    path: nomad-access/tokens/csi-operator
  register: operator
  no_log: true
"""

RETURN = r"""
exists:
  description: Whether the variable exists.
  returned: always
  type: bool
  sample: true
path:
  description: The variable path.
  returned: always
  type: str
  sample: nomad-access/tokens/csi-operator
item_values:
  description:
    - The variable's items, names to values; empty when it does not exist.
    - Named C(items) before 0.3.0, which Jinja's dot notation cannot reach (it finds the dictionary's method).
  returned: always
  type: dict
  sample: {"secret": "..."}
modify_index:
  description: The variable's modify index; V(0) when it does not exist.
  returned: always
  type: int
  sample: 42
"""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._variable_plan import is_variable_path


def read(module, path):
    if not is_variable_path(path):
        raise PlanError(
            'path %r is not a Nomad variable path; use letters, digits and _ ~ - / (at most 128), for example '
            'nomad-access/tokens/csi-operator.' % module.params['path']
        )
    current = module.client.get('var/' + path, missing_ok=True)
    return dict(
        changed=False,
        exists=current is not None,
        path=path,
        item_values=(current or {}).get('Items') or {},
        modify_index=(current or {}).get('ModifyIndex', 0),
    )


def main():
    module = NomadModule(argument_spec=dict(path=dict(type='str', required=True)), supports_check_mode=True)
    path = module.params['path'].strip('/')
    module.exit_json(**module.run(lambda: read(module, path), path=path))


if __name__ == '__main__':
    main()
