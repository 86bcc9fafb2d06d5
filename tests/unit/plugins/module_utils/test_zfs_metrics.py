"""The metrics from a real `zfs list` and `zpool list` captured in the VM by tests/tools/capture-metrics-listings.sh
(OpenZFS 2.3.2): a CSI filesystem with a refquota and two snapshots, a CSI zvol, a CSI filesystem with no limit and no
democratic-csi property, a host volume under its namespace's dataset, and a parent that does not exist."""

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_metrics import (
    COLUMNS,
    POOL_STATES,
    VOLUME_METRICS,
    label_value,
    parse_datasets,
    render,
)
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

LISTING = (FIXTURES / 'zfs_list_metrics_2.3.2.txt').read_text()
POOLS = (FIXTURES / 'zpool_list_metrics_2.3.2.txt').read_text()
TOP = 'tank/it-metrics'
PARENTS = [('csi', TOP + '/csi'), ('host', TOP + '/host'), ('csi', TOP + '/missing')]
# The text format's sample line: a name, labels, a value (prometheus/common's expfmt reads no more than this here).
SAMPLE = re.compile(
    r'([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*)\} (-?[0-9.e+]+)\Z'
)


def samples(text):
    """{(name, ((label, value), ...)): value} of every sample line, each line checked against the format."""
    found = {}
    for line in text.splitlines():
        if line.startswith('#'):
            assert re.match(r'# (HELP|TYPE) [a-z_]+ ', line), line
            continue
        match = SAMPLE.match(line)
        assert match, line
        pairs = tuple(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', match.group(2)))
        found[(match.group(1), pairs)] = float(match.group(3))
    return found


def volume(dataset, kind, namespace, name):
    return (('dataset', TOP + dataset), ('kind', kind), ('namespace', namespace), ('volume', name))


def test_each_volume_has_its_figures_from_the_listing():
    got = samples(render(LISTING, POOLS, PARENTS))
    vol_a, vol_b = volume('/csi/vol-a', 'csi', '', 'vol-a'), volume('/csi/vol-b', 'csi', '', 'vol-b')
    web = volume('/host/ns1/web', 'host', 'ns1', 'web')
    assert got[('nomad_zfs_volume_quota_bytes', vol_a)] == 16 * 1024 * 1024  # refquota
    assert got[('nomad_zfs_volume_quota_bytes', vol_b)] == 64 * 1024 * 1024  # a zvol's volsize
    assert got[('nomad_zfs_volume_quota_bytes', web)] == 32 * 1024 * 1024
    assert (got[('nomad_zfs_volume_used_bytes', vol_a)], got[('nomad_zfs_volume_referenced_bytes', vol_a)]) == (
        1155072,
        1155072,
    )
    assert got[('nomad_zfs_volume_available_bytes', vol_a)] == 15622144
    assert got[('nomad_zfs_volume_snapshots', vol_a)] == 2 and got[('nomad_zfs_volume_snapshots', vol_b)] == 0
    # The newest of the two: @two, a second after @one.
    assert got[('nomad_zfs_volume_newest_snapshot_timestamp_seconds', vol_a)] == 1795889288
    assert got[('nomad_zfs_volume_newest_snapshot_timestamp_seconds', web)] == 1795889289
    # No snapshot, no limit: no sample rather than a made-up zero.
    assert ('nomad_zfs_volume_newest_snapshot_timestamp_seconds', vol_b) not in got
    vol_c = volume('/csi/vol-c', 'csi', '', 'vol-c')
    assert ('nomad_zfs_volume_quota_bytes', vol_c) not in got and ('nomad_zfs_volume_used_bytes', vol_c) in got


def test_only_volumes_are_reported_and_a_missing_parent_is_named():
    got = samples(render(LISTING, POOLS, PARENTS))
    reported = sorted(set(dict(labels)['dataset'] for (name, labels) in got if name == 'nomad_zfs_volume_used_bytes'))
    # Not the parents, not the namespace's dataset host/ns1, not the snapshots.
    assert reported == [TOP + '/csi/vol-a', TOP + '/csi/vol-b', TOP + '/csi/vol-c', TOP + '/host/ns1/web']
    exists = dict((dict(labels)['parent'], value) for (name, labels), value in got.items() if name.endswith('exists'))
    assert exists == {TOP + '/csi': 1, TOP + '/host': 1, TOP + '/missing': 0}


def test_each_pool_has_its_size_and_one_state_set():
    got = samples(render(LISTING, POOLS, PARENTS))
    assert got[('nomad_zfs_pool_size_bytes', (('pool', 'tank'),))] == 4026531840
    assert got[('nomad_zfs_pool_free_bytes', (('pool', 'tank'),))] == 4023590912
    assert got[('nomad_zfs_pool_allocated_bytes', (('pool', 'backup'),))] == 344064
    states = dict(
        (labels[1][1], value)
        for (name, labels), value in got.items()
        if name == 'nomad_zfs_pool_state' and labels[0] == ('pool', 'tank')
    )
    assert states == dict((state, 1 if state == 'online' else 0) for state in POOL_STATES)
    degraded = samples(render('', POOLS.replace('ONLINE', 'DEGRADED'), []))
    assert degraded[('nomad_zfs_pool_state', (('pool', 'tank'), ('state', 'degraded')))] == 1
    assert degraded[('nomad_zfs_pool_state', (('pool', 'tank'), ('state', 'online')))] == 0


def test_every_family_has_help_and_type_once_even_with_no_volume():
    text = render('', '', [])
    names = re.findall(r'^# TYPE (\S+) gauge$', text, re.M)
    assert len(names) == len(set(names)) == len(re.findall(r'^# HELP ', text, re.M)) == 11
    assert all(name.startswith('nomad_zfs_') for name in names)


def test_a_label_value_cannot_end_its_quotes_or_its_line():
    assert label_value('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    # A dataset's name may hold a space, which the label keeps.
    spaced = LISTING.replace(TOP + '/csi/vol-a', TOP + '/csi/vol a')
    got = samples(render(spaced, POOLS, PARENTS))
    assert got[('nomad_zfs_volume_quota_bytes', volume('/csi/vol a', 'csi', '', 'vol a'))] == 16 * 1024 * 1024


def test_the_listing_holds_no_value_that_a_dataset_owner_chooses():
    """A user property's value may hold a newline, and would add a line of its owner's to the listing (a snapshot
    of another tenant's volume, say); the columns are zfs's own figures and names only."""
    assert all(':' not in column for column in COLUMNS.split(','))
    figures = set(metric for metric, _help in VOLUME_METRICS)
    assert set(parse_datasets(LISTING)[TOP + '/csi/vol-a']) == figures | {'type'}


PULL = {'host': 'storage-1', 'parent': 'tank/nomad/csi', 'target': 'backup/replica/storage-1/tank/nomad/csi'}


def test_each_pull_and_replica_has_the_figures_of_its_status():
    status = {
        'finished': 1700000900, 'failed': True, 'last_success': 1700000000,
        'volumes': [{'name': 'tank/nomad/csi/db', 'recovery_point': 1699999000, 'last_increment_bytes': 4096},
                    {'name': 'tank/nomad/csi/new', 'recovery_point': None, 'last_increment_bytes': 0}],
    }  # fmt: skip
    other = dict(PULL, host='storage-2', target='backup/replica/storage-2/tank/nomad/csi')
    got = samples(render('', '', [], [(PULL, status, None), (other, None, None)]))
    pull = (('host', 'storage-1'), ('parent', PULL['parent']), ('target', PULL['target']))
    db = (('host', 'storage-1'), ('dataset', 'tank/nomad/csi/db'), ('replica', PULL['target'] + '/db'))
    assert got[('nomad_zfs_replica_last_pull_timestamp_seconds', pull)] == 1700000900
    assert got[('nomad_zfs_replica_last_pull_failed', pull)] == 1
    assert got[('nomad_zfs_replica_last_success_timestamp_seconds', pull)] == 1700000000
    assert got[('nomad_zfs_replica_recovery_point_timestamp_seconds', db)] == 1699999000
    assert got[('nomad_zfs_replica_last_increment_bytes', db)] == 4096
    assert not any(labels[1] == ('dataset', 'tank/nomad/csi/new') for name, labels in got if 'recovery' in name)
    assert got[('nomad_zfs_replica_status_unreadable', pull)] == 0
    # A pull that has not run yet is configured, its file not refused (there is none), with no figure: no made-up zero.
    labels = (('host', 'storage-2'), ('parent', other['parent']), ('target', other['target']))
    assert dict((k, v) for k, v in got.items() if ('host', 'storage-2') in k[1]) == {
        ('nomad_zfs_replica_pull_configured', labels): 1,
        ('nomad_zfs_replica_status_unreadable', labels): 0,
    }


def test_a_status_yields_only_its_own_volumes_figures_once():
    """The replication user writes the status: names outside the pull's parent, a name twice (which would fail the
    whole textfile scrape), a quote or newline in a name, and figures that are not whole numbers are of no use."""
    status = {
        'finished': 'now', 'failed': 'no', 'last_success': -1,
        'volumes': [
            {'name': 'tank/nomad/csi/db', 'recovery_point': 1, 'last_increment_bytes': 1.5},
            {'name': 'tank/nomad/csi/db', 'recovery_point': 2},
            {'name': 'tank/nomad/volumes/default/other', 'recovery_point': 3},
            {'name': 'tank/nomad/csi-x/db', 'recovery_point': 4},
            {'name': 'tank/nomad/csi/x"} 1\nnomad_zfs_pool_state{pool="tank",state="online', 'recovery_point': 5},
            {'name': ['tank/nomad/csi/list']}, 'text',
        ],
    }  # fmt: skip
    text = render('', '', [], [(PULL, status, None)])
    got = samples(text)  # every line is a sample of the format
    recovery = dict((k[1][1][1], v) for k, v in got.items() if k[0].endswith('recovery_point_timestamp_seconds'))
    evil = status['volumes'][4]['name']
    assert recovery == {'tank/nomad/csi/db': 1, label_value(evil): 5}
    assert [k[0] for k in got if k[0].startswith('nomad_zfs_replica_last_')] == []
    assert not any(line.startswith('nomad_zfs_pool_state') for line in text.splitlines())


def test_a_refused_status_is_said_so_and_every_other_metric_stays():
    """load_status refused the pull's file (why): the pull says so, with no figure of it; the pools, the volumes and
    the other pulls are as ever. A figure too long for a float would fail the exporter's whole scrape: none."""
    other = dict(PULL, host='storage-2', target='backup/replica/storage-2/tank/nomad/csi')
    fine = {
        'finished': 1700000900, 'failed': False, 'last_success': 10**400,
        'volumes': [{'name': 'tank/nomad/csi/db', 'recovery_point': 2**64, 'last_increment_bytes': 2**64 - 1}],
    }  # fmt: skip
    got = samples(
        render(LISTING, POOLS, PARENTS, [(PULL, None, 'b_storage-1.json nests deeper than 8'), (other, fine, None)])
    )
    expected = samples(render(LISTING, POOLS, PARENTS))
    for pull, name, value in [
        (PULL, 'pull_configured', 1), (PULL, 'status_unreadable', 1),
        (other, 'pull_configured', 1), (other, 'status_unreadable', 0),
        (other, 'last_pull_timestamp_seconds', 1700000900), (other, 'last_pull_failed', 0),
    ]:  # fmt: skip
        labels = (('host', pull['host']), ('parent', pull['parent']), ('target', pull['target']))
        expected[('nomad_zfs_replica_' + name, labels)] = value
    db = (('host', 'storage-2'), ('dataset', 'tank/nomad/csi/db'), ('replica', other['target'] + '/db'))
    expected[('nomad_zfs_replica_last_increment_bytes', db)] = float(2**64 - 1)  # as the exporter reads it
    assert got == expected
