#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
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
'''

EXAMPLES = r'''
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
'''

RETURN = r'''
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
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nomad_zfs.csi.plugins.module_utils.zfs_cli import (
    Zfs, ZfsError, properties_with_sources)
from ansible_collections.nomad_zfs.csi.plugins.module_utils.zfs_names import (
    dataset_name_error, is_under, parent_of, pool_of)
from ansible_collections.nomad_zfs.csi.plugins.module_utils.zfs_props import (
    CREATION_ONLY, VOLUME_ONLY, PropertyError, canonical_name, check_property_name,
    is_user_property, normalize_properties, values_equal)


def validate(module):
    p = module.params
    name = p['name']
    error = dataset_name_error(name)
    if error:
        module.fail_json(msg='name %r %s' % (name, error))
    guard = p['parent_guard']
    if guard is not None:
        error = dataset_name_error(guard)
        if error:
            module.fail_json(msg='parent_guard %r %s' % (guard, error))
        if not is_under(name, guard, allow_equal=p['state'] == 'present'):
            module.fail_json(msg='name %r is outside parent_guard %r; choose a dataset under %s/'
                             % (name, guard, guard))
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
        module.fail_json(msg='properties: %s' % e)
    both = sorted(set(desired) & set(inherit))
    if both:
        module.fail_json(msg='%s is both in properties and in inherit; keep it in one of them' % ', '.join(both))
    if p['state'] == 'absent' and (desired or inherit):
        module.fail_json(msg='properties and inherit do not apply to state=absent; remove them')
    return desired, inherit


def fail_unknown(module, props, known):
    unknown = sorted(p for p in props if not is_user_property(p) and p not in known)
    if unknown:
        module.fail_json(msg='properties: unknown ZFS property %s; see `man zfsprops` for valid names'
                         % ', '.join(repr(u) for u in unknown))


def present(module, zfs, desired, inherit):
    p = module.params
    name, kind = p['name'], p['type']
    pool, parent = pool_of(name), parent_of(name)
    names = [n for n in (name, parent, pool) if n]
    names = sorted(set(names), key=names.index)
    found, _missing = zfs.get(names)
    if pool not in found:
        module.fail_json(msg="pool %r does not exist on this host (zpool list shows the imported pools)" % pool)
    known = set(found[pool]) | set(found.get(name, {})) | VOLUME_ONLY
    fail_unknown(module, list(desired) + inherit, known)

    commands = []
    if name not in found:
        if parent and parent not in found and not p['create_parents']:
            module.fail_json(msg='parent %r does not exist; create it first or set create_parents: true' % parent)
        args = ['create'] + (['-p'] if p['create_parents'] else [])
        opts = dict(desired)
        if kind == 'volume':
            if 'volsize' not in opts:
                module.fail_json(msg='properties.volsize is required to create a volume, e.g. volsize: 10G')
            args += ['-V', opts.pop('volsize')]
        elif set(opts) & VOLUME_ONLY:
            module.fail_json(msg='properties: %s only apply to type=volume'
                             % ', '.join(sorted(set(opts) & VOLUME_ONLY)))
        for prop in sorted(opts):
            args += ['-o', '%s=%s' % (prop, opts[prop])]
        commands.append(args + [name])
        before = {'name': name, 'state': 'absent'}
        after = {'name': name, 'state': 'present', 'type': kind, 'properties': dict(sorted(desired.items()))}
        current = {}
    else:
        current = found[name]
        actual_type = current.get('type', ('', ''))[0]
        if actual_type != kind:
            module.fail_json(msg='%s is a %s, not a %s; set type: %s or choose another name'
                             % (name, actual_type, kind, actual_type))
        fixed = sorted(prop for prop in desired if prop in CREATION_ONLY
                       and not values_equal(prop, desired[prop], current.get(prop, (None, None))[0]))
        if fixed:
            module.fail_json(msg='properties: %s cannot change after creation (%s); '
                                 'create a new dataset and move the data to change it'
                             % (', '.join(fixed), ', '.join('%s is %s, wanted %s' % (
                                 f, current.get(f, ('-',))[0], desired[f]) for f in fixed)))
        to_set = dict((prop, value) for prop, value in desired.items() if prop not in CREATION_ONLY and not (
            current.get(prop, (None, ''))[1] == 'local' and values_equal(prop, value, current[prop][0])))
        to_inherit = [prop for prop in inherit if current.get(prop, (None, ''))[1] == 'local']
        if to_set:
            commands.append(['set'] + ['%s=%s' % (k, to_set[k]) for k in sorted(to_set)] + [name])
        # zfs inherit takes one property per call.
        for prop in to_inherit:
            commands.append(['inherit', prop, name])
        managed = sorted(set(desired) | set(inherit))
        local_before = dict((k, current[k][0]) for k in managed if current.get(k, (None, ''))[1] == 'local')
        local_after = dict((k, v) for k, v in local_before.items() if k not in to_inherit)
        local_after.update(to_set)
        before = {'name': name, 'state': 'present', 'type': kind, 'properties': local_before}
        after = {'name': name, 'state': 'present', 'type': kind, 'properties': dict(sorted(local_after.items()))}

    if commands and not module.check_mode:
        for args in commands:
            zfs.run(args)
        current = zfs.get([name])[0].get(name, {})
    elif commands:
        current = dict(current)
        current.update((k, (v, 'local')) for k, v in desired.items())
        for prop in inherit:
            current.pop(prop, None)
    result = dict(changed=bool(commands), name=name, state='present', type=kind,
                  properties=properties_with_sources(current), commands=commands)
    if module._diff and commands:
        result['diff'] = {'before': before, 'after': after}
    return result


def absent(module, zfs):
    p = module.params
    name = p['name']
    if '/' not in name:
        module.fail_json(msg='%r is a pool root; zfs_dataset never destroys a pool (use zpool destroy)' % name)
    rc, out, err = zfs.run(['list', '-Hp', '-r', '-t', 'all', '-o', 'name,clones', name], check=False)
    if rc != 0:
        if 'dataset does not exist' in err:
            return dict(changed=False, name=name, state='absent', commands=[])
        raise ZfsError(['zfs', 'list', name], rc, err)
    children, snapshots, outside_clones = [], [], []
    for line in out.splitlines():
        dataset, _tab, clones = line.partition('\t')
        if dataset == name:
            continue
        (snapshots if '@' in dataset else children).append(dataset)
        for clone in clones.split(','):
            if clone and clone != '-' and not is_under(clone, name, allow_equal=True):
                outside_clones.append(clone)
    if outside_clones:
        module.fail_json(msg='%s has snapshots that clones outside it depend on (%s); promote or destroy '
                             'those clones first' % (name, ', '.join(sorted(outside_clones))))
    if (children or snapshots) and not p['recursive']:
        found = ', '.join((children + snapshots)[:5])
        module.fail_json(msg='%s has %d child dataset(s) and %d snapshot(s) (%s); set recursive: true to '
                             'destroy them too' % (name, len(children), len(snapshots), found))
    commands = [['destroy'] + (['-r'] if p['recursive'] else []) + [name]]
    if not module.check_mode:
        zfs.run(commands[0])
    result = dict(changed=True, name=name, state='absent', commands=commands)
    if module._diff:
        result['diff'] = {'before': {'name': name, 'state': 'present', 'children': children, 'snapshots': snapshots},
                          'after': {'name': name, 'state': 'absent'}}
    return result


def main():
    module = AnsibleModule(
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
    desired, inherit = validate(module)
    zfs = Zfs(module)
    try:
        if module.params['state'] == 'present':
            result = present(module, zfs, desired, inherit)
        else:
            result = absent(module, zfs)
    except ZfsError as e:
        module.fail_json(msg=str(e), stderr=e.stderr, rc=e.rc, cmd=e.argv)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
