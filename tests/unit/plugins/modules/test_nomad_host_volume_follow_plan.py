"""nomad_host_volume_follow_plan's main() with a fake Nomad client: which volumes of a drained node follow its jobs,
to which nodes, and why the others stay."""

import copy

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_host_volume_follow_plan
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

PLUGIN = {'plugins.host_volume.zfs-dataset.version': '0.2.0'}
# The fields of GET /v1/node/:id that the module reads, as Nomad v1.11.3 answers for a node in a drain (the drain's
# start to the second, as Nomad writes it).
DRAINING = {
    'ID': 'n-b',
    'Name': 'storage-b',
    'Status': 'ready',
    'SchedulingEligibility': 'ineligible',
    'DrainStrategy': {'Deadline': 3600000000000, 'ForceDeadline': '2026-12-02T05:03:24.489689073Z'},
    'LastDrain': {'StartedAt': '2026-12-02T04:03:24Z', 'Status': 'draining', 'UpdatedAt': '2026-12-02T04:03:24Z'},
    'Attributes': PLUGIN,
    'HostVolumes': {'pgdata': {'ID': 'v-pg'}, 'scratch': {'ID': 'v-sc'}, 'other': {'ID': 'v-ot'}},
}
STARTED_NS = 1796184204 * 1000000000  # 2026-12-02T04:03:24Z


def node(node_id, name, **fields):
    base = {'ID': node_id, 'Name': name, 'Status': 'ready', 'SchedulingEligibility': 'eligible', 'DrainStrategy': None}
    return (
        dict(base, Attributes=PLUGIN, HostVolumes={}, **fields) if not fields else dict(node(node_id, name), **fields)
    )


def alloc(job, volume, namespace='team-a', stop_after=None, **fields):
    """An allocation on the drained node whose group mounts host volume `volume`; with stop_after, its group stops
    itself that many seconds after its client lost the servers."""
    group = {
        'Name': 'g',
        'Volumes': {'data': {'Type': 'host', 'Source': volume}, 'csi': {'Type': 'csi', 'Source': 'x'}},
    }
    if stop_after:
        group['Disconnect'] = {'StopOnClientAfter': stop_after * 10**9}
    base = {
        'ID': 'a-' + job,
        'JobID': job,
        'Namespace': namespace,
        'TaskGroup': 'g',
        'DesiredStatus': 'run',
        'ClientStatus': 'running',
        'ModifyTime': STARTED_NS - 10**9,
        'Job': {'TaskGroups': [group]},
    }
    return dict(base, **fields)


def volume(name, node_id='n-b', namespace='team-a', plugin='zfs-dataset'):
    return {'ID': 'v-' + name, 'Name': name, 'Namespace': namespace, 'NodeID': node_id, 'PluginID': plugin}


def nomad_with(drained=None, others=(), allocations=(), volumes=(), journals=None, jobs=()):
    nodes = [drained or DRAINING] + list(others)
    objects = {'nodes': [{'ID': n['ID']} for n in nodes], 'volumes': list(volumes), 'vars': [], 'evaluations': []}
    for job, blocked in jobs:
        # Nomad filters by the query; the fake lists the complete evaluations too, which the planner leaves out.
        for status in ['blocked'] * blocked + ['complete']:
            objects['evaluations'].append(
                {'ID': 'e', 'JobID': job['ID'], 'Namespace': job['Namespace'], 'Status': status}
            )
        objects['job/' + job['ID']] = job
    objects.update(('node/' + n['ID'], n) for n in nodes)
    objects['node/%s/allocations' % nodes[0]['ID']] = list(allocations)
    for (namespace, name), items in (journals or {}).items():
        path = 'nomad-zfs-csi/moves/' + name
        objects['vars'].append({'Namespace': namespace, 'Path': path})
        objects['var/' + path] = {'Items': items}
    return FakeNomad(**objects)


def test_a_drained_nodes_volumes_in_use_follow_to_the_nodes_that_could_take_them(run_main, monkeypatch):
    others = [
        node('n-a', 'storage-a'),
        node('n-c', 'storage-c', SchedulingEligibility='ineligible'),
        node('n-d', 'storage-d', Attributes={}),  # no zfs-dataset plugin
        node('n-e', 'storage-e', HostVolumes={'pgdata': {'ID': 'v-e'}}),  # has a volume of that name
        node('n-f', 'storage-f', Status='down'),
        node('n-0', 'storage-0'),
    ]
    allocations = [
        alloc('db', 'pgdata'),
        alloc('web', 'pgdata', ClientStatus='pending'),
        # Migrated by this drain (stopped after it started): its job wants the volume wherever it goes next.
        alloc('cache', 'other', DesiredStatus='stop', ClientStatus='complete', DesiredTransition={'Migrate': True},
              ModifyTime=STARTED_NS + 10**9),
        # Ended before the drain, or stopped by hand: no user.
        alloc('old', 'scratch', DesiredStatus='stop', ClientStatus='complete', DesiredTransition={'Migrate': True},
              ModifyTime=STARTED_NS - 10**9),
        alloc('done', 'scratch', ClientStatus='complete'),
    ]  # fmt: skip
    volumes = [volume('pgdata'), volume('scratch'), volume('other'), volume('elsewhere', node_id='n-a')]
    volumes.append(volume('plain', plugin='mkdir'))
    nomad = nomad_with(others=others, allocations=allocations, volumes=volumes).install(monkeypatch)
    result = run_main(nomad_host_volume_follow_plan, {'node': 'storage-b'})
    assert (result['following'], result['kind'], result['why'], result['changed']) == (True, 'move', None, False)
    assert (result['fenced_in'], result['waited']) == (0, 0)
    assert result['moves'] == [
        dict(name='other', namespace='team-a', jobs=['cache'], candidates=['storage-0', 'storage-a', 'storage-e'],
             resumed=False, fenced_in=0),
        dict(name='pgdata', namespace='team-a', jobs=['db', 'web'], candidates=['storage-0', 'storage-a'],
             resumed=False, fenced_in=0),
    ]  # fmt: skip
    assert result['stays'] == [
        dict(
            name='scratch',
            namespace='team-a',
            jobs=[],
            why='no job of this drain uses it; move it by hand if wanted',
            reason='unused',
        )
    ]
    assert result['node']['name'] == 'storage-b' and not nomad.writes()
    # Every namespace is read, and each journal in the namespace it is in.
    assert [c[2] for c in nomad.calls if c[1] in ('volumes', 'evaluations', 'vars')] == [
        {'namespace': '*', 'type': 'host'},
        {'namespace': '*', 'filter': 'Status == "blocked"'},
        {'namespace': '*', 'prefix': 'nomad-zfs-csi/moves/'},
    ]


def test_a_move_under_way_from_the_node_goes_on_first_to_where_its_journal_says(run_main, monkeypatch):
    journals = {
        ('team-a', 'pgdata'): {
            'source_node_id': 'n-b',
            'to': 'storage-a',
            'done': 'stop,send',
            'volume': '{"id": "v-pgdata"}',
        },
        ('team-b', 'logs'): {'source_node_id': 'n-b', 'to': 'storage-a', 'kind': 'failover'},  # not a drain's: it stays
        ('team-b', 'web'): {'source_node_id': 'n-x', 'to': 'storage-b'},  # from another node
        # Whoever may write a journal may write anything in it: a name that is no volume's, no target, or another
        # volume's ID than Nomad has of that name.
        ('team-a', 'x/y'): {'source_node_id': 'n-b', 'to': 'storage-a'},
        ('team-a', 'notarget'): {'source_node_id': 'n-b', 'to': None},
        ('team-a', 'queue'): {'source_node_id': 'n-b', 'to': 'storage-a', 'volume': '{"id": "v-forged"}'},
    }
    nomad = nomad_with(
        others=[node('n-a', 'storage-a')],
        allocations=[alloc('db', 'pgdata'), alloc('q', 'queue')],
        volumes=[volume('pgdata'), volume('queue')],
        journals=journals,
    ).install(monkeypatch)
    result = run_main(nomad_host_volume_follow_plan, {'node': 'n-b'})
    assert result['moves'] == [
        dict(name='pgdata', namespace='team-a', jobs=[], candidates=['storage-a'], resumed=True, fenced_in=0)
    ]
    assert [s['reason'] for s in result['stays']] == ['journal_refused'] * 3 + ['other_kind_under_way']
    assert [(s['name'], s['why']) for s in result['stays']] == [
        ('notarget', 'its journal names no node to move it to; check it, then move it by hand'),
        ('queue', 'its journal is of another volume (v-forged) than Nomad has; check it, then move it by hand'),
        ('x/y', 'its journal nomad-zfs-csi/moves/x/y names no volume; check it, then move it by hand'),
        (
            'logs',
            'a failover of it from this node is under way (its journal): finish it by hand '
            '(playbooks/failover_host_volume.yml -e namespace=team-b -e volume=logs)',
        ),
    ]
    assert ('get', 'var/nomad-zfs-csi/moves/logs', {'namespace': 'team-b'}) in nomad.calls


def test_a_cancelled_drain_or_none_moves_nothing_and_says_why(run_main, monkeypatch):
    cancelled = dict(copy.deepcopy(DRAINING), DrainStrategy=None, SchedulingEligibility='eligible')
    cancelled['LastDrain']['Status'] = 'canceled'
    completed = dict(copy.deepcopy(DRAINING), DrainStrategy=None)
    completed['LastDrain']['Status'] = 'complete'
    undrained = dict(completed, SchedulingEligibility='eligible')
    never = node('n-b', 'storage-b')
    cases = [
        (cancelled, 'its last drain was cancelled'),
        (undrained, 'its last drain completed and it is eligible again'),
        (never, 'it has not been drained'),
    ]
    for drained, why in cases:
        nomad = nomad_with(drained=drained, allocations=[alloc('db', 'pgdata')], volumes=[volume('pgdata')])
        result = run_main(nomad_host_volume_follow_plan, {'node': 'storage-b'}) if nomad.install(monkeypatch) else None
        assert result['following'] is False and result['moves'] == result['stays'] == [], result
        assert result['why'] == 'Node storage-b is not down, nor draining: %s. Nothing follows.' % why
    # A drain that completed before the follow ran, the node still ineligible: its volumes follow.
    nomad_with(drained=completed, others=[node('n-a', 'storage-a')], allocations=[alloc('db', 'pgdata')],
               volumes=[volume('pgdata')]).install(monkeypatch)  # fmt: skip
    result = run_main(nomad_host_volume_follow_plan, {'node': 'storage-b'})
    assert [m['name'] for m in result['moves']] == ['pgdata']


def test_a_volume_with_nowhere_to_go_stays_with_the_jobs_that_wait(run_main, monkeypatch):
    nomad_with(
        others=[node('n-a', 'storage-a', SchedulingEligibility='ineligible')],
        allocations=[alloc('db', 'pgdata')],
        volumes=[volume('pgdata')],
    ).install(monkeypatch)
    result = run_main(nomad_host_volume_follow_plan, {'node': 'storage-b'})
    assert result['moves'] == []
    assert result['stays'] == [
        dict(
            name='pgdata',
            namespace='team-a',
            jobs=['db'],
            why='no other node is ready, eligible and has plugin zfs-dataset without a volume of that name',
            reason='no_node',
        )
    ]


def test_an_unknown_node_is_refused_naming_the_field(run_main, monkeypatch):
    nomad_with().install(monkeypatch)
    result = run_main(nomad_host_volume_follow_plan, {'node': 'nowhere'})
    assert result['failed'] and result['msg'].startswith('Nomad has no node nowhere; name one of'), result


def test_a_client_named_after_another_nodes_id_does_not_hide_that_node(run_main, monkeypatch):
    # The rulebook names the node by its ID; a client chooses its own name.
    nomad_with(others=[node('n-x', 'n-b')], allocations=[alloc('db', 'pgdata')], volumes=[volume('pgdata')]).install(
        monkeypatch
    )
    result = run_main(nomad_host_volume_follow_plan, {'node': 'n-b'})
    assert result['node']['id'] == 'n-b' and result['following'], result


def test_a_job_waiting_to_be_placed_takes_its_volume_and_a_job_of_two_volumes_leaves_both(run_main, monkeypatch):
    """The drain stopped db's allocation before the follow read the node, and Nomad could not place its replacement;
    a server east of UTC writes the drain's start with its offset. etl mounts two of the node's volumes."""
    east = dict(copy.deepcopy(DRAINING))
    east['LastDrain']['StartedAt'] = '2026-12-02T05:03:24+01:00'
    group = {'Name': 'g', 'Volumes': {'data': {'Type': 'host', 'Source': 'pgdata'}}}
    db = {'ID': 'db', 'Namespace': 'team-a', 'TaskGroups': [group]}
    two = {'Name': 'g', 'Volumes': {'a': {'Type': 'host', 'Source': 'in'}, 'b': {'Type': 'host', 'Source': 'out'}}}
    etl = {'ID': 'etl', 'Namespace': 'team-a', 'TaskGroups': [two]}
    idle = {'ID': 'idle', 'Namespace': 'team-a', 'TaskGroups': [group]}
    migrated = alloc('cache', 'other', DesiredStatus='stop', ClientStatus='complete',
                     DesiredTransition={'Migrate': True}, ModifyTime=STARTED_NS + 10**9)  # fmt: skip
    nomad_with(
        drained=east,
        others=[node('n-a', 'storage-a')],
        allocations=[migrated, alloc('etl', 'in', Job=etl)],
        volumes=[volume('pgdata'), volume('in'), volume('out'), volume('other')],
        jobs=[(db, 2), (etl, 0), (idle, 0)],
    ).install(monkeypatch)
    result = run_main(nomad_host_volume_follow_plan, {'node': 'storage-b'})
    assert [(m['name'], m['jobs']) for m in result['moves']] == [('other', ['cache']), ('pgdata', ['db'])]
    why = 'etl also use %s on this node, and a move takes one volume of a job at a time; move them by hand to one node'
    assert [(s['name'], s['jobs'], s['why'], s['reason']) for s in result['stays']] == [
        ('in', ['etl'], why % 'out', 'shared_jobs'),
        ('out', ['etl'], why % 'in', 'shared_jobs'),
    ]


# A node that Nomad marked down 60 s before NOW, as GET /v1/node/:id answers, advertising its fence watchdog.
NOW = 1796184204
LOST = dict(
    node(
        'n-b',
        'storage-b',
        Status='down',
        StatusUpdatedAt=NOW - 60,
        Meta={'nomad_zfs_csi.fence_after': '20', 'nomad_zfs_csi.fence_plugin': 'zfs-dataset'},
    ),
    HostVolumes={'pgdata': {'ID': 'v-pgdata'}},
)
# Marked lost when the node went down; then the replacement, which waits for its volume.
LOST_ALLOC = dict(ClientStatus='lost', DesiredStatus='stop', ModifyTime=(NOW - 59) * 10**9)


def lost_plan(run_main, monkeypatch, lost=None, allocations=(), jobs=(), journals=None, check=False, **args):
    nomad = nomad_with(
        drained=lost or LOST,
        others=[node('n-a', 'storage-a')],
        allocations=allocations,
        volumes=[volume('pgdata'), volume('queue'), volume('scratch')],
        jobs=jobs,
        journals=journals,
    ).install(monkeypatch)
    monkeypatch.setattr(nomad_host_volume_follow_plan.time, 'time', lambda: NOW)
    slept = []
    monkeypatch.setattr(nomad_host_volume_follow_plan.time, 'sleep', slept.append)
    return run_main(nomad_host_volume_follow_plan, dict({'node': 'storage-b'}, **args), check=check), slept, nomad


def test_a_lost_nodes_volumes_fail_over_once_its_watchdog_surely_fenced_it(run_main, monkeypatch):
    waiting_job = {'ID': 'q', 'Namespace': 'team-a', 'TaskGroups': [{'Name': 'g', 'Volumes': {'d': {'Type': 'host',
                   'Source': 'queue'}}}]}  # fmt: skip
    allocations = [
        alloc('db', 'pgdata', **LOST_ALLOC),
        # Lost in an earlier loss of the node, and replaced then: no user now.
        alloc('old', 'scratch', ClientStatus='lost', DesiredStatus='stop', ModifyTime=(NOW - 3600) * 10**9),
    ]
    result, slept, nomad = lost_plan(run_main, monkeypatch, allocations=allocations, jobs=[(waiting_job, 1)])
    # fence_after 20: surely fenced 125 s after it went down, plus the margin (30 s); down 60 s.
    assert (result['following'], result['kind'], result['fenced_in'], result['waited']) == (True, 'failover', 95, 0)
    assert result['moves'] == [
        dict(name='pgdata', namespace='team-a', jobs=['db'], candidates=['storage-a'], resumed=False, fenced_in=95),
        dict(name='queue', namespace='team-a', jobs=['q'], candidates=['storage-a'], resumed=False, fenced_in=95),
    ]
    assert result['stays'] == [
        dict(name='scratch', namespace='team-a', jobs=[],
             why='no job lost with the node uses it; move it by hand if wanted', reason='unused'),
    ]  # fmt: skip
    assert slept == [] and not nomad.writes()


def test_the_follow_of_a_lost_node_waits_for_its_fence_and_reads_again(run_main, monkeypatch):
    allocations = [alloc('db', 'pgdata', **LOST_ALLOC)]
    # Up to 94 s: it does not wait for 95.
    result, slept, _nomad = lost_plan(run_main, monkeypatch, allocations=allocations, wait_for_fence=77)
    assert (result['fenced_in'], result['waited'], slept) == (95, 0, [])
    result, slept, nomad = lost_plan(run_main, monkeypatch, allocations=allocations, wait_for_fence=95)
    assert (result['waited'], slept) == (96, [96])
    assert len([c for c in nomad.calls if c[1] == 'node/n-b/allocations']) == 2
    # Check mode says when, and waits for nothing.
    result, slept, _nomad = lost_plan(run_main, monkeypatch, allocations=allocations, wait_for_fence=600, check=True)
    assert (result['fenced_in'], result['waited'], slept) == (95, 0, [])
    # A margin of 0, and down long enough: no wait.
    result, slept, _nomad = lost_plan(
        run_main, monkeypatch, lost=dict(LOST, StatusUpdatedAt=NOW - 125), allocations=allocations, fence_margin=0,
        wait_for_fence=600,
    )  # fmt: skip
    assert (result['fenced_in'], result['waited'], slept) == (0, 0, [])
    result, _slept, _nomad = lost_plan(run_main, monkeypatch, allocations=allocations, wait_for_fence=-1)
    assert result['failed'] and result['msg'] == 'wait_for_fence is -1; give 0 or more seconds. Nothing was changed.'


def test_a_lost_node_that_never_fences_itself_keeps_its_volumes_and_says_why(run_main, monkeypatch):
    unwatched = dict(LOST, Meta={})
    result, slept, _nomad = lost_plan(
        run_main, monkeypatch, lost=unwatched, allocations=[alloc('db', 'pgdata', **LOST_ALLOC)], wait_for_fence=600
    )
    assert (result['following'], result['moves'], slept) == (True, [], [])
    [stay] = result['stays'][:1]
    assert (stay['name'], stay['jobs'], stay['reason']) == ('pgdata', ['db'], 'not_fenced')
    # The metrics say it too; node n-b's ID is no UUID, so they name no file.
    assert 'volume="pgdata",reason="not_fenced"} 1' in result['metrics'] and result['metrics_file'] is None
    assert 'Node storage-b is down, but its allocations a-db (db.g) may still be writing to pgdata' in stay['why']
    assert 'host_volume_plugin_fence_after' in stay['why']


def test_a_failover_under_way_from_the_lost_node_goes_on_first_and_a_move_does_not(run_main, monkeypatch):
    journals = {
        ('team-a', 'pgdata'): {
            'source_node_id': 'n-b',
            'to': 'storage-a',
            'kind': 'failover',
            'volume': '{"id": "v-pgdata"}',
        },
        ('team-a', 'queue'): {'source_node_id': 'n-b', 'to': 'storage-a', 'volume': '{"id": "v-queue"}'},
    }
    result, _slept, _nomad = lost_plan(run_main, monkeypatch, journals=journals)
    assert result['moves'] == [
        dict(name='pgdata', namespace='team-a', jobs=[], candidates=['storage-a'], resumed=True, fenced_in=0)
    ]


def test_a_volume_fenced_only_later_does_not_hold_up_the_others(run_main, monkeypatch):
    """No watchdog: one group stops itself after 60 s (fenced 150 s after the loss), another after an hour."""
    allocations = [
        alloc('db', 'pgdata', stop_after=60, **LOST_ALLOC),
        alloc('q', 'queue', stop_after=3600, **LOST_ALLOC),
    ]
    result, slept, _nomad = lost_plan(
        run_main, monkeypatch, lost=dict(LOST, Meta={}), allocations=allocations, wait_for_fence=600
    )
    assert [(m['name'], m['fenced_in']) for m in result['moves']] == [('pgdata', 90), ('queue', 7170)]
    assert (result['fenced_in'], slept) == (7170, [91])


def test_a_journal_of_the_other_kind_from_the_node_stays_saying_what_to_do(run_main, monkeypatch):
    move_journal = {('team-a', 'queue'): {'source_node_id': 'n-b', 'to': 'storage-a', 'volume': '{"id": "v-queue"}'}}
    result, _slept, _nomad = lost_plan(run_main, monkeypatch, journals=move_journal)
    assert result['moves'] == [] and result['stays'][0] == dict(
        name='queue',
        namespace='team-a',
        jobs=[],
        why='a planned move of it from this node is under way (its journal), and the node is lost: fail it over by '
        'hand (playbooks/failover_host_volume.yml -e namespace=team-a -e volume=queue)',
        reason='other_kind_under_way',
    )
