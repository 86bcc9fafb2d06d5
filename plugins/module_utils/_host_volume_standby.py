# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""A node's copy of a host volume made the standby of the node that holds the volume now: after a planned move
(the copy stopped at the move's final snapshot) or after a failover (the lost node's copy may hold writes the
new source never got).

The standby's replica is the pull target's dataset for the volume. It must hold the snapshot the new source
started from (the common one), and nothing after it, so that the next pull sends only the increment:

- a copy with nothing after the common snapshot is renamed into place;
- a copy that diverged is kept whole: a clone of its common snapshot, promoted, becomes the replica (the
  snapshots up to the common one go with it), and the copy, with what it wrote after, is renamed aside beside
  the volume's name, read-only and marked as moved, so that the plugin never offers it again. Nothing is rolled
  back or destroyed.

Each step leaves a state that the same plan, run again on a fresh read, goes on from. Pure: the module reads.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_node import MOVED, SNAPSHOTS, SYNC
from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_node import parse_listing as parse_node_listing
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_names import pool_of

# What `zfs list -o` reads of the copy, the replica and the aside one and of their snapshots, in this order.
COLUMNS = ('name', 'type', 'guid', 'origin', 'written', 'mounted', MOVED)
# What a replica keeps of its life as a volume and must not keep: the moved mark, the move's sync and snapshot
# switches, and its read-only flag (the replica parent's own applies).
VOLUME_ONLY = (MOVED, SYNC, SNAPSHOTS, 'readonly')


def aside_name(dataset, common):
    """Where a diverged copy is kept: beside the volume, named for the snapshot after which it wrote on its own."""
    return '%s.diverged-after-%s' % (dataset, common)


def parse_listing(text):
    """`zfs list -H -p -o <COLUMNS>` output as {name: {column: value}}; '-' is None."""
    return parse_node_listing(text, COLUMNS)


def _snapshots(listing, dataset):
    """(short name, guid) of the dataset's snapshots, in the order zfs lists them (by creation with -s)."""
    return [(name.split('@', 1)[1], props['guid']) for name, props in listing.items() if name.startswith(dataset + '@')]


def _refuse(message):
    raise PlanError(message + ' Nothing was changed.')


def _is_common(p, short, guid):
    # Without a guid, the name: a planned move's own final snapshot, which only the move makes.
    return guid == p['common_guid'] if p.get('common_guid') else short == p['common']


def _has_common(listing, dataset, p):
    return any(_is_common(p, short, guid) for short, guid in _snapshots(listing, dataset))


def _set_aside(p, listing, aside):
    """The copy, still at the volume's name, moved out of the way with everything it holds."""
    copy = listing[p['dataset']]
    if aside in listing:
        _refuse('%s exists already; rename it, then run again: the copy %s goes there.' % (aside, p['dataset']))
    commands = [['unmount', p['dataset']]] if copy['mounted'] == 'yes' else []
    if copy[MOVED] != p['moved_to']:
        commands.append(['set', '%s=%s' % (MOVED, p['moved_to']), 'readonly=on', p['dataset']])
    return commands + [['rename', '-u', p['dataset'], aside]]


def plan(p, listing, replica_local=()):
    """The zfs commands (argv after `zfs`) that make p['replica'] the standby, and what they make.

    p: dataset (the copy at the volume's name), replica (the pull target's dataset for the volume), common (the
    short name of the snapshot the volume's new source has) and common_guid (or None: the name decides),
    moved_to (the volume's node, for the mark on a copy set aside). listing: parse_listing of the three datasets
    and their snapshots. replica_local: the VOLUME_ONLY properties set locally on the replica.
    """
    dataset, replica = p['dataset'], p['replica']
    aside = aside_name(dataset, p['common'])
    copy, standby = listing.get(dataset), listing.get(replica)
    commands, diverged = [], False
    if standby is None:
        if copy is None:
            _refuse(
                'There is neither a copy %s nor a replica %s on this node: start its pull, which sends the volume '
                'whole.' % (dataset, replica)
            )
        if not _has_common(listing, dataset, p):
            _refuse(
                '%s has no snapshot %s (guid %s), which the volume on %s started from: it cannot go on '
                'incrementally. Rename it aside by hand, then start the pull, which sends the volume whole.'
                % (dataset, p['common'], p.get('common_guid') or 'any', p['moved_to'])
            )
        if pool_of(dataset) != pool_of(replica):
            _refuse(
                '%s and the replica %s are in different pools, and zfs renames and clones only within one. Rename '
                'the copy aside by hand, then start the pull, which sends the volume whole.' % (dataset, replica)
            )
        diverged = not _is_common(p, *_snapshots(listing, dataset)[-1]) or copy['written'] not in (None, '0')
        if not diverged:
            commands += [['unmount', dataset]] if copy['mounted'] == 'yes' else []
            commands += [['rename', '-u', dataset, replica]]
            commands += [['inherit', prop, replica] for prop in VOLUME_ONLY]
            return dict(commands=commands, standby=replica, aside=None, diverged=False)
        commands += _set_aside(p, listing, aside)[:-1]
        commands += [['clone', '%s@%s' % (dataset, p['common']), replica], ['promote', replica]]
        commands += [['rename', '-u', dataset, aside]]
        return dict(commands=commands, standby=replica, aside=aside, diverged=True)
    # A replica is there: made by an earlier run (maybe stopped midway), or by a pull.
    origin = standby['origin']
    if origin is not None:
        if origin not in ('%s@%s' % (dataset, p['common']), '%s@%s' % (aside, p['common'])):
            _refuse(
                '%s exists and is a clone of %s, not of %s@%s; rename or destroy it by hand, then run again.'
                % (replica, origin, dataset, p['common'])
            )
        commands.append(['promote', replica])
        diverged = True
    elif not _has_common(listing, replica, p):
        _refuse(
            '%s exists and has no snapshot %s (guid %s), which the volume on %s started from; its pull cannot go on '
            'incrementally. Rename or destroy it by hand, then run again.'
            % (replica, p['common'], p.get('common_guid') or 'any', p['moved_to'])
        )
    if copy is not None:
        commands += _set_aside(p, listing, aside)
        diverged = True
    commands += [['inherit', prop, replica] for prop in VOLUME_ONLY if prop in replica_local]
    kept = diverged or aside in listing
    return dict(commands=commands, standby=replica, aside=aside if kept else None, diverged=kept)
