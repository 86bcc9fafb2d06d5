"""_host_volume_source.plan: the source of a move frozen and marked, kept in or left out of the target's pulls,
and put back; each from what a run stopped midway left, in `zfs get -H -p -o name,property,value,source` form."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_source import plan
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_cli import parse_get

DATASET = 'tank/nomad/volumes/default/pg'
FINAL = 'nomad-zfs-csi-move_2026-11-26_10:00:00'
MARKED = dict(dataset=DATASET, state='marked', moved_to='nzc-b', final=FINAL, in_pulls=True)


def got(readonly=('off', 'default'), snapshots=('-', '-'), moved=('-', '-'), sync=('-', '-'), final=False):
    rows = [
        (DATASET, 'readonly') + readonly,
        (DATASET, 'com.sun:auto-snapshot') + snapshots,
        (DATASET, 'nomad-zfs-csi:moved-to') + moved,
        (DATASET, 'syncoid:sync') + sync,
        (DATASET, 'guid', '111', '-'),
    ]
    if final:
        rows.append((DATASET + '@' + FINAL, 'guid', '222', '-'))
    return parse_get(''.join('\t'.join(row) + '\n' for row in rows))


def test_a_live_volume_is_frozen_marked_and_snapshotted_in_that_order():
    assert plan(MARKED, got()) == [
        ['set', 'com.sun:auto-snapshot=false', 'nomad-zfs-csi:moved-to=nzc-b', 'readonly=on', DATASET],
        ['snapshot', DATASET + '@' + FINAL],
    ]


def test_a_run_stopped_after_it_left_the_pulls_is_put_back_into_them_and_snapshots_once():
    frozen = dict(readonly=('on', 'local'), snapshots=('false', 'local'), moved=('nzc-b', 'local'))
    assert plan(MARKED, got(sync=('false', 'local'), **frozen)) == [
        ['inherit', 'syncoid:sync', DATASET],
        ['snapshot', DATASET + '@' + FINAL],
    ]
    assert plan(MARKED, got(final=True, **frozen)) == []


def test_once_the_replica_holds_the_final_snapshot_it_leaves_the_pulls():
    frozen = dict(readonly=('on', 'local'), snapshots=('false', 'local'), moved=('nzc-b', 'local'), final=True)
    left = dict(MARKED, final=None, in_pulls=False)
    assert plan(left, got(**frozen)) == [['set', 'syncoid:sync=false', DATASET]]
    assert plan(left, got(sync=('false', 'local'), **frozen)) == []


def test_given_up_it_inherits_what_the_move_set_and_nothing_else():
    unmarked = dict(dataset=DATASET, state='unmarked')
    marked = got(
        readonly=('on', 'local'), snapshots=('false', 'local'), moved=('nzc-b', 'local'), sync=('false', 'local')
    )
    assert plan(unmarked, marked) == [
        ['inherit', prop, DATASET]
        for prop in ('readonly', 'com.sun:auto-snapshot', 'nomad-zfs-csi:moved-to', 'syncoid:sync')
    ]
    assert plan(unmarked, got(readonly=('on', 'inherited from tank/nomad'))) == []


def test_a_missing_dataset_is_named_and_nothing_planned():
    with pytest.raises(PlanError, match='%s does not exist.*Nothing was changed' % DATASET):
        plan(MARKED, {})
