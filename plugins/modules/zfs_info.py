#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: zfs_info
short_description: Report ZFS datasets under a root, with property sources, snapshots and delegations
version_added: 0.1.0
description:
  - Lists the datasets at and under O(name) with their properties and where each value
    comes from (local, inherited, default, received), their snapshots, and optionally the
    permissions delegated on each dataset itself.
  - Sizes and counts are returned as integers.
  - Uses one C(zfs) process for all properties, plus one per dataset for permissions when
    O(permissions=true).
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes.info_module
options:
  name:
    description: The root dataset to report, for example C(tank/nomad/csi).
    type: str
    required: true
  depth:
    description:
      - How many levels under O(name) to report. V(0) is O(name) alone; V(-1) means no limit.
    type: int
    default: -1
  types:
    description: Dataset types to report. Snapshots are listed under the dataset they belong to.
    type: list
    elements: str
    choices: [filesystem, volume, snapshot]
    default: [filesystem, volume, snapshot]
  properties:
    description: Properties to report. Empty means all of them.
    type: list
    elements: str
    default: []
  permissions:
    description: Also report each filesystem's and volume's own C(zfs allow) grants.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Everything under the delegated parent, with delegations
  nomad_zfs.csi.zfs_info:
    name: tank/nomad/csi
    permissions: true
  register: csi

- name: Quotas of the direct children only
  nomad_zfs.csi.zfs_info:
    name: tank/nomad/csi
    depth: 1
    types: [filesystem, volume]
    properties: [refquota, used]
"""

RETURN = r"""
datasets:
  description: The datasets found, parents before children.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Dataset name.
      type: str
      sample: tank/nomad/csi/vol1
    type:
      description: C(filesystem) or C(volume).
      type: str
      sample: filesystem
    properties:
      description:
        - Property to C(value) and C(source); integers for numeric values, null for C(-).
        - C(inherited_from) names the ancestor when C(source) is C(inherited).
      type: dict
      sample: {"refquota": {"value": 1073741824, "source": "local"}}
    snapshots:
      description: Snapshots of this dataset, each with its properties.
      type: list
      elements: dict
      sample: [{"name": "tank/nomad/csi/vol1@daily", "properties": {"used": {"value": 0, "source": "none"}}}]
    permissions:
      description: The dataset's own delegated permissions, as M(nomad_zfs.csi.zfs_permissions) returns them.
      type: dict
      returned: when O(permissions=true)
exists:
  description: Whether O(name) exists.
  returned: always
  type: bool
  sample: true
"""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_allow import empty_grants, parse_allow, to_plain
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_cli import properties_with_sources
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_module import ZfsModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_props import (
    PropertyError,
    canonical_name,
    check_name_format,
)


def read(module, props, wanted):
    """Every dataset under name with its properties, snapshots and (optionally) delegations."""
    p = module.params
    found, missing = module.zfs.get([p['name']], properties=wanted, types=p['types'], depth=p['depth'])
    if missing:
        return dict(changed=False, exists=False, datasets=[])
    datasets, by_name = [], {}
    for name in sorted(found, key=lambda n: (n.split('@')[0].split('/'), n)):
        raw = found[name]
        kind = raw.get('type', ('',))[0]
        shown = dict((k, v) for k, v in raw.items() if k != 'type' or not props or 'type' in props)
        props_out = properties_with_sources(shown, typed=True)
        if kind == 'snapshot':
            parent = by_name.get(name.split('@')[0])
            if parent is not None:
                parent['snapshots'].append({'name': name, 'properties': props_out})
            continue
        entry = {'name': name, 'type': kind, 'properties': props_out, 'snapshots': []}
        if p['permissions']:
            entry['permissions'] = to_plain(parse_allow(module.zfs.run(['allow', name])[1]).get(name, empty_grants()))
        by_name[name] = entry
        datasets.append(entry)
    return dict(changed=False, exists=True, datasets=datasets)


def check_input(module):
    """The canonical property names asked for; refuses bad input, naming the field, before any zfs call."""
    p = module.params
    module.check_name('name')
    if p['depth'] < -1:
        raise PlanError('depth must be -1 (no limit) or a level count of 0 or more')
    try:
        props = [canonical_name(x) for x in p['properties']]
        for prop in props:
            if prop != 'all':
                check_name_format(prop)
    except PropertyError as e:
        raise PlanError('properties: %s' % e)
    return props


def main():
    module = ZfsModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            depth=dict(type='int', default=-1),
            types=dict(
                type='list',
                elements='str',
                default=['filesystem', 'volume', 'snapshot'],
                choices=['filesystem', 'volume', 'snapshot'],
            ),
            properties=dict(type='list', elements='str', default=[]),
            permissions=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    props = module.run(lambda: check_input(module))
    # `type` is always read, to tell filesystems from volumes and snapshots.
    wanted = 'all' if not props or 'all' in props else ','.join(sorted(set(props) | {'type'}))
    module.exit_json(**module.run(lambda: read(module, props, wanted)))


if __name__ == '__main__':
    main()
