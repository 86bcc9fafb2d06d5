# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""zfs_dataset's decisions, without running anything: the current state in, the zfs commands out.

Check mode reports what these planners predict; a real run applies their commands. So both answer alike.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import Plan, PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_names import is_under, parent_of, pool_of
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_props import (
    CREATION_ONLY,
    VOLUME_ONLY,
    is_user_property,
    values_equal,
)


def names_to_read(name):
    # type: (str) -> list[str]
    """The dataset, its parent and its pool: what plan_present needs, read in one zfs get."""
    names = [n for n in (name, parent_of(name), pool_of(name)) if n]
    return sorted(set(names), key=names.index)


def plan_present(name, kind, desired, inherit, found, create_parents=False):
    # type: (str, str, dict[str, str], list[str], dict[str, dict[str, tuple[str, str]]], bool) -> Plan
    """Commands that make name a kind with the desired local properties and the listed ones inherited.

    found is the zfs get of names_to_read(name): {dataset: {property: (value, source)}}.
    """
    pool, parent = pool_of(name), parent_of(name)
    if pool not in found:
        raise PlanError('pool %r does not exist on this host (zpool list shows the imported pools)' % pool)
    known = set(found[pool]) | set(found.get(name, {})) | VOLUME_ONLY
    unknown = sorted(p for p in list(desired) + list(inherit) if not is_user_property(p) and p not in known)
    if unknown:
        raise PlanError(
            'properties: unknown ZFS property %s; see `man zfsprops` for valid names'
            % ', '.join(repr(u) for u in unknown)
        )
    if name not in found:
        return _create(name, kind, desired, parent, parent in found or not parent, create_parents)
    return _update(name, kind, desired, inherit, found[name])


def _create(name, kind, desired, parent, parent_exists, create_parents):
    if not parent_exists and not create_parents:
        raise PlanError('parent %r does not exist; create it first or set create_parents: true' % parent)
    args = ['create'] + (['-p'] if create_parents else [])
    opts = dict(desired)
    if kind == 'volume':
        if 'volsize' not in opts:
            raise PlanError('properties.volsize is required to create a volume, e.g. volsize: 10G')
        args += ['-V', opts.pop('volsize')]
    elif set(opts) & VOLUME_ONLY:
        raise PlanError('properties: %s only apply to type=volume' % ', '.join(sorted(set(opts) & VOLUME_ONLY)))
    for prop in sorted(opts):
        args += ['-o', '%s=%s' % (prop, opts[prop])]
    return Plan(
        [args + [name]],
        before={'name': name, 'state': 'absent'},
        after={'name': name, 'state': 'present', 'type': kind, 'properties': dict(sorted(desired.items()))},
        predicted=dict((k, (v, 'local')) for k, v in desired.items()),
    )


def _update(name, kind, desired, inherit, current):
    actual_type = current.get('type', ('', ''))[0]
    if actual_type != kind:
        raise PlanError(
            '%s is a %s, not a %s; set type: %s or choose another name' % (name, actual_type, kind, actual_type)
        )
    fixed = sorted(
        prop
        for prop in desired
        if prop in CREATION_ONLY and not values_equal(prop, desired[prop], current.get(prop, (None, None))[0])
    )
    if fixed:
        raise PlanError(
            'properties: %s cannot change after creation (%s); create a new dataset and move the data '
            'to change it'
            % (
                ', '.join(fixed),
                ', '.join('%s is %s, wanted %s' % (f, current.get(f, ('-',))[0], desired[f]) for f in fixed),
            )
        )

    def is_local(prop):
        return current.get(prop, (None, ''))[1] == 'local'

    to_set = dict(
        (prop, value)
        for prop, value in desired.items()
        if prop not in CREATION_ONLY and not (is_local(prop) and values_equal(prop, value, current[prop][0]))
    )
    to_inherit = [prop for prop in inherit if is_local(prop)]
    commands = []
    if to_set:
        commands.append(['set'] + ['%s=%s' % (k, to_set[k]) for k in sorted(to_set)] + [name])
    commands += [['inherit', prop, name] for prop in to_inherit]  # zfs inherit takes one property per call
    local_before = dict((k, current[k][0]) for k in sorted(set(desired) | set(inherit)) if is_local(k))
    local_after = dict((k, v) for k, v in local_before.items() if k not in to_inherit)
    local_after.update(to_set)
    predicted = dict(current)
    predicted.update((k, (v, 'local')) for k, v in desired.items())
    for prop in inherit:
        predicted.pop(prop, None)
    return Plan(
        commands,
        before={'name': name, 'state': 'present', 'type': kind, 'properties': local_before},
        after={'name': name, 'state': 'present', 'type': kind, 'properties': dict(sorted(local_after.items()))},
        predicted=predicted,
    )


def plan_absent(name, listing, recursive=False):
    # type: (str, str | None, bool) -> Plan
    """The destroy of name, given `zfs list -Hp -r -t all -o name,clones name` (None when it does not exist)."""
    if listing is None:
        return Plan([], before={'name': name, 'state': 'absent'}, after={'name': name, 'state': 'absent'}, predicted={})
    children, snapshots, outside_clones = [], [], []
    for line in listing.splitlines():
        dataset, _tab, clones = line.partition('\t')
        if dataset == name:
            continue
        (snapshots if '@' in dataset else children).append(dataset)
        outside_clones += [c for c in clones.split(',') if c and c != '-' and not is_under(c, name, allow_equal=True)]
    if outside_clones:
        raise PlanError(
            '%s has snapshots that clones outside it depend on (%s); promote or destroy those clones '
            'first' % (name, ', '.join(sorted(outside_clones)))
        )
    if (children or snapshots) and not recursive:
        raise PlanError(
            '%s has %d child dataset(s) and %d snapshot(s) (%s); set recursive: true to destroy them '
            'too' % (name, len(children), len(snapshots), ', '.join((children + snapshots)[:5]))
        )
    return Plan(
        [['destroy'] + (['-r'] if recursive else []) + [name]],
        before={'name': name, 'state': 'present', 'children': children, 'snapshots': snapshots},
        after={'name': name, 'state': 'absent'},
        predicted={},
    )
