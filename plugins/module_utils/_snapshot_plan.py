# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""One snapshot, present or absent: zfs_snapshot's planner. Pure: the module reads with one zfs get.

Only the named snapshot is ever destroyed (never -r or -R), and only when nothing depends on it: a clone made from
it, or a hold, is named in the refusal, so that what the destroy would take with it is the operator's decision.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

# Read with one zfs get of the dataset and the snapshot.
READ = ('guid', 'clones', 'userrefs')


def plan(name, state, props):
    """The zfs commands (argv after `zfs`) that bring snapshot `name` (dataset@short) to state.

    props: the parse_get of the dataset and the snapshot, {name: {property: (value, source)}}.
    """
    dataset = name.split('@', 1)[0]
    snapshot = props.get(name)
    if state == 'present':
        if snapshot is not None:
            return []
        if dataset not in props:
            raise PlanError(
                'name %r: the dataset %s does not exist; create it first (nomad_zfs.csi.zfs_dataset). '
                'Nothing was changed.' % (name, dataset)
            )
        return [['snapshot', name]]
    if snapshot is None:
        return []
    clones = snapshot.get('clones', ('', '-'))[0]
    if clones not in ('', '-'):
        raise PlanError(
            '%s has clones (%s), which a destroy would need to take too; promote them (zfs promote) or destroy '
            'them first. Nothing was changed.' % (name, clones)
        )
    holds = snapshot.get('userrefs', ('0', '-'))[0]
    if holds not in ('0', '-'):
        raise PlanError(
            '%s is held (%s holds; zfs holds %s names them); release them (zfs release) first. Nothing was '
            'changed.' % (name, holds, name)
        )
    return [['destroy', name]]
