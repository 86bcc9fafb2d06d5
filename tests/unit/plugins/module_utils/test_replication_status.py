"""The replica's status from two real `zfs list -Hp -r -t filesystem,volume,snapshot,bookmark -o name,guid,creation`
listings, captured in the VM (OpenZFS 2.3.2) after two runs of syncoid 2.1.0 with --no-sync-snap --create-bookmark
--recursive --skip-parent: v1 pulled twice and snapshotted once more since, v2 made after the last pull, v3 with no
snapshots (opted out)."""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._replication_status import parse_listing, report
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

PRIMARY = (FIXTURES / 'zfs_list_replication_primary_2.3.2.txt').read_text()
STANDBY = (FIXTURES / 'zfs_list_replication_standby_2.3.2.txt').read_text()
PARENT, TARGET = 'tank/it-src', 'standby/replica/127.0.0.1/tank/it-src'


def points(listing, dataset, kind):
    return [p['name'].split(dataset)[1] for p in parse_listing(listing)[dataset][kind]]


def test_the_listing_is_parsed_by_dataset_oldest_first():
    assert points(PRIMARY, PARENT + '/v1', 'snapshots') == ['@autosnap_%d_hourly' % n for n in (1, 2, 3)]
    assert points(PRIMARY, PARENT + '/v1', 'bookmarks') == ['#autosnap_1_hourly', '#autosnap_2_hourly']
    assert parse_listing(PRIMARY)[PARENT] == {'snapshots': [], 'bookmarks': []}


def test_each_volume_reports_its_newest_points_and_lag():
    created = {p['name']: p['created'] for p in parse_listing(PRIMARY)[PARENT + '/v1']['snapshots']}
    now = created[PARENT + '/v1@autosnap_3_hourly'] + 100
    status = report(PRIMARY, STANDBY, PARENT, TARGET, now)
    v1, v2, v3 = status['volumes']
    assert (v1['name'], v1['replica'], v1['replica_exists']) == (PARENT + '/v1', TARGET + '/v1', True)
    assert v1['newest_source']['name'] == PARENT + '/v1@autosnap_3_hourly'
    assert v1['newest_replica']['name'] == TARGET + '/v1@autosnap_2_hourly'
    assert v1['newest_common']['name'] == TARGET + '/v1@autosnap_2_hourly'
    assert v1['lag_seconds'] == now - created[PARENT + '/v1@autosnap_2_hourly']
    assert v1['behind'] == 1
    assert (v2['replica_exists'], v2['newest_replica'], v2['newest_common'], v2['lag_seconds']) == (
        False,
        None,
        None,
        None,
    )
    assert v3['newest_source'] is None
    # v2 was never pulled, so the worst lag is unknown, and says so.
    assert (status['lag_seconds'], status['not_replicated'], status['without_snapshots']) == (
        None,
        [PARENT + '/v2'],
        [PARENT + '/v3'],
    )


def test_the_worst_lag_over_the_volumes_with_snapshots():
    without_v2 = '\n'.join(line for line in PRIMARY.splitlines() if '/v2' not in line)
    created = parse_listing(PRIMARY)[PARENT + '/v1']['snapshots'][1]['created']
    assert report(without_v2, STANDBY, PARENT, TARGET, created + 60)['lag_seconds'] == 60


def test_a_bookmark_keeps_the_common_point_after_the_snapshot_was_pruned():
    pruned = '\n'.join(line for line in PRIMARY.splitlines() if '@autosnap_2_hourly' not in line)
    v1 = report(pruned, STANDBY, PARENT, TARGET, 0)['volumes'][0]
    assert v1['newest_common']['name'] == TARGET + '/v1@autosnap_2_hourly'
    assert v1['lag_seconds'] == 0  # never negative, even against a clock behind the primary's


def test_no_common_point_when_the_primary_has_neither_snapshot_nor_bookmark():
    gone = '\n'.join(line for line in PRIMARY.splitlines() if 'autosnap_2_hourly' not in line)
    v1 = report(gone, STANDBY, PARENT, TARGET, 0)['volumes'][0]
    assert v1['newest_common']['name'] == TARGET + '/v1@autosnap_1_hourly'
    gone = '\n'.join(line for line in gone.splitlines() if 'autosnap_1_hourly' not in line)
    v1 = report(gone, STANDBY, PARENT, TARGET, 0)['volumes'][0]
    assert v1['newest_common'] is None and v1['behind'] == 1
