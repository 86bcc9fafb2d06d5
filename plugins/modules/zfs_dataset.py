#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: zfs_dataset
short_description: Manage ZFS filesystems and volumes, including a delegated parent
version_added: 0.1.0
description:
  - Creates, changes and destroys ZFS filesystems and volumes (zvols).
  - Desired values are normalised before they are compared, so C(10G), C(10GiB) and
    C(10737418240) are the same size, C(true) is C(on), and aliases such as C(compress)
    and C(recsize) name the same property as C(compression) and C(recordsize).
  - Only locally set values count as set; a value that is merely inherited is set locally.
  - When nothing differs, a task runs exactly one C(zfs) process. Changed properties
    are written with one C(zfs set).
  - Destroying never uses C(zfs destroy -R). A dataset with children or snapshots is
    destroyed only with O(recursive=true), and never when clones outside it depend on it.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
options:
  name:
    description:
      - Full dataset name, for example C(tank/nomad/csi).
      - Letters, digits, C(_), C(-), C(.) and C(:) only; spaces are refused on purpose.
    type: str
    required: true
  state:
    description:
      - V(present) creates the dataset if needed and converges its properties.
      - V(absent) destroys it, subject to the guards described for O(recursive).
    type: str
    choices: [present, absent]
    default: present
  type:
    description:
      - Kind of dataset. A V(volume) needs C(volsize) in O(properties) when it is created.
      - An existing dataset of the other kind is an error, never converted.
    type: str
    choices: [filesystem, volume]
    default: filesystem
  properties:
    description:
      - Properties to set locally, as a dictionary of name to value.
      - Sizes accept C(10G), C(10GiB), C(1.5T), C(4k), plain bytes, and C(none) for quotas and reservations.
      - Booleans become C(on) and C(off).
      - Creation-only properties (C(encryption), C(keyformat), C(pbkdf2iters), C(casesensitivity),
        C(normalization), C(utf8only), C(volblocksize)) are passed to C(zfs create); a different
        value on an existing dataset fails with a message instead of a useless C(zfs set).
      - User properties (C(module:name)) are allowed. Values are passed as argv, never through a shell.
    type: dict
    default: {}
  inherit:
    description:
      - Properties to return to their inherited value with C(zfs inherit), when they are set locally.
      - A property cannot be both in O(properties) and in O(inherit).
    type: list
    elements: str
    default: []
  create_parents:
    description:
      - Create missing parent datasets (C(zfs create -p)).
    type: bool
    default: false
  recursive:
    description:
      - With O(state=absent), also destroy child datasets and snapshots (C(zfs destroy -r)).
      - Without it, a dataset that has children or snapshots is left alone and the task fails, naming them.
      - Clones that live outside the dataset block destruction in either case.
    type: bool
    default: false
  parent_guard:
    description:
      - Refuse any O(name) that is not under this dataset, before anything runs.
      - With O(state=present) the guard dataset itself is allowed; with O(state=absent) it is not.
    type: str
notes:
  - Runs on the host that has the pool. Needs OpenZFS 2.x C(zfs) on the target.
seealso:
  - module: nomad_zfs.csi.zfs_permissions
  - module: nomad_zfs.csi.zfs_info
"""

EXAMPLES = r"""
- name: Delegated parent for Nomad CSI volumes
  nomad_zfs.csi.zfs_dataset:
    name: tank/nomad/csi
    create_parents: true
    properties:
      quota: 100G
      compression: lz4
      atime: false
      com.example:owner: nomad

- name: A volume with a fixed block size
  nomad_zfs.csi.zfs_dataset:
    name: tank/nomad/csi/db0
    type: volume
    parent_guard: tank/nomad/csi
    properties:
      volsize: 10G
      volblocksize: 4k

- name: Return compression to the inherited value
  nomad_zfs.csi.zfs_dataset:
    name: tank/nomad/csi
    inherit: [compression]

- name: Destroy a dataset and its snapshots, never anything outside it
  nomad_zfs.csi.zfs_dataset:
    name: tank/nomad/csi/old
    state: absent
    recursive: true
    parent_guard: tank/nomad/csi
"""

RETURN = r"""
name:
  description: The dataset name.
  returned: always
  type: str
  sample: tank/nomad/csi
state:
  description: The state after the task (predicted in check mode).
  returned: always
  type: str
  sample: present
type:
  description: The dataset type.
  returned: when O(state=present)
  type: str
  sample: filesystem
properties:
  description:
    - Every property of the dataset after the task, with its value as C(zfs get -p) prints it
      and its source (C(local), C(default), C(inherited), C(received), C(temporary) or C(none)).
    - In check mode the values this task would set are shown as local.
  returned: when O(state=present)
  type: dict
  sample: {"quota": {"value": "10737418240", "source": "local"},
           "compression": {"value": "lz4", "source": "inherited", "inherited_from": "tank"}}
commands:
  description: The C(zfs) argument lists that changed (or in check mode would change) the host.
  returned: always
  type: list
  elements: list
  sample: [["set", "quota=10737418240", "tank/nomad/csi"]]
"""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._dataset_plan import (
    names_to_read,
    plan_absent,
    plan_present,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_cli import (
    ZfsError,
    is_missing,
    properties_with_sources,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_module import ZfsModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_names import is_under
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_props import (
    CREATION_ONLY,
    PropertyError,
    canonical_name,
    check_property_name,
    normalize_properties,
)


def validate(module):
    """The desired local properties and the ones to inherit; fails, naming the field, before any zfs call."""
    p = module.params
    name = p['name']
    module.check_name('name')
    if p['parent_guard'] is not None:
        module.check_name('parent_guard')
        if not is_under(name, p['parent_guard'], allow_equal=p['state'] == 'present'):
            raise PlanError(
                'name %r is outside parent_guard %r; choose a dataset under %s/'
                % (name, p['parent_guard'], p['parent_guard'])
            )
    if p['state'] == 'absent' and '/' not in name:
        raise PlanError('%r is a pool root; zfs_dataset never destroys a pool (use zpool destroy)' % name)
    try:
        desired = normalize_properties(p['properties'])
        inherit = []
        for raw in p['inherit']:
            prop = canonical_name(raw)
            check_property_name(prop)
            if prop in CREATION_ONLY:
                raise PropertyError('inherit: %r is fixed at creation and cannot be inherited' % prop)
            inherit.append(prop)
    except PropertyError as e:
        raise PlanError('properties: %s' % e)
    both = sorted(set(desired) & set(inherit))
    if both:
        raise PlanError('%s is both in properties and in inherit; keep it in one of them' % ', '.join(both))
    if p['state'] == 'absent' and (desired or inherit):
        raise PlanError('properties and inherit do not apply to state=absent; remove them')
    return desired, inherit


def present(module, desired, inherit):
    p = module.params
    name, kind = p['name'], p['type']
    found = module.zfs.get(names_to_read(name))[0]
    plan = plan_present(name, kind, desired, inherit, found, p['create_parents'])
    if module.apply(plan.steps):
        current = module.zfs.get([name])[0].get(name, {})
    else:
        current = plan.predicted if plan.steps else found[name]
    result = dict(
        changed=bool(plan.steps),
        name=name,
        state='present',
        type=kind,
        properties=properties_with_sources(current),
        commands=plan.steps,
    )
    if module._diff and plan.steps:
        result['diff'] = {'before': plan.before, 'after': plan.after}
    return result


def absent(module):
    name = module.params['name']
    rc, listing, err = module.zfs.run(['list', '-Hp', '-r', '-t', 'all', '-o', 'name,clones', name], check=False)
    if rc != 0 and not is_missing(err):
        raise ZfsError(['zfs', 'list', name], rc, err)
    plan = plan_absent(name, listing if rc == 0 else None, module.params['recursive'])
    module.apply(plan.steps)
    result = dict(changed=bool(plan.steps), name=name, state='absent', commands=plan.steps)
    if module._diff and plan.steps:
        result['diff'] = {'before': plan.before, 'after': plan.after}
    return result


def main():
    module = ZfsModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            state=dict(type='str', default='present', choices=['present', 'absent']),
            type=dict(type='str', default='filesystem', choices=['filesystem', 'volume']),
            properties=dict(type='dict', default={}),
            inherit=dict(type='list', elements='str', default=[]),
            create_parents=dict(type='bool', default=False),
            recursive=dict(type='bool', default=False),
            parent_guard=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    desired, inherit = module.run(lambda: validate(module))
    if module.params['state'] == 'present':
        result = module.run(lambda: present(module, desired, inherit))
    else:
        result = module.run(lambda: absent(module))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
