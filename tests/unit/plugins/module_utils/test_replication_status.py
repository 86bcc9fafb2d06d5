"""The replica's status from two real `zfs list -Hp -r -t filesystem,volume,snapshot,bookmark
-o name,guid,createtxg,creation,written` listings captured in the VM by tests/tools/capture-replication-listings.sh
(OpenZFS 2.3.2, syncoid 2.1.0 with --no-sync-snap --create-bookmark --recursive --skip-parent): v1 pulled twice and
written and snapshotted since; v2 made after the last pull; v3 with no snapshots (opted out); v4 pulled once and
snapshotted twice since with nothing written; v5 pulled once, snapshotted with nothing written, then written and
snapshotted."""

import json
import os
import subprocess

from ansible_collections.nomad_zfs.csi.plugins.module_utils._replication_status import (
    MOVE_SNAPSHOT,
    STATUS_DEPTH,
    STATUS_LIMIT,
    increment_bytes,
    load_status,
    parse_listing,
    pull_plan,
    pull_status,
    report,
    syncoid_excludes,
    unparsed,
    write_file,
)
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

PRIMARY = (FIXTURES / 'zfs_list_replication_primary_2.3.2.txt').read_text()
STANDBY = (FIXTURES / 'zfs_list_replication_standby_2.3.2.txt').read_text()
PARENT, TARGET = 'tank/it-src', 'backup/it-capture/tank/it-src'


def points(listing, dataset, kind):
    return [p['name'].split(dataset)[1] for p in parse_listing(listing)[dataset][kind]]


def created(volume, round_):
    return {p['name']: p['created'] for p in parse_listing(PRIMARY)[PARENT + '/' + volume]['snapshots']}[
        '%s/%s@autosnap_%d_hourly' % (PARENT, volume, round_)
    ]


def without(listing, text):
    return '\n'.join(line for line in listing.splitlines() if text not in line)


def by_name(status):
    return dict((v['name'].rsplit('/', 1)[1], v) for v in status['volumes'])


def test_the_listing_is_parsed_by_dataset_oldest_first_with_what_each_snapshot_wrote():
    assert points(PRIMARY, PARENT + '/v1', 'snapshots') == ['@autosnap_%d_hourly' % n for n in (1, 2, 3)]
    assert points(PRIMARY, PARENT + '/v1', 'bookmarks') == ['#autosnap_1_hourly', '#autosnap_2_hourly']
    assert parse_listing(PRIMARY)[PARENT] == {'snapshots': [], 'bookmarks': []}
    v4 = parse_listing(PRIMARY)[PARENT + '/v4']
    assert [p['written'] for p in v4['snapshots']][1:] == [0, 0] and v4['snapshots'][0]['written'] > 0
    assert [p['written'] for p in v4['bookmarks']] == [None]


def test_each_volume_reports_its_newest_points_and_its_recovery_point():
    now = created('v5', 4) + 100
    status = report(PRIMARY, STANDBY, PARENT, TARGET, now)
    volumes = by_name(status)
    v1 = volumes['v1']
    assert (v1['name'], v1['replica'], v1['replica_exists']) == (PARENT + '/v1', TARGET + '/v1', True)
    assert v1['newest_source']['name'] == PARENT + '/v1@autosnap_3_hourly'
    assert v1['newest_replica']['name'] == TARGET + '/v1@autosnap_2_hourly'
    assert v1['newest_common']['name'] == TARGET + '/v1@autosnap_2_hourly'
    assert (v1['in_sync'], v1['lag_seconds'], v1['behind']) == (False, now - created('v1', 2), 1)
    v2 = volumes['v2']
    assert (v2['replica_exists'], v2['newest_replica'], v2['newest_common'], v2['lag_seconds'], v2['in_sync']) == (
        False,
        None,
        None,
        None,
        False,
    )
    assert volumes['v3']['newest_source'] is None
    # v4's two later snapshots wrote nothing: its replica holds the newest data, as old as the newest snapshot.
    v4 = volumes['v4']
    assert (v4['in_sync'], v4['lag_seconds'], v4['behind']) == (True, now - created('v4', 4), 2)
    # v5's replica holds what its third snapshot holds, not what its fourth wrote.
    v5 = volumes['v5']
    assert (v5['in_sync'], v5['lag_seconds'], v5['behind']) == (False, now - created('v5', 3), 2)
    # v2 was never pulled, so the worst lag is unknown, and says so.
    assert (status['lag_seconds'], status['not_replicated'], status['without_snapshots']) == (
        None,
        [PARENT + '/v2'],
        [PARENT + '/v3'],
    )


def test_the_worst_lag_over_the_volumes_with_snapshots():
    now = created('v5', 4) + 60
    assert report(without(PRIMARY, '/v2'), STANDBY, PARENT, TARGET, now)['lag_seconds'] == now - created('v1', 2)


def test_a_bookmark_keeps_the_common_point_after_the_snapshot_was_pruned():
    v1 = by_name(report(without(PRIMARY, 'v1@autosnap_2_hourly'), STANDBY, PARENT, TARGET, 0))['v1']
    assert v1['newest_common']['name'] == TARGET + '/v1@autosnap_2_hourly'
    assert v1['lag_seconds'] == 0  # never negative, even against a clock behind the primary's


def test_no_common_point_when_the_primary_has_neither_snapshot_nor_bookmark():
    gone = without(PRIMARY, 'v1@autosnap_2_hourly')
    gone = without(gone, 'v1#autosnap_2_hourly')
    v1 = by_name(report(gone, STANDBY, PARENT, TARGET, 0))['v1']
    assert v1['newest_common']['name'] == TARGET + '/v1@autosnap_1_hourly'
    gone = without(without(gone, 'v1@autosnap_1_hourly'), 'v1#autosnap_1_hourly')
    v1 = by_name(report(gone, STANDBY, PARENT, TARGET, 0))['v1']
    assert v1['newest_common'] is None and v1['behind'] == 1


def test_only_a_snapshot_the_primary_still_has_vouches_for_the_ones_after_it():
    # With v4's pulled snapshot pruned to a bookmark, nothing says what the later ones wrote since.
    v4 = by_name(report(without(PRIMARY, 'v4@autosnap_1_hourly'), STANDBY, PARENT, TARGET, 0))['v4']
    assert v4['newest_common']['name'] == TARGET + '/v4@autosnap_1_hourly' and not v4['in_sync']
    # A volume made anew on the primary under the same names (other guids) is not in sync either.
    guid = parse_listing(PRIMARY)[PARENT + '/v4']['snapshots'][0]['guid']
    made_anew = PRIMARY.replace('\t%s\t' % guid, '\t1%s\t' % guid)
    assert not by_name(report(made_anew, STANDBY, PARENT, TARGET, 0))['v4']['in_sync']


def test_a_pull_leaves_out_the_volumes_in_sync_and_those_without_snapshots():
    left_out, to_send = pull_plan(PRIMARY, STANDBY, PARENT, TARGET)
    assert [n.rsplit('/', 1)[1] for n in left_out] == ['v3', 'v4']
    assert [n.rsplit('/', 1)[1] for n in to_send] == ['v1', 'v2', 'v5']
    # As zfs_replication_info reports them: what the pull leaves out is what it calls in sync.
    in_sync = [v['name'] for v in report(PRIMARY, STANDBY, PARENT, TARGET, 0)['volumes'] if v['in_sync']]
    assert in_sync == [PARENT + '/v4']


def test_a_pull_always_sends_a_moves_final_snapshot_and_a_name_no_dataset_has():
    # v4 in sync, then a move's final snapshot that wrote nothing: the move looks for its guid on the replica.
    final = '%s/v4@%s2026-11-27_10:00:00\t77\t1860\t1795761800\t0\n' % (PARENT, MOVE_SNAPSHOT)
    assert PARENT + '/v4' in pull_plan(PRIMARY + final, STANDBY, PARENT, TARGET)[1]
    odd = PRIMARY.replace(PARENT + '/v4', PARENT + '/v4|.*')
    assert PARENT + '/v4|.*' in pull_plan(odd, STANDBY.replace('/v4', '/v4|.*'), PARENT, TARGET)[1]


def perl_excluded(excludes, names):
    """The names syncoid 2.1.0's getchilddatasets leaves out: `$dataset =~ /$_/` for each --exclude, in Perl."""
    script = (
        'my ($x, $n) = @ARGV; my @e = @{decode_json($x)};'
        'print encode_json([grep { my $d = $_; grep { $d =~ /$_/ } @e } @{decode_json($n)}]);'
    )
    patterns = [e[len('--exclude=') :] for e in excludes]
    run = subprocess.run(['perl', '-MJSON::PP', '-e', script, json.dumps(patterns), json.dumps(names)],
                         capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(run.stdout)


def test_the_excludes_match_in_perl_exactly_the_datasets_left_out():
    left_out = ['tank/nomad/volumes/team-a/db.1', 'tank/nomad/volumes/team-a/web:2'] + [
        'tank/nomad/volumes/ns-%03d/v' % i for i in range(250)
    ]
    others = ['tank/nomad/volumes/team-a/dbx1', 'tank/nomad/volumes/team-a/db.10', 'tank/nomad/volumes/team-a']
    others += ['tank/nomad/volumes/ns-000/v/child', 'tank/nomad/volumes/ns-0000/v', 'xtank/nomad/volumes/ns-001/v']
    excludes = syncoid_excludes(left_out)
    assert len(excludes) == 3 and max(len(e) for e in excludes) < 131072
    assert sorted(perl_excluded(excludes, left_out + others)) == sorted(left_out)
    assert syncoid_excludes([]) == []


def written(listing, snapshot):
    return [p for p in parse_listing(listing)[snapshot.split('@')[0]]['snapshots'] if p['name'] == snapshot][0][
        'written'
    ]


def test_a_pulls_status_has_each_volumes_recovery_point_and_the_bytes_it_received():
    # Before the pull the replica lacked v1's second snapshot, and v2.
    before = without(without(STANDBY, 'v1@autosnap_2_hourly'), '/v2')
    grown = increment_bytes(before, STANDBY)
    assert grown[TARGET + '/v1'] == written(STANDBY, TARGET + '/v1@autosnap_2_hourly') > 0
    assert grown[TARGET + '/v4'] == 0
    finished = created('v5', 4) + 100
    status = pull_status((PRIMARY, before, STANDBY), PARENT, TARGET, finished, 0, {'last_success': 5})
    assert (status['failed'], status['last_success'], status['finished']) == (False, finished, finished)
    volumes = dict((v['name'].rsplit('/', 1)[1], v) for v in status['volumes'])
    # The recovery point is zfs_replication_info's, from the same report: its lag is finished minus it.
    reported = by_name(report(PRIMARY, STANDBY, PARENT, TARGET, finished))
    for name in ('v1', 'v4', 'v5'):
        assert finished - volumes[name]['recovery_point'] == reported[name]['lag_seconds'], name
        assert volumes[name]['replica'] == TARGET + '/' + name
    assert volumes['v4']['recovery_point'] == created('v4', 4)  # its later snapshots wrote nothing
    assert volumes['v1']['last_increment_bytes'] == grown[TARGET + '/v1']
    assert volumes['v2']['recovery_point'] is None and volumes['v3']['recovery_point'] is None


def test_a_failed_pull_keeps_the_last_success_and_what_it_knows_of_the_replicas():
    previous = {'last_success': 1700000000, 'volumes': [{'name': PARENT + '/v1', 'replica': TARGET + '/v1',
                                                         'recovery_point': 1690000000}, 'junk']}  # fmt: skip
    # Neither side listed after it (the replica's pool, say): the volumes of the pull before, so their lag grows.
    status = pull_status((None, None, None), PARENT, TARGET, 1700000900, 1, previous)
    assert (status['failed'], status['exit_code'], status['last_success']) == (True, 1, 1700000000)
    assert status['volumes'] == [
        {'name': PARENT + '/v1', 'replica': TARGET + '/v1', 'recovery_point': 1690000000, 'last_increment_bytes': None}
    ]
    # The primary did not answer: each replica's newest snapshot is its recovery point (primary_lost's).
    # What the replication user wrote before: volumes that are not a list are none.
    assert pull_status((None, None, None), PARENT, TARGET, 1700000900, 1, {'volumes': 5})['volumes'] == []
    status = pull_status((None, None, STANDBY), PARENT, TARGET, 1700000900, 255, {'last_success': 'yesterday'})
    assert status['last_success'] is None
    v4 = [v for v in status['volumes'] if v['name'] == PARENT + '/v4'][0]
    newest = parse_listing(STANDBY)[TARGET + '/v4']['snapshots'][-1]['created']
    assert (v4['recovery_point'], v4['last_increment_bytes']) == (newest, None)


def test_a_status_file_is_read_only_as_a_small_regular_json_object(tmp_path):
    good = tmp_path / 'good.json'
    good.write_text(json.dumps({'finished': 1}))
    assert load_status(str(good)) == ({'finished': 1}, None)
    assert load_status(str(tmp_path / 'none.json')) == (None, None)
    # The replication user owns the directory: a link to a file the reader may read, a FIFO that would block it.
    os.symlink(str(good), str(tmp_path / 'link.json'))
    os.mkfifo(str(tmp_path / 'fifo.json'))
    (tmp_path / 'big.json').write_text(' ' * STATUS_LIMIT + '{}')
    (tmp_path / 'list.json').write_text('[1]')
    (tmp_path / 'bad.json').write_text('{')
    for name in ('link', 'fifo', 'big', 'list', 'bad'):
        status, why = load_status(str(tmp_path / (name + '.json')))
        assert status is None and why, name


def test_a_status_file_the_collector_cannot_take_is_refused_and_never_raises(tmp_path):
    """The replication user writes what it likes: nesting that json.loads would recurse into until RecursionError, a
    lone surrogate that no UTF-8 output holds (as an escape, or as its raw bytes, which strict UTF-8 refuses), a number
    too long for int(). Each is refused with a reason, as what is not JSON."""
    forged = {
        'nested': b'{"volumes": ' + b'[' * 100000 + b']' * 100000 + b'}',
        'nested-braces': b'{"a": ' * 100000 + b'1' + b'}' * 100000,
        'nested-to-the-limit': b'[{' * (STATUS_LIMIT // 4) + b'}]' * (STATUS_LIMIT // 4),
        'unpaired': b'{"volumes": [}',
        'escaped-surrogate': b'{"volumes": [{"name": "tank/nomad/csi/\\ud800", "recovery_point": 1}]}',
        'surrogate-key': b'{"\\udfff": 1}',
        'raw-surrogate': b'{"volumes": [{"name": "tank/nomad/csi/\xed\xa0\x80", "recovery_point": 1}]}',
        'latin-1': b'{"volumes": [{"name": "tank/nomad/csi/caf\xe9"}]}',
        'huge-number': b'{"finished": 1' + b'0' * 100000 + b'}',
    }
    for name, data in forged.items():
        (tmp_path / (name + '.json')).write_bytes(data)
        status, why = load_status(str(tmp_path / (name + '.json')))
        assert status is None and why, name
    assert 'nests deeper than %d' % STATUS_DEPTH in load_status(str(tmp_path / 'nested.json'))[1]
    # As deep as allowed, and text that is not ASCII, is a status; a level more is not.
    deepest = '{"a": %s1%s, "name": "tank/caf\u00e9 \u2603"}' % ('[' * (STATUS_DEPTH - 1), ']' * (STATUS_DEPTH - 1))
    (tmp_path / 'deepest.json').write_text(deepest, encoding='utf-8')
    assert load_status(str(tmp_path / 'deepest.json')) == (json.loads(deepest), None)
    (tmp_path / 'deeper.json').write_text('[%s]' % deepest, encoding='utf-8')
    assert load_status(str(tmp_path / 'deeper.json'))[0] is None


def test_a_line_zfs_would_not_list_is_found_and_left_out():
    """The primary's listing comes through SSH: a line with too few fields, or a figure that is not a number (a
    superscript digit passes str.isdigit() but not int()), would end the pull before it writes its status."""
    bad = ['garbage', PARENT + '/v1@x\t1\t2', PARENT + '/v1@x\tg\t1\t1\t0', PARENT + '/v1@x\t1\t\u00b2\t1\t0', '']
    for line in bad:
        listing = PRIMARY + line + '\n'
        assert unparsed(listing) == line, line
        assert parse_listing(listing) == parse_listing(PRIMARY), line
    assert unparsed(PRIMARY) is None and unparsed(STANDBY) is None and unparsed('') is None
    # A written that is no number is a bookmark's: none.
    assert parse_listing(PARENT + '/v1#b\t7\t3\t4\t-\n')[PARENT + '/v1']['bookmarks'][0]['written'] is None


def test_a_file_is_written_whole_or_not_at_all(tmp_path):
    path = tmp_path / 'status.json'
    path.write_text('old')
    write_file(str(path), '{"finished": 1}')
    assert (path.read_text(), oct(path.stat().st_mode & 0o777), os.listdir(str(tmp_path))) == (
        '{"finished": 1}',
        '0o644',
        ['status.json'],
    )
    try:
        write_file(str(path), None)  # fails while writing: the old file stays, and no temporary one
    except TypeError:
        pass
    assert path.read_text() == '{"finished": 1}' and os.listdir(str(tmp_path)) == ['status.json']
