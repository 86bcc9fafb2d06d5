"""_host_volume_standby.plan: a node's copy made the standby of the volume's new source, for every state a run
(maybe stopped midway) leaves, and every refusal. Listings are in `zfs list -H -p` form, as the module reads them."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_standby import (
    VOLUME_ONLY,
    aside_name,
    parse_listing,
    plan,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

COPY = 'nodeb/nomad/volumes/default/pg'
REPLICA = 'nodeb/replica/127.0.0.1/tank/nomad/volumes/default/pg'
COMMON = 'autosnap_2026-11-26_01:00:00_hourly'
ASIDE = COPY + '.diverged-after-' + COMMON
P = dict(dataset=COPY, replica=REPLICA, common=COMMON, common_guid='222', moved_to='nzc-a')


def row(name, kind='filesystem', guid='1', origin='-', written='0', mounted='yes', moved='-'):
    return '\t'.join([name, kind, guid, origin, written, mounted if kind == 'filesystem' else '-', moved])


def snap(dataset, short, guid):
    return row('%s@%s' % (dataset, short), kind='snapshot', guid=guid, written='0')


def listing(*rows):
    return parse_listing('\n'.join(rows) + '\n')


@pytest.mark.parametrize('guid', ['222', None], ids=['by-guid', 'by-name'])
def test_a_copy_that_stopped_at_the_common_snapshot_is_renamed_into_place(guid):
    got = plan(
        dict(P, common_guid=guid), listing(row(COPY), snap(COPY, 'autosnap_0', '111'), snap(COPY, COMMON, '222'))
    )
    assert got['commands'] == [['unmount', COPY], ['rename', '-u', COPY, REPLICA]] + [
        ['inherit', prop, REPLICA] for prop in VOLUME_ONLY
    ]
    assert (got['aside'], got['diverged']) == (None, False)


@pytest.mark.parametrize(
    'rows',
    [
        pytest.param([row(COPY), snap(COPY, COMMON, '222'), snap(COPY, 'autosnap_later', '333')], id='snapshot'),
        pytest.param([row(COPY, written='40960'), snap(COPY, COMMON, '222')], id='written'),
    ],
)
def test_a_copy_that_wrote_after_it_is_kept_aside_and_a_promoted_clone_becomes_the_replica(rows):
    got = plan(P, listing(*rows))
    assert got['commands'] == [
        ['unmount', COPY],
        ['set', 'nomad-zfs-csi:moved-to=nzc-a', 'readonly=on', COPY],
        ['clone', COPY + '@' + COMMON, REPLICA],
        ['promote', REPLICA],
        ['rename', '-u', COPY, ASIDE],
    ]
    assert (got['standby'], got['aside'], got['diverged']) == (REPLICA, ASIDE, True)
    assert aside_name(COPY, COMMON) == ASIDE


def test_stopped_after_the_clone_it_promotes_and_sets_the_copy_aside():
    got = plan(
        P,
        listing(
            row(COPY, mounted='no', moved='nzc-a'),
            snap(COPY, COMMON, '222'),
            snap(COPY, 'autosnap_later', '333'),
            row(REPLICA, origin=COPY + '@' + COMMON, mounted='no'),
        ),
    )
    assert got['commands'] == [['promote', REPLICA], ['rename', '-u', COPY, ASIDE]]


def test_stopped_after_the_promotion_it_sets_the_copy_aside():
    got = plan(
        P,
        listing(
            row(COPY, mounted='no', moved='nzc-a', origin=REPLICA + '@' + COMMON),
            snap(COPY, 'autosnap_later', '333'),
            row(REPLICA, mounted='no'),
            snap(REPLICA, COMMON, '222'),
        ),
    )
    assert got['commands'] == [['rename', '-u', COPY, ASIDE]] and got['aside'] == ASIDE


def test_stopped_after_the_rename_into_place_it_drops_what_the_replica_kept_of_the_volume():
    rows = listing(row(REPLICA, mounted='no'), snap(REPLICA, COMMON, '222'))
    got = plan(P, rows, replica_local=['readonly', 'syncoid:sync'])
    assert got['commands'] == [['inherit', 'syncoid:sync', REPLICA], ['inherit', 'readonly', REPLICA]]
    assert got['aside'] is None


@pytest.mark.parametrize('aside', [True, False])
def test_run_again_after_the_last_step_it_changes_nothing(aside):
    rows = [row(REPLICA, mounted='no'), snap(REPLICA, COMMON, '222')]
    if aside:
        rows += [row(ASIDE, mounted='no', moved='nzc-a', origin=REPLICA + '@' + COMMON)]
    got = plan(P, listing(*rows))
    assert got['commands'] == [] and got['diverged'] is aside and got['aside'] == (ASIDE if aside else None)


@pytest.mark.parametrize(
    'rows,replica,message',
    [
        ([], REPLICA, 'There is neither a copy %s nor a replica %s on this node' % (COPY, REPLICA)),
        (
            [row(COPY), snap(COPY, 'autosnap_0', '111')],
            REPLICA,
            '%s has no snapshot %s (guid 222), which the volume on nzc-a started from' % (COPY, COMMON),
        ),
        (
            [row(COPY), snap(COPY, COMMON, '222')],
            'other/replica/pg',
            'are in different pools, and zfs renames and clones only within one',
        ),
        (
            [row(COPY), snap(COPY, COMMON, '222'), row(REPLICA, origin='nodeb/else@x')],
            REPLICA,
            '%s exists and is a clone of nodeb/else@x' % REPLICA,
        ),
        (
            [row(COPY), snap(COPY, COMMON, '222'), row(REPLICA), snap(REPLICA, COMMON, '999')],
            REPLICA,
            '%s exists and has no snapshot %s (guid 222)' % (REPLICA, COMMON),
        ),
        (
            [row(COPY), snap(COPY, COMMON, '222'), snap(COPY, 'later', '333'), row(ASIDE)],
            REPLICA,
            '%s exists already; rename it, then run again' % ASIDE,
        ),
    ],
    ids=['nothing', 'no-common', 'two-pools', 'foreign-clone', 'replica-without-common', 'aside-taken'],
)
def test_refusals_name_the_way_out_and_plan_nothing(rows, replica, message):
    with pytest.raises(PlanError) as e:
        plan(dict(P, replica=replica), listing(*rows))
    assert message in str(e.value) and str(e.value).endswith('Nothing was changed.')
