"""nomad_host_volume_move_plan's main() with a fake Nomad client: who takes part in a move, what is refused before
any change, and, for a failover, when the lost node counts as fenced (never two writers)."""

import json

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_node import node_view, parse_listing
from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_host_volume_move_plan
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

NOW = 1795699200
S = 1000000000


def node(node_id, name, status='ready', down_since=NOW - 600, **fields):
    return dict(
        {
            'ID': node_id,
            'Name': name,
            'Status': status,
            'StatusUpdatedAt': down_since,
            'SchedulingEligibility': 'eligible',
            'DrainStrategy': None,
            'HTTPAddr': '127.0.0.1:4646',
            'Attributes': {'plugins.host_volume.zfs-dataset.version': '0.2.0'},
        },
        **fields,
    )


def allocation(alloc_id, status='running', volume='pgdata', stop_after=None, group='db'):
    """An allocation on the lost node as GET /v1/node/:id/allocations gives it: with the job version it runs."""
    tg = {'Name': group, 'Volumes': {'data': {'Name': 'data', 'Type': 'host', 'Source': volume}}}
    if stop_after is not None:
        tg['Disconnect'] = {'LostAfter': 0, 'StopOnClientAfter': stop_after * S, 'Replace': True}
    return {
        'ID': alloc_id,
        'JobID': 'pgdata-db',
        'TaskGroup': group,
        'ClientStatus': status,
        'Job': {'ID': 'pgdata-db', 'TaskGroups': [{'Name': 'other'}, tg]},
    }


VOLUME = {
    'ID': 'v1',
    'Name': 'pgdata',
    'Namespace': 'team-a',
    'NodeID': 'n1',
    'PluginID': 'zfs-dataset',
    'HostPath': '/tank/nomad/volumes/team-a/pgdata',
    'RequestedCapacityMaxBytes': 1 << 30,
    'Allocations': [
        {'ID': 'a1aaaaaa-0000', 'JobID': 'pgdata-db', 'JobVersion': 3, 'TaskGroup': 'db', 'ClientStatus': 'running'},
        # A rolling update under way: the newest version is the one the stop stops.
        {'ID': 'a2aaaaaa-0000', 'JobID': 'pgdata-db', 'JobVersion': 4, 'TaskGroup': 'db', 'ClientStatus': 'running'},
    ],
}


@pytest.fixture
def nomad(monkeypatch):
    monkeypatch.setattr(nomad_host_volume_move_plan.time, 'time', lambda: NOW)
    fake = FakeNomad(
        **{
            'volumes': [{'ID': 'v1', 'Name': 'pgdata'}, {'ID': 'v9', 'Name': 'pgdata-old'}],
            'volume/host/v1': VOLUME,
            'nodes': [{'ID': 'n1'}, {'ID': 'n2'}],
            'node/n1': node('n1', 'storage-1'),
            'node/n2': node('n2', 'storage-2'),
            'node/n1/allocations': [],
        }
    )
    return fake.install(monkeypatch)


def lost(nomad, status='down', down_since=NOW - 600, allocations=()):
    nomad.objects['node/n1'] = node('n1', 'storage-1', status, down_since)
    nomad.objects['node/n1/allocations'] = list(allocations)


def plan(run_main, **args):
    return run_main(
        nomad_host_volume_move_plan, dict({'name': 'pgdata', 'namespace': 'team-a', 'to': 'storage-2'}, **args)
    )


def refused(result, *words):
    assert result['failed'] and result['msg'].endswith(' Nothing was changed.'), result
    for word in words:
        assert word in result['msg'], result['msg']


def test_a_move_names_the_volume_both_nodes_and_the_jobs_to_stop(run_main, nomad):
    moved = plan(run_main, stop_jobs=True)
    assert moved['changed'] is False and moved['jobs'] == ['pgdata-db'] and 'fence' not in moved
    # A new move has stopped nothing yet.
    assert moved['stopped'] is None
    assert (moved['volume']['id'], moved['source']['name'], moved['target']['id']) == ('v1', 'storage-1', 'n2')
    assert moved['volume']['allocations'][0]['job_id'] == 'pgdata-db'
    assert nomad.writes() == []


def test_each_nodes_agent_is_named_at_its_advertised_address_unless_given(run_main, nomad):
    nomad.objects['node/n2']['HTTPAddr'] = '10.0.0.12:4646'
    advertised = plan(run_main, stop_jobs=True, nomad_addr='https://nomad.example:4646')
    assert advertised['source']['agent_addr'] == 'https://127.0.0.1:4646'
    assert advertised['target']['agent_addr'] == 'https://10.0.0.12:4646'
    given = plan(run_main, stop_jobs=True, agent_addrs={'storage-2': 'https://localhost:4646/'})
    assert (given['source']['agent_addr'], given['target']['agent_addr']) == (
        'http://127.0.0.1:4646',
        'https://localhost:4646',
    )
    bad = plan(run_main, stop_jobs=True, agent_addrs={'storage-2': 'localhost:4646'})
    assert bad['failed'] and bad['msg'].startswith("agent_addrs.storage-2 is 'localhost:4646'; give the URL"), bad
    assert nomad.writes() == []


def two_of_them(nomad):
    nomad.objects['volumes'].append({'ID': 'v2', 'Name': 'pgdata'})
    nomad.objects['volume/host/v2'] = dict(VOLUME, ID='v2', NodeID='n2')


@pytest.mark.parametrize(
    'change, args, words',
    [
        (lambda n: n.objects.update(volumes=[]), {}, ['Nomad has no host volume pgdata in namespace team-a']),
        (two_of_them, {}, ['pgdata is on several nodes']),
        (None, {'to': 'nowhere'}, ['Nomad has no node nowhere; name one of storage-1, storage-2']),
        (lambda n: n.objects['node/n2']['Attributes'].clear(), {}, ['does not report host volume plugin zfs-dataset']),
        (lambda n: n.objects['node/n2'].update(SchedulingEligibility='ineligible'), {},
         ['Node storage-2 is ready, ineligible; the jobs could not run there']),
        (lambda n: n.objects['node/n2'].update(DrainStrategy={'Deadline': 1}), {}, ['ready, eligible, draining']),
        (lambda n: n.objects['node/n1'].update(Status='down'), {'stop_jobs': True},
         ['node storage-1 is down: a planned move needs it', 'fail over instead']),
        (None, {}, ['pgdata is in use by pgdata-db (allocations a1aaaaaa, a2aaaaaa); set stop_jobs=true']),
        (None, {'failover': True}, ["node storage-1 is ready: move the volume with playbooks/move_host_volume.yml"]),
        (None, {'fence_margin': -1}, []),
    ],
    ids=['no-volume', 'several', 'no-target', 'no-plugin', 'ineligible', 'draining', 'source-down',
         'in-use', 'failover-of-ready', 'negative-margin'],
)  # fmt: skip
def test_what_cannot_move_is_refused_naming_the_way_out(run_main, nomad, change, args, words):
    if change:
        change(nomad)
    result = plan(run_main, **args)
    if args.get('fence_margin') == -1:
        assert result['failed'] and result['msg'] == 'fence_margin is -1; give 0 or more seconds.'
    else:
        refused(result, *words)
    assert nomad.writes() == []


def test_a_move_run_again_after_it_finished_has_nothing_left_to_do(run_main, nomad):
    done = plan(run_main, to='storage-1', stop_jobs=True)
    assert done['steps'] == [] and done['resumed'] is False and nomad.writes() == []


def test_a_journal_of_a_move_under_way_gives_the_steps_left_and_the_jobs_it_stopped(run_main, marked):
    first = plan(run_main, stop_jobs=True, source_read=source_read(), target_read=target_read())
    assert first['steps'] == ['stop', 'send', 'delete', 'create', 'start', 'turnaround'] and not first['resumed']
    assert first['journal_path'] == 'nomad-zfs-csi/moves/pgdata' and first['journal']['done'] == ''
    # Stopped after the delete in Nomad, before its record: the journal says send, Nomad says the volume is gone.
    marked.objects['var/nomad-zfs-csi/moves/pgdata'] = {'Items': first['journal_after']['send']}
    marked.objects['volumes'] = []
    again = plan(run_main, stop_jobs=True, source_read=source_read(listing=''), target_read=target_read())
    assert again['resumed'] and again['steps'] == ['create', 'start', 'turnaround'] and again['jobs'] == first['jobs']
    assert again['volume']['id'] == MARKED and again['data']['replica'] == REPLICA
    # The moved-from dataset was renamed already: the turnaround does not look for it again.
    assert again['data']['dataset_exists'] is False
    assert again['journal_after']['create']['done'] == 'stop,send,delete,create'
    refused(plan(run_main, stop_jobs=True, abort=True), 'can no longer be given up')
    refused(plan(run_main, to='storage-1'), 'A move of pgdata to storage-2 is under way')


def test_abort_needs_a_move_under_way(run_main, nomad):
    refused(plan(run_main, abort=True), 'No move of pgdata is under way')


def test_a_disconnected_node_is_refused_even_when_said_fenced(run_main, nomad):
    lost(nomad, 'disconnected', allocations=[allocation('a1', 'unknown')])
    for fenced in (False, True):
        refused(plan(run_main, failover=True, fenced=fenced), 'Node storage-1 is disconnected', 'disconnect.lost_after')


def test_a_down_node_whose_tasks_may_run_is_refused_with_both_ways_out(run_main, nomad):
    # Lost (the server's word) and running: either may still have live tasks. What ended on the client does not
    # count, nor a group that does not mount the volume.
    lost(nomad, allocations=[
        allocation('a1aaaaaa-1', 'lost'),
        allocation('a2aaaaaa-2', 'running', stop_after=10),
        allocation('a3aaaaaa-3', 'complete'),
        allocation('a4aaaaaa-4', 'running', volume='other'),
    ])  # fmt: skip
    result = plan(run_main, failover=True)
    refused(result, 'Node storage-1 is down, but its allocations a1aaaaaa (pgdata-db.db) may still be writing')
    refused(result, 'run again with -e fenced=true', 'stop_on_client_after = "<duration>"')
    assert 'a2aaaaaa' not in result['msg'] and 'a3aaaaaa' not in result['msg']


def test_a_down_node_with_no_recorded_allocation_is_refused(run_main, nomad):
    # None listed is not none running: they may have been collected, or the token may not read them.
    lost(nomad, allocations=[allocation('a3', 'failed')])
    refused(plan(run_main, failover=True), 'Nomad lists no allocation on node storage-1 that mounts pgdata')


def test_stop_on_client_after_fences_only_once_it_has_surely_passed(run_main, nomad):
    claims = [allocation('a1aaaaaa-1', 'lost', stop_after=30), allocation('a2aaaaaa-2', 'lost', stop_after=10)]
    # Twice the longest (30 s) plus the margin (30 s): 90 s.
    lost(nomad, down_since=NOW - 89, allocations=claims)
    refused(
        plan(run_main, failover=True), 'Node storage-1 has been down 89 s', 'certain 90 s after', 'Run again in 1 s'
    )
    lost(nomad, down_since=NOW - 90, allocations=claims)
    fence = plan(run_main, failover=True)['fence']
    assert (fence['how'], fence['down_seconds'], fence['needed_seconds']) == ('stop_on_client_after', 90, 90)
    assert [(c['id'], c['stop_on_client_after']) for c in fence['claims']] == [('a1aaaaaa-1', 30), ('a2aaaaaa-2', 10)]
    lost(nomad, down_since=NOW - 40, allocations=claims)
    refused(plan(run_main, failover=True, fence_margin=0), 'certain 60 s after')


def test_a_node_that_advertises_its_fence_watchdog_is_fenced_once_the_watchdog_surely_fenced(run_main, nomad):
    # fence_after 20: the watchdog has killed every task and made the volume read-only 125 s after the node went down
    # (zfs-fence's own count), whatever its groups say; plus the margin (30 s).
    claims = [allocation('a1aaaaaa-1', 'lost')]
    for down_for, left in ((154, 1), (100, 55)):
        lost(nomad, down_since=NOW - down_for, allocations=claims)
        nomad.objects['node/n1']['Meta'] = {
            'nomad_zfs_csi.fence_after': '20',
            'nomad_zfs_csi.fence_plugin': 'zfs-dataset',
        }
        refused(
            plan(run_main, failover=True),
            'Node storage-1 has been down %d s; its fence watchdog (fence_after 20 s) has surely fenced it 155 s'
            % down_for,
            '(fence_after, 105 s for the watchdog to notice and fence, and fence_margin). Run again in %d s' % left,
        )
    lost(nomad, down_since=NOW - 155, allocations=[])
    nomad.objects['node/n1']['Meta'] = {'nomad_zfs_csi.fence_after': '20', 'nomad_zfs_csi.fence_plugin': 'zfs-dataset'}
    fence = plan(run_main, failover=True)['fence']
    assert fence == dict(how='watchdog', claims=[], down_seconds=155, needed_seconds=155, fence_after=20)
    # stop_on_client_after, when it is sooner: 2 x 10 s + 30 s.
    lost(nomad, down_since=NOW - 50, allocations=[allocation('a1aaaaaa-1', 'lost', stop_after=10)])
    nomad.objects['node/n1']['Meta'] = {'nomad_zfs_csi.fence_after': '20', 'nomad_zfs_csi.fence_plugin': 'zfs-dataset'}
    assert plan(run_main, failover=True)['fence']['how'] == 'stop_on_client_after'
    # No watchdog of ours says less than 10 s, or anything but a number.
    for meta in ('9', '020', '20s', '', ' 20'):
        lost(nomad, down_since=NOW - 3600, allocations=claims)
        nomad.objects['node/n1']['Meta'] = {
            'nomad_zfs_csi.fence_after': meta,
            'nomad_zfs_csi.fence_plugin': 'zfs-dataset',
        }
        refused(plan(run_main, failover=True), 'may still be writing to pgdata', 'host_volume_plugin_fence_after')
    # A watchdog that fences another plugin's parent does not fence this volume.
    nomad.objects['node/n1']['Meta'] = {'nomad_zfs_csi.fence_after': '20', 'nomad_zfs_csi.fence_plugin': 'zfs-ssd'}
    refused(plan(run_main, failover=True), 'may still be writing to pgdata')


def test_the_operators_word_fences_a_down_node_and_a_gone_one(run_main, nomad):
    lost(nomad, down_since=NOW - 1, allocations=[allocation('a1', 'running')])
    result = plan(run_main, failover=True, fenced=True)
    assert result['fence']['how'] == 'fenced' and result['jobs'] == [] and result['source']['status'] == 'down'
    # A node Nomad no longer knows: only the operator can say that it writes no more.
    del nomad.objects['node/n1']
    refused(plan(run_main, failover=True), 'is gone, not down', 'fenced (-e fenced=true)')
    gone = plan(run_main, failover=True, fenced=True)
    assert gone['fence']['how'] == 'fenced' and gone['source'] == {'id': 'n1', 'name': '', 'status': 'gone'}


def test_the_planned_move_reads_no_allocation_of_a_node(run_main, nomad):
    plan(run_main, stop_jobs=True)
    assert not [c for c in nomad.calls if c[1].endswith('/allocations')]


# Both nodes' zfs_host_volume_info reads, from the listing captured in the VM: storage-1 holds the volume (parent
# tank/nomad/volumes), storage-2 its replica under tank/cap/replica.
CAPTURED = (FIXTURES / 'zfs_list_host_volume_node_2.3.2.txt').read_text()
MARKED = '6d0f7a5e-2c1b-4f7e-9a35-0c6a2f3b9e11'
REPLICA = 'tank/cap/replica/storage-1/tank/nomad/volumes/team-a/pgdata'


def pull(host, parent, target):
    return {'instance': target.replace('/', '_'), 'host': host, 'parent': parent, 'target': target}


def source_read(listing=CAPTURED, pulls=()):
    conf = {'parent': 'tank/nomad/volumes', 'replica_parent': 'tank/replica'}
    text = listing.replace('tank/cap/volumes', 'tank/nomad/volumes')
    return node_view(conf, list(pulls), parse_listing(text), 'team-a', 'pgdata')


def target_read(*pulls, replica_parent='tank/cap/replica', holds_volume=False):
    """storage-2's read: the captured replica, and the captured source as its own dataset of the volume only when
    it holds one (the volume is on it, or it is a node that came back after a failover)."""
    conf = {'parent': 'tank/cap/volumes', 'replica_parent': replica_parent}
    pulls = pulls or [pull('storage-1', 'tank/nomad/volumes', 'tank/cap/replica/storage-1/tank/nomad/volumes')]
    listing = parse_listing(CAPTURED)
    if not holds_volume:
        listing = dict((name, props) for name, props in listing.items() if not name.startswith('tank/cap/volumes/'))
    return node_view(conf, list(pulls), listing, 'team-a', 'pgdata')


@pytest.fixture
def marked(nomad):
    """The volume is the captured dataset's (its mark)."""
    nomad.objects['volume/host/v1'] = dict(VOLUME, ID=MARKED, Allocations=[])
    return nomad


def test_a_move_names_its_datasets_from_both_nodes_reads(run_main, marked):
    data = plan(run_main, source_read=source_read(), target_read=target_read())['data']
    assert (data['dataset'], data['replica'], data['adopt']) == (
        'tank/nomad/volumes/team-a/pgdata',
        REPLICA,
        'storage-1/tank/nomad/volumes',
    )
    assert (data['pull'], data['replica_host']) == ('tank_cap_replica_storage-1_tank_nomad_volumes', 'storage-1')
    assert data['back_pull'] is None and data['back_pulls'] == 0
    # The source pulls the target's parent into its replica parent: replication turns around there.
    back = pull('storage-2', 'tank/cap/volumes', 'tank/replica/storage-2/tank/cap/volumes')
    data = plan(run_main, source_read=source_read(pulls=[back]), target_read=target_read())['data']
    assert data['back_pull'] == {
        'instance': 'tank_replica_storage-2_tank_cap_volumes',
        'replica': 'tank/replica/storage-2/tank/cap/volumes/team-a/pgdata',
        'namespace_replica_exists': False,
    }


def test_what_keeps_the_data_from_moving_is_refused(run_main, marked):
    def moved(**args):
        return plan(run_main, **dict({'source_read': source_read(), 'target_read': target_read()}, **args))

    refused(
        moved(source_read=source_read(listing='')), 'Node storage-1 has no dataset tank/nomad/volumes/team-a/pgdata'
    )
    marked.objects['volume/host/v1']['ID'] = 'v1'
    refused(moved(), "tank/nomad/volumes/team-a/pgdata is not volume v1's dataset (its nomad-zfs-csi:host-volume-id")
    marked.objects['volume/host/v1']['ID'] = MARKED
    refused(moved(source_read=source_read(CAPTURED.replace('storage-2', 'storage-9'))), 'marked as moved to storage-9')
    refused(moved(target_read=target_read(replica_parent='')), "Node storage-2's plugin has no replica parent")
    other = pull('storage-3', 'tank/nomad/volumes', 'tank/cap/replica/storage-3/tank/nomad/volumes')
    refused(
        moved(target_read=target_read(other)),
        'Node storage-2 has no replica of tank/nomad/volumes/team-a/pgdata under tank/cap/replica; have the '
        'zfs_replication role there pull tank/nomad/volumes from storage-1',
    )
    # The copy a failover left there (or a source a move left): the adoption would land on it.
    refused(
        moved(target_read=target_read(holds_volume=True)),
        'Node storage-2 still has a dataset tank/cap/volumes/team-a/pgdata (filesystem of volume %s, moved to '
        'storage-2): the volume cannot come back over it. Make it the standby first (playbooks/rejoin_host_volume.yml '
        '-e volume=pgdata -e namespace=team-a -e node=storage-2' % MARKED,
    )
    # A snapshot on the source after the replica's newest that wrote something: finish that send first.
    later = CAPTURED + later_snapshot(written=65536)
    refused(
        moved(source_read=source_read(later)),
        "The replica %s is older than the source's newest snapshot tank/nomad/volumes/team-a/pgdata@autosnap_2026-11-26"
        '_11:00:00_hourly' % REPLICA,
    )


def test_a_replica_that_holds_the_newest_data_moves_though_later_snapshots_wrote_nothing(run_main, marked):
    # The pull leaves such a replica alone (_replication_status.pull_plan): the move's increment is small.
    data = plan(run_main, source_read=source_read(CAPTURED + later_snapshot(written=0)), target_read=target_read())
    assert data['data']['replica'] == REPLICA


def later_snapshot(written):
    """An hourly snapshot after the captured ones (after the move's final one by txg, as sanoid may take it while
    a move is planned), in zfs_host_volume_info's columns."""
    fields = ['tank/cap/volumes/team-a/pgdata@autosnap_2026-11-26_11:00:00_hourly', 'snapshot', '42', '1795695400']
    return '\t'.join(fields + ['999999', str(written), '-', '-', '-']) + '\n'


def test_a_failover_finds_the_lost_nodes_parent_from_the_pull_that_keeps_the_replica(run_main, marked):
    lost(marked, allocations=[allocation('a1', 'lost')])
    data = plan(run_main, failover=True, fenced=True, target_read=target_read())['data']
    assert (data['dataset'], data['source_parent'], data['replica_host']) == (
        'tank/nomad/volumes/team-a/pgdata',
        'tank/nomad/volumes',
        'storage-1',
    )
    # Two pulls that each keep a replica of team-a/pgdata: which one is the volume's cannot be told.
    again = pull('storage-1', 'tank/nomad/volumes', 'tank/cap/replica/storage-1/tank/nomad/volumes')
    twin = dict(again, instance='twin', host='storage-7')
    refused(plan(run_main, failover=True, fenced=True, target_read=target_read(again, twin)), 'several replicas')


def test_the_allocation_nomad_listed_on_a_cut_off_node_is_a_claim_until_it_surely_stopped(run_main, nomad):
    # GET /v1/node/:id/allocations of Nomad v1.11.3, node nzc-b cut off from the server for 26 s: the server marked
    # the allocation lost, while the client had last said "Tasks are running".
    listed = json.loads((FIXTURES / 'nomad_node_allocations_lost_1.11.3.json').read_text())
    nomad.objects['volume/host/v1'] = dict(VOLUME, Name='t-cap', Allocations=[])
    nomad.objects['volumes'] = [{'ID': 'v1', 'Name': 't-cap'}]
    lost(nomad, down_since=NOW - 30, allocations=listed)
    early = plan(run_main, name='t-cap', failover=True)
    refused(early, 'has been down 30 s; its allocations 5cd43272 stop themselves', 'Run again in 20 s')
    lost(nomad, down_since=NOW - 50, allocations=listed)
    fence = plan(run_main, name='t-cap', failover=True)['fence']
    assert fence['claims'] == [
        {
            'id': listed[0]['ID'],
            'job_id': 't-cap',
            'task_group': 'g',
            'client_status': 'lost',
            'stop_on_client_after': 10,
        }
    ]


@pytest.fixture
def failed_over(marked):
    """The volume failed over to storage-2; storage-1, back, is the node to rejoin."""
    marked.objects['volume/host/v1'] = dict(VOLUME, ID='v2', NodeID='n2', Allocations=[])
    return marked


BACK = pull('storage-2', 'tank/cap/volumes', 'tank/replica/storage-2/tank/cap/volumes')


def rejoin(run_main, **args):
    reads = {'source_read': source_read(pulls=[BACK]), 'target_read': target_read(holds_volume=True)}
    return plan(run_main, **dict(dict(reads, rejoin=True, to='storage-1'), **args))


def test_a_returned_node_rejoins_as_the_standby_from_the_newest_snapshot_both_have(run_main, failed_over):
    planned = rejoin(run_main)
    assert (planned['steps'], planned['source']['name'], planned['target']['name']) == (
        ['turnaround'],
        'storage-1',
        'storage-2',
    )
    data = planned['data']
    assert (data['dataset'], data['final'], data['common_guid']) == (
        'tank/nomad/volumes/team-a/pgdata',
        'tank/cap/volumes/team-a/pgdata@nomad-zfs-csi-move_2026-11-26_10:00:00',
        '9087217580750558761',
    )
    assert data['back_pull']['replica'] == 'tank/replica/storage-2/tank/cap/volumes/team-a/pgdata'
    # Nothing to journal: each run reads both nodes again, and ZFS shows how far an earlier one got.
    assert failed_over.writes() == [] and not [c for c in failed_over.calls if c[1].startswith('var/')]


def test_what_keeps_a_returned_node_from_rejoining_is_refused(run_main, failed_over):
    refused(rejoin(run_main, to='storage-2'), 'pgdata is on node storage-2: it did not leave storage-2')
    refused(rejoin(run_main, source_read=source_read()), 'Node storage-1 has 0 pulls of tank/cap/volumes')
    strange = CAPTURED.replace('11963035577005094753', '1').replace('9087217580750558761', '2')
    refused(
        rejoin(run_main, source_read=source_read(strange, pulls=[BACK])),
        'pgdata on storage-2 and the copy on storage-1 have no snapshot in common',
    )
    failed_over.objects['node/n1']['Status'] = 'down'
    refused(rejoin(run_main), 'Node storage-1 is down: start its agent again')


def test_a_failover_keeps_a_journal_and_run_again_goes_on_from_it(run_main, marked):
    lost(marked, allocations=[allocation('a1', 'lost')])
    first = plan(run_main, failover=True, fenced=True, target_read=target_read())
    assert first['steps'] == ['delete', 'create'] and first['journal']['kind'] == 'failover'
    assert first['journal_after']['delete']['done'] == 'delete' and first['fence']['how'] == 'fenced'
    # Stopped after Nomad forgot the volume, before its record: the create is left, fenced as it was.
    marked.objects['var/nomad-zfs-csi/moves/pgdata'] = {'Items': first['journal']}
    marked.objects['volumes'] = []
    again = plan(run_main, failover=True, target_read=target_read())
    assert again['resumed'] and again['steps'] == ['create'] and again['fence'] == first['fence']
    assert again['data']['replica'] == first['data']['replica']
    refused(plan(run_main, stop_jobs=True), 'A failover of pgdata to storage-2 is under way (done: nothing)')
