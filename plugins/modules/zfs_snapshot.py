#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: zfs_snapshot
short_description: Take or destroy one ZFS snapshot
version_added: 0.2.0
description:
  - Makes sure one snapshot of a dataset exists, or does not.
  - A snapshot that exists is left as it is, whatever it holds; a second run changes nothing.
  - Only the named snapshot is ever destroyed, never recursively. A snapshot that a clone was made from, or that
    has holds, is not destroyed and the task fails naming them, since the destroy would have to take them too.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
options:
  name:
    description:
      - The snapshot, C(<dataset>@<short name>), for example C(tank/nomad/csi@before-upgrade).
      - The same characters as a dataset name are allowed in both parts.
    type: str
    required: true
  state:
    description:
      - V(present) takes the snapshot unless it exists. Its dataset must exist.
      - V(absent) destroys it when it exists and nothing depends on it.
    type: str
    choices: [present, absent]
    default: present
  parent_guard:
    description:
      - Refuse, before anything runs, a snapshot whose dataset is not this dataset or under it.
    type: str
notes:
  - Runs on the host that has the pool, as root or as a user with the C(snapshot) (and for V(absent), C(destroy)
    and C(mount)) permissions on the dataset.
seealso:
  - module: nomad_zfs.csi.zfs_dataset
  - module: nomad_zfs.csi.zfs_info
"""

EXAMPLES = r"""
- name: Snapshot the volumes' parent before an upgrade
  nomad_zfs.csi.zfs_snapshot:
    name: tank/nomad/volumes@before-upgrade
    parent_guard: tank/nomad/volumes
  become: true

- name: Drop it once the upgrade is done
  nomad_zfs.csi.zfs_snapshot:
    name: tank/nomad/volumes@before-upgrade
    state: absent
  become: true
"""

RETURN = r"""
name:
  description: The snapshot.
  returned: always
  type: str
  sample: tank/nomad/volumes@before-upgrade
guid:
  description: The snapshot's C(guid) with O(state=present), once it exists (not in check mode before it does).
  returned: when it exists
  type: str
  sample: "12398475619283746501"
commands:
  description: The C(zfs) argument lists that changed (or in check mode would change) the host.
  returned: always
  type: list
  elements: list
  sample: [["snapshot", "tank/nomad/volumes@before-upgrade"]]
"""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._snapshot_plan import READ, plan
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_module import ZfsModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_names import is_snapshot_short_name, is_under


def validate(module):
    """The snapshot's dataset; fails, naming the field, before any zfs call."""
    p = module.params
    dataset, at, short = p['name'].partition('@')
    if not at or not is_snapshot_short_name(short):
        raise PlanError(
            'name %r is not a snapshot: give <dataset>@<short name>, for example tank/data@before.' % p['name']
        )
    module.check_name('name', dataset)
    if p['parent_guard'] is not None:
        module.check_name('parent_guard')
        if not is_under(dataset, p['parent_guard'], allow_equal=True):
            raise PlanError(
                'name %r is outside parent_guard %r; choose a snapshot of %s or of a dataset under it.'
                % (p['name'], p['parent_guard'], p['parent_guard'])
            )
    return dataset


def work(module):
    p = module.params
    dataset = validate(module)
    props = module.zfs.get([dataset, p['name']], READ)[0]
    commands = plan(p['name'], p['state'], props)
    module.apply(commands)
    result = dict(changed=bool(commands), name=p['name'], commands=commands)
    if p['state'] == 'present':
        if commands and not module.check_mode:
            props = module.zfs.get([p['name']], READ)[0]
        if p['name'] in props:
            result['guid'] = props[p['name']]['guid'][0]
    if module._diff and commands:
        # A command always takes the snapshot from missing to present, or the other way.
        before, after = (None, p['name']) if p['state'] == 'present' else (p['name'], None)
        result['diff'] = dict(before=dict(snapshot=before), after=dict(snapshot=after))
    return result


def main():
    module = ZfsModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            state=dict(type='str', default='present', choices=['present', 'absent']),
            parent_guard=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: work(module)))


if __name__ == '__main__':
    main()
