#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: zfs_permissions
short_description: Delegate ZFS permissions with zfs allow and zfs unallow
version_added: 0.1.0
description:
  - Grants and revokes delegated ZFS permissions on one dataset, for users, groups or
    everyone, at local, descendent or both scopes, plus create-time permissions and
    permission sets.
  - Reads the dataset's own section of C(zfs allow) only; grants held on ancestors are
    returned separately and never changed.
  - Runs one C(zfs) process when nothing differs, and writes only the differences.
  - Refuses to delegate on a pool's root dataset unless O(allow_pool_root=true).
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
options:
  name:
    description: Dataset to delegate on, for example C(tank/nomad/csi).
    type: str
    required: true
  users:
    description: Users to grant O(permissions) to. Each must exist on the host.
    type: list
    elements: str
    default: []
  groups:
    description: Groups to grant O(permissions) to. Each must exist on the host.
    type: list
    elements: str
    default: []
  everyone:
    description: Grant O(permissions) to everyone (C(zfs allow -e)).
    type: bool
    default: false
  permissions:
    description:
      - Permission names (subcommands such as C(create) and C(snapshot), or property names)
        and permission sets (C(@name)).
      - With O(state=absent) and no permissions, every permission of the named principals
        at O(scope) is removed.
    type: list
    elements: str
    default: []
  descendent_permissions:
    description:
      - Permissions granted on the dataset's descendents only (C(zfs allow -d)), on top of
        O(permissions) at O(scope).
      - For what the principals may do below the dataset but never to the dataset itself,
        such as C(destroy) on a delegated parent.
    type: list
    elements: str
    default: []
  scope:
    description:
      - Where the principals' permissions apply. V(local) is the dataset only (C(-l)),
        V(descendents) its descendents only (C(-d)), V(both) both.
    type: str
    choices: [local, descendents, both]
    default: both
  create_time:
    description:
      - Permissions granted to a dataset's creator on the datasets they create (C(zfs allow -c)).
    type: list
    elements: str
    default: []
  sets:
    description:
      - Permission sets, as a dictionary of C(@name) to a list of permissions (C(zfs allow -s)).
    type: dict
    default: {}
  state:
    description:
      - V(present) adds what is listed and keeps anything else.
      - V(absent) removes what is listed.
      - V(exact) adds what is listed and removes what is not, for the principals, sets and
        create-time list named in the task, or with O(exact_for=all) for everything on the dataset.
    type: str
    choices: [present, absent, exact]
    default: present
  exact_for:
    description:
      - With O(state=exact), V(named) limits removal to what the task names;
        V(all) also removes every other principal, set and create-time permission on the dataset.
    type: str
    choices: [named, all]
    default: named
  keep_users:
    description:
      - With O(exact_for=all), users whose grants on the dataset are left as they are, because another task
        manages them (for example the C(zfs_replication) role's user, whose C(send) sits beside the CSI
        plugin's user on its parent).
      - A user both kept and named in O(users) is refused.
    type: list
    elements: str
    default: []
    version_added: 0.2.0
  allow_pool_root:
    description:
      - Allow delegation on a pool's root dataset. Off by default for least privilege;
        delegate on a dedicated parent such as C(tank/nomad/csi) instead.
    type: bool
    default: false
notes:
  - On Linux, C(mount), C(unmount) and C(share) cannot really be delegated; the kernel
    requires root. Give the service user a narrow sudo rule for those.
seealso:
  - module: nomad_zfs.csi.zfs_dataset
"""

EXAMPLES = r"""
- name: Let the CSI service user manage datasets under the delegated parent
  nomad_zfs.csi.zfs_permissions:
    name: tank/nomad/csi
    users: [csi]
    permissions: [create, destroy, mount, snapshot, refquota, userprop]

- name: Exactly these grants for csi, whatever was there before
  nomad_zfs.csi.zfs_permissions:
    name: tank/nomad/csi
    users: [csi]
    permissions: ["@csi", create, mount]
    sets:
      "@csi": [clone, promote, snapshot]
    create_time: [destroy, snapshot]
    state: exact

- name: Remove every grant of a former user
  nomad_zfs.csi.zfs_permissions:
    name: tank/nomad/csi
    users: [olduser]
    state: absent
"""

RETURN = r"""
permissions:
  description:
    - The grants on the dataset itself after the task (predicted in check mode).
    - C(principals) is keyed by C(user NAME), C(group NAME) or C(everyone), each with the
      C(local) and C(descendent) permission lists.
  returned: always
  type: dict
  sample: {"sets": {"@csi": ["clone", "promote"]}, "create_time": ["destroy", "snapshot"],
           "principals": {"user csi": {"local": ["create", "mount"], "descendent": ["create", "mount"]}}}
inherited:
  description: Grants held on ancestors, which apply here too but are not changed by this module.
  returned: always
  type: dict
  sample: {"tank/nomad": {"sets": {}, "create_time": [], "principals": {"user ops": {"local": ["snapshot"]}}}}
commands:
  description: The C(zfs) argument lists that changed (or in check mode would change) the grants.
  returned: always
  type: list
  elements: list
  sample: [["allow", "-u", "csi", "create,mount", "tank/nomad/csi"]]
"""

import grp
import pwd

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_allow import (
    SCOPES,
    apply_plan,
    check_permission,
    empty_grants,
    parse_allow,
    plan,
    to_plain,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_cli import ZfsError, is_missing
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_module import ZfsModule


def _exists(lookup, name):
    if name.isdigit():
        return True
    try:
        lookup(name)
        return True
    except KeyError:
        return False


def validate(module):
    p = module.params
    module.check_name('name')
    if '/' not in p['name'] and not p['allow_pool_root']:
        raise PlanError(
            'name %r is a pool root; delegate on a dedicated child such as %s/nomad/csi, '
            'or set allow_pool_root: true' % (p['name'], p['name'])
        )
    for field, lookup in (('users', pwd.getpwnam), ('groups', grp.getgrnam)):
        for who in p[field]:
            if who and not _exists(lookup, who) and module.check_mode:
                # As Ansible's own modules do: an earlier task of the same play may create it.
                module.warn('%s: %r does not exist on this host; create it before this runs for real' % (field, who))
            elif not who or not _exists(lookup, who):
                raise PlanError('%s: %r does not exist on this host; create it first' % (field, who))
    both = sorted(set(p['keep_users']) & set(p['users']))
    if both:
        raise PlanError('keep_users: %s is also in users; a user is either managed here or kept' % ', '.join(both))
    for field in ('permissions', 'descendent_permissions', 'create_time'):
        for perm in p[field]:
            error = check_permission(perm)
            if error:
                raise PlanError('%s: %s' % (field, error))
    for set_name, perms in p['sets'].items():
        error = check_permission(set_name)
        if error or not set_name.startswith('@'):
            raise PlanError('sets: key %r must be a set name such as @csi' % set_name)
        if not isinstance(perms, list) or not perms:
            raise PlanError('sets: %s must be a non-empty list of permissions' % set_name)
        for perm in perms:
            error = check_permission(str(perm))
            if error:
                raise PlanError('sets: %s: %s' % (set_name, error))
    has_principal = p['users'] or p['groups'] or p['everyone']
    for field in ('permissions', 'descendent_permissions'):
        if p[field] and not has_principal:
            raise PlanError('%s need users, groups or everyone: true to be granted to' % field)
    if has_principal and not p['permissions'] and p['state'] != 'absent':
        raise PlanError(
            'permissions is empty; list what to grant (state=absent with no permissions '
            "removes all of a principal's grants)"
        )


def desired_grants(module, current):
    p = module.params
    grants = empty_grants()
    grants['sets'] = dict((k, set(str(v) for v in perms)) for k, perms in p['sets'].items())
    grants['create_time'] = set(p['create_time'])
    keys = [('user', u) for u in p['users']] + [('group', g) for g in p['groups']]
    if p['everyone']:
        keys.append(('everyone', ''))
    scopes = SCOPES[p['scope']]
    for key in keys:
        held = {'local': set(), 'descendent': set()}
        for scope in scopes:
            if p['permissions']:
                held[scope] = set(p['permissions'])
            else:  # state=absent with no permissions: everything the principal holds
                held[scope] = set(current['principals'].get(key, {}).get(scope, set()))
        held['descendent'] |= set(p['descendent_permissions'])
        grants['principals'][key] = held
    return grants


def check_sets_known(module, current, desired):
    known = set(current['sets']) | set(desired['sets'])
    named = module.params['permissions'] + module.params['descendent_permissions'] + module.params['create_time']
    used = set(p for p in named if p.startswith('@'))
    unknown = sorted(used - known)
    if unknown and module.params['state'] != 'absent':
        raise PlanError(
            'permissions: set %s is not defined on %s; define it under sets'
            % (', '.join(unknown), module.params['name'])
        )


def converge(module):
    """Read the grants, plan, apply unless in check mode; the module's result."""
    p = module.params
    name = p['name']
    rc, out, err = module.zfs.run(['allow', name], check=False)
    if rc != 0 and not is_missing(err):
        raise ZfsError(['zfs', 'allow', name], rc, err)
    if rc != 0 and not module.check_mode:
        raise PlanError('dataset %r does not exist; create it first (nomad_zfs.csi.zfs_dataset)' % name)
    if rc != 0:
        # Check mode: an earlier task of the same play may create it, with no grants of its own.
        module.warn('dataset %r does not exist; its grants are predicted as on a new dataset' % name)
        out = ''
    sections = parse_allow(out)
    current = sections.pop(name, empty_grants())
    desired = desired_grants(module, current)
    check_sets_known(module, current, desired)
    keep = frozenset(('user', who) for who in p['keep_users'])
    commands = [cmd + [name] for cmd in plan(current, desired, p['state'], p['exact_for'] == 'all', keep)]
    if module.apply(commands):
        after = parse_allow(module.zfs.run(['allow', name])[1]).get(name, empty_grants())
    else:
        after = apply_plan(current, [cmd[:-1] for cmd in commands])
    result = dict(
        changed=bool(commands),
        permissions=to_plain(after),
        commands=commands,
        inherited=dict((k, to_plain(v)) for k, v in sorted(sections.items())),
    )
    if module._diff and commands:
        result['diff'] = {'before': to_plain(current), 'after': to_plain(after)}
    return result


def main():
    module = ZfsModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            users=dict(type='list', elements='str', default=[]),
            groups=dict(type='list', elements='str', default=[]),
            everyone=dict(type='bool', default=False),
            permissions=dict(type='list', elements='str', default=[]),
            descendent_permissions=dict(type='list', elements='str', default=[]),
            scope=dict(type='str', default='both', choices=['local', 'descendents', 'both']),
            create_time=dict(type='list', elements='str', default=[]),
            sets=dict(type='dict', default={}),
            state=dict(type='str', default='present', choices=['present', 'absent', 'exact']),
            exact_for=dict(type='str', default='named', choices=['named', 'all']),
            keep_users=dict(type='list', elements='str', default=[]),
            allow_pool_root=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    module.run(lambda: validate(module))
    module.exit_json(**module.run(lambda: converge(module)))


if __name__ == '__main__':
    main()
