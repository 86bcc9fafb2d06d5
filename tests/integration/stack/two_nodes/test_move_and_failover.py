"""A planned move of a zfs-dataset host volume to another node, with its data and the job that uses it, by
playbooks/move_host_volume.yml, on the stack's Nomad with two client agents and the real sanoid and syncoid pulls.
Every move, failover and rejoin runs on the mover's token that site.yml made (nomad_access_mover_name), as the
operator runs them, in tenant demo's namespace: the only kind of namespace that token reaches.

Node A is the stack's node (pool tank), node B is nzc-b (pool nodeb, node_b.py); the VM is both nodes' host. B
pulls A's volumes into nodeb/replica, A pulls B's into tank/it-replicas: each replica parent in the pool of the
node that adopts from it. The backups' timers are stopped for the test, which runs sanoid and the pulls itself.
"""

import json
import re
import time

import pytest
from stack_layout import HOST_VOLUMES, REPO

from admin_client import admin_client
from follow_rulebook import follow_job, follow_rulebook
from host_volume_job import host_volume_job
from node_b import HOST_VOLUMES as B_VOLUMES
from node_b import NAME as B_NAME
from node_b import UNIT as B_UNIT
from node_b import crash, cut_off, lose, plugin_role, reconnect, start, task_pids
from replicating_nodes import A_PULL, A_REPLICAS, B_PULL, B_REPLICAS, snapshot_now
from test_host_volume_plugin import MARK, props
from zfsvm_client import changed, playbook_said, pull, wait_until

MOVE = REPO / 'playbooks' / 'move_host_volume.yml'
FAILOVER = REPO / 'playbooks' / 'failover_host_volume.yml'
REJOIN = REPO / 'playbooks' / 'rejoin_host_volume.yml'
FOLLOW = REPO / 'playbooks' / 'follow_node.yml'
# Tenant demo may mount host volumes named demo-* (inventories/local), and the mover moves only tenants' volumes.
NAMESPACE, VOLUME = 'demo', 'demo-mv'
A_DATASET, B_DATASET = '%s/%s/%s' % (HOST_VOLUMES, NAMESPACE, VOLUME), '%s/%s/%s' % (B_VOLUMES, NAMESPACE, VOLUME)
# Each node's replica of the other's volume: <replica parent>/<host>/<parent>/<namespace>/<name>.
ON_B, ON_A = '%s/127.0.0.1/%s' % (B_REPLICAS, A_DATASET), '%s/127.0.0.1/%s' % (A_REPLICAS, B_DATASET)
MIB = 1048576
MOVED = 'nomad-zfs-csi:moved-to'
FENCED = 'nomad-zfs-csi:fenced-at'
# demo-fs's group stops itself this many seconds after its client lost the server; the failover waits twice that plus
# this margin after the node went down. Longer than the heartbeat TTL (10 to 20 s here): with 10 s, a connected
# client stopped demo-fs itself between two heartbeats.
FENCE_AFTER, FENCE_MARGIN = 30, 5
# Node B's fence watchdog fences B this many seconds after B was last seen ready (host_volume_plugin_fence_after).
WATCHDOG_AFTER = 20
FOLLOW_LOCK = 'nomad-zfs-csi/follow/lock'
FENCE = '/usr/local/libexec/nomad-zfs-csi/zfs-fence'
# A task that writes all the time: a line every half second, with the time and its allocation.
WRITER = (
    'echo "$NOMAD_ALLOC_ID" > /data/first; while true; do echo "$(date +%s.%N) $NOMAD_ALLOC_ID" >> /data/beat; '
    'sleep 0.5; done'
)
# The first allocation leaves its ID; one that finds it copies it to `seen` and writes 1 MiB more.
SCRIPT = (
    'if [ -f /data/first ]; then cat /data/first > /data/seen; head -c 1048576 /dev/urandom > /data/second; '
    'else echo "$NOMAD_ALLOC_ID" > /data/first; fi; sync; sleep 3600'
)


def exists(vm, name):
    return vm.zfs('list', name, check=False).returncode == 0


def guid(vm, snapshot):
    return vm.zfs('get', '-Hp', '-o', 'value', 'guid', snapshot).stdout.strip()


def snapshot_names(vm, dataset):
    out = vm.zfs('list', '-H', '-d', '1', '-t', 'snapshot', '-s', 'createtxg', '-o', 'name', dataset).stdout
    return [line.split('@', 1)[1] for line in out.split()]


def running(stack, node_id, job_id=VOLUME):
    live = [
        a
        for a in stack.get('/v1/job/%s/allocations?namespace=%s' % (job_id, NAMESPACE))
        if a['ClientStatus'] == 'running' and a['NodeID'] == node_id
    ]
    return live[0] if live else None


def job_state(stack, job_id=VOLUME):
    """What Nomad says of a job, for a failure's message: its status, its allocations and its evaluations."""
    job = stack.get('/v1/job/%s?namespace=%s' % (job_id, NAMESPACE))
    allocs = stack.get('/v1/job/%s/allocations?namespace=%s' % (job_id, NAMESPACE))
    evals = stack.get('/v1/job/%s/evaluations?namespace=%s' % (job_id, NAMESPACE))
    return {
        'job': {k: job.get(k) for k in ('Status', 'Stop', 'Version', 'SubmitTime')},
        'allocations': [(a['ID'][:8], a['NodeID'][:8], a['DesiredStatus'], a['ClientStatus']) for a in allocs],
        'evaluations': [
            (e['ID'][:8], e['TriggeredBy'], e['Status'], e.get('StatusDescription'), e.get('FailedTGAllocs'))
            for e in evals[:6]
        ],
    }


def down_since(stack, node):
    return stack.get('/v1/node/' + node['ID'])['StatusUpdatedAt']


def drain(stack, node, enable):
    """Drain the node (an hour's deadline), as `nomad node drain -enable` does; or end the drain and make the node
    eligible again."""
    spec = {'Deadline': 3600 * 10**9, 'IgnoreSystemJobs': False} if enable else None
    stack.api('PUT', '/v1/node/%s/drain' % node['ID'], {'DrainSpec': spec, 'MarkEligible': not enable})


def volumes(stack, name=VOLUME):
    listed = stack.get('/v1/volumes?type=host&namespace=%s&prefix=%s' % (NAMESPACE, name))
    return [(v['ID'], v['NodeID']) for v in listed if v['Name'] == name]


@pytest.fixture
def gone_after(stack, vm):
    """gone_after(name): job and volume `name` are purged and deleted after the test, and its dataset on A gone."""
    names = []
    yield names.append
    for name in names:
        # Stopped until its allocations are (a volume in use is not deleted), then purged.
        stopped = stack.module('nomad_job', {'job_id': name, 'namespace': NAMESPACE, 'state': 'absent'})
        stack.module('nomad_job', {'job_id': name, 'namespace': NAMESPACE, 'state': 'absent', 'purge': True})
        for _id, node_id in volumes(stack, name):
            args = {'name': name, 'namespace': NAMESPACE, 'node_id': node_id, 'state': 'deleted'}
            # Again while the client still holds the stopped allocation's mount ("dataset is busy").
            wait_until(
                lambda a=args: stack.module('nomad_host_volume', a),
                done=lambda deleted: deleted['rc'] == 0,
                timeout=120,
                why=lambda deleted, s=stopped: 'the job stopped (%s), the volume deleted (%s)' % (s, deleted),
            )
        vm.zfs('destroy', '-r', '%s/%s/%s' % (HOST_VOLUMES, NAMESPACE, name), check=False)


@pytest.fixture
def b_back(stack, vm, two_nodes):
    """Node B reconnected and its agent running after the test, whatever it did to B."""
    yield
    reconnect(vm)
    # Its agent, even where the servers still see B ready: they mark it down only once its heartbeat's TTL ran out.
    if vm.sh('systemctl is-active -q nzc-nomad-b', check=False).returncode != 0:
        start(vm)
    wait_until(lambda: stack.get('/v1/node/' + two_nodes[1]['ID'])['Status'] == 'ready', timeout=180, why='B back')


def volume_with_job(stack, name, node, dataset, stop_on_client_after=None, script=SCRIPT):
    """Volume `name` made on node, and job `name` running there, once it wrote its first file; its allocation."""
    made = stack.module(
        'nomad_host_volume',
        {
            'name': name,
            'namespace': NAMESPACE,
            'node_id': node['ID'],
            'plugin_id': 'zfs-dataset',
            'capacity_max': '64MiB',
        },
    )
    assert made['rc'] == 0, made
    stack.api(
        'PUT',
        '/v1/jobs',
        host_volume_job(
            name, name, script, sticky=True, stop_on_client_after=stop_on_client_after, namespace=NAMESPACE
        ),
    )
    first = wait_until(lambda: running(stack, node['ID'], name), timeout=180, why='job %s running' % name)
    wait_until(lambda: stack.vm.sh('test -s /%s/first' % dataset, check=False).returncode == 0, timeout=60, why='file')
    return first


def move_vars(stack, **variables):
    """The extra vars of a move of demo-mv to node nzc-b, whose host is the VM too, unless told otherwise. A's agent is
    asked at the address it advertises, B's at one given for it (as where a certificate names only localhost)."""
    nodes = {n['Name']: 'zfsvm' for n in stack.get('/v1/nodes')}
    agents = {B_NAME: 'http://localhost:5656'}
    wanted = {'volume': VOLUME, 'namespace': NAMESPACE, 'to': B_NAME}
    return dict(wanted, host_volume_move_hosts=nodes, host_volume_move_agent_addrs=agents, **variables)


def mover(stack):
    """The secret of the mover's token, from the Nomad Variable nomad_access wrote it to, as the operator reads it."""
    return stack.secret('host-volume-mover')


def move(stack, *flags, playbook=MOVE, **variables):
    """playbooks/move_host_volume.yml (or another) with the stack's inventory, on the mover's token."""
    return stack.playbook(playbook, *flags, extra=move_vars(stack, **variables), token=mover(stack))


def move_killed_at(stack, task, playbook=MOVE, **variables):
    """move(), killed as it prints the start of `task` (stack.playbook_killed_at)."""
    return stack.playbook_killed_at(playbook, task, extra=move_vars(stack, **variables), token=mover(stack))


def move_journal(stack, name=VOLUME):
    """The items of the move's journal, or None."""
    try:
        return stack.api('GET', '/v1/var/nomad-zfs-csi/moves/%s?namespace=%s' % (name, NAMESPACE))['Items']
    except AssertionError as e:
        if ': 404 ' not in str(e):
            raise
        return None


def plan_refused(stack, message, **args):
    """What Nomad alone decides, asked of nomad_host_volume_move_plan as the role's first call asks it (a module run
    costs a few seconds less than the playbook), on the mover's token: refused, naming the way out, before any
    change."""
    args = dict({'name': VOLUME, 'namespace': NAMESPACE, 'to': B_NAME}, **args)
    result = stack.module('nomad_host_volume_move_plan', args, extra_env={'NOMAD_TOKEN': mover(stack)})
    assert result['rc'] != 0 and message in result['msg'] and result['msg'].endswith(' Nothing was changed.'), result
    return result['msg']


def refused(ran, message):
    assert ran.returncode != 0 and message in ran.stdout, ran.stdout[-3000:]
    assert re.search(r'^nomad-dev\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1', ran.stdout, re.M), ran.stdout[
        -1500:
    ]


def test_a_planned_move_takes_the_data_and_the_job_and_turns_replication_around(
    stack, vm, two_nodes, gone_after, tmp_path
):
    a_node, b_node = two_nodes
    gone_after(VOLUME)
    first = volume_with_job(stack, VOLUME, a_node, A_DATASET)
    vm.sh('head -c %d /dev/urandom > /%s/filler' % (8 * MIB, A_DATASET))
    before = volumes(stack)

    def unchanged():
        assert volumes(stack) == before and running(stack, a_node['ID'])['ID'] == first['ID']
        assert props(vm, A_DATASET, 'readonly', MOVED, 'syncoid:sync') == {
            'readonly': 'off',
            MOVED: '-',
            'syncoid:sync': '-',
        }

    plan_refused(stack, 'Nomad has no node nowhere', to='nowhere', stop_jobs=True)
    # The mover's token, which every move here runs on, reaches the tenants' namespaces only.
    outside = stack.module(
        'nomad_host_volume_move_plan',
        {'name': VOLUME, 'namespace': 'default', 'to': B_NAME},
        extra_env={'NOMAD_TOKEN': mover(stack)},
    )
    assert outside['rc'] != 0 and 'answered 403' in outside['msg'], outside
    refused(
        move(stack, stop_jobs=True),
        'Node %s has no replica of %s under %s' % (B_NAME, A_DATASET, B_REPLICAS),
    )
    unchanged()

    # A snapshot of every dataset under A's parent, named as sanoid names them, then B's pull: A's volumes are
    # replicated on B. Not sanoid's own run: it takes a snapshot only where one is due. A name of this run's time,
    # since each pull leaves a bookmark named after the snapshot on the source, and a bookmark name is taken once.
    snapshot_now(vm, HOST_VOLUMES)
    pull(vm, B_PULL)
    vm.sh('head -c %d /dev/urandom > /%s/since-the-pull' % (MIB, A_DATASET))
    vm.zfs('snapshot', A_DATASET + '@autosnap_2026-11-26_00:00:00_hourly')
    refused(
        move(stack, stop_jobs=True),
        "The replica %s is older than the source's newest snapshot %s@autosnap_2026-11-26_00:00:00_hourly"
        % (ON_B, A_DATASET),
    )
    pull(vm, B_PULL)
    # A snapshot that wrote nothing: the replica holds the newest data, so the pulls leave it alone (the move's final
    # snapshot is sent with it) and the move is not refused.
    vm.zfs('snapshot', A_DATASET + '@autosnap_2026-11-26_00:30:00_hourly')
    journal = pull(vm, B_PULL)
    assert 'in sync or without snapshots' in journal, journal
    assert not exists(vm, ON_B + '@autosnap_2026-11-26_00:30:00_hourly'), journal
    plan_refused(stack, '%s is in use by %s (allocations %s)' % (VOLUME, VOLUME, first['ID'][:8]))
    checked = move(stack, '--check', '--diff', stop_jobs=True)
    assert checked.returncode == 0 and 'Would stop %s, pull %s' % (VOLUME, A_DATASET) in checked.stdout, checked.stdout
    unchanged()

    # The operator's machine dies after the final send, as its record in the journal begins: the job is stopped and
    # A's dataset marked, and the journal says so. Given up, everything is back on A, as it was.
    move_killed_at(stack, 'Record that the step is done: send', stop_jobs=True)
    assert move_journal(stack)['done'] == 'stop' and running(stack, a_node['ID']) is None
    assert props(vm, A_DATASET, 'readonly', MOVED)[MOVED] == B_NAME
    # Meanwhile its owner changes the stopped job: another version, registered stopped. The move's start (here the
    # abort's) does not submit it with the mover's rights; it is the owner's to run again.
    job = stack.get('/v1/job/%s?namespace=%s' % (VOLUME, NAMESPACE))
    # The journal holds where the stop left the job: the index of the move's own write of it.
    assert json.loads(move_journal(stack)['stopped']) == {VOLUME: job['JobModifyIndex']}
    changed_job = dict(job, Stop=True, Meta=dict(job.get('Meta') or {}, changed='by-its-owner'))
    registered = stack.api('PUT', '/v1/jobs?namespace=%s' % NAMESPACE, {'Job': changed_job})
    aborted = move(stack, abort=True)
    assert aborted.returncode == 0 and 'Gave up the move of %s to %s' % (VOLUME, B_NAME) in aborted.stdout, (
        aborted.stdout
    )
    left = 'job %s is stopped at job modify index %d, not at %d where its stop left it' % (
        VOLUME,
        registered['JobModifyIndex'],
        job['JobModifyIndex'],
    )
    assert left in aborted.stdout, aborted.stdout[-3000:]
    assert stack.get('/v1/job/%s?namespace=%s' % (VOLUME, NAMESPACE))['Stop'] is True
    assert stack.module('nomad_job', {'job_id': VOLUME, 'namespace': NAMESPACE, 'wait': False})['changed']
    wait_until(lambda: running(stack, a_node['ID']), timeout=180, why='the job running on node A again')
    assert volumes(stack) == before and move_journal(stack) is None
    assert props(vm, A_DATASET, 'readonly', MOVED, 'syncoid:sync') == {
        'readonly': 'off',
        MOVED: '-',
        'syncoid:sync': '-',
    }
    plan_refused(stack, 'No move of %s is under way' % VOLUME, abort=True)

    # It dies there again; run again, the move goes on from the journal, and dies as the create on B begins. The
    # same command then finishes the move.
    since = vm.sh('date +%s').stdout.strip()
    move_killed_at(stack, 'Record that the step is done: send', stop_jobs=True)
    assert move_journal(stack)['done'] == 'stop'
    move_killed_at(stack, 'Create the volume on the target node from the replica', stop_jobs=True)
    assert move_journal(stack)['done'] == 'stop,send,delete'
    moved = move(stack, stop_jobs=True)
    assert moved.returncode == 0, playbook_said(moved)
    assert re.search(r'Moved %s to %s, going on after stop, send, delete' % (VOLUME, B_NAME), moved.stdout), (
        moved.stdout[-3000:]
    )
    assert move_journal(stack) is None

    # The volume is on B, made from the replica, and the job runs there on the data written on A.
    [(new_id, node_id)] = volumes(stack)
    assert node_id == b_node['ID'] and new_id != before[0][0]
    again = wait_until(lambda: running(stack, b_node['ID']), timeout=180, why='the job running on node B')
    wait_until(lambda: exists(vm, B_DATASET) and vm.sh('test -s /%s/second' % B_DATASET, check=False).returncode == 0,
               timeout=60, why='the second file')  # fmt: skip
    assert vm.sh('cat /%s/seen' % B_DATASET).stdout.strip() == first['ID'] != again['ID']
    assert props(vm, B_DATASET, 'readonly', 'mounted', MARK) == {'readonly': 'off', 'mounted': 'yes', MARK: new_id}
    # The sticky claim is on the new volume: the old one's went with it.
    claims = stack.get('/v1/volumes/claims?namespace=%s&job_id=%s' % (NAMESPACE, VOLUME))
    assert {c['VolumeID'] for c in claims} == {new_id}
    # The same command once more: nothing is left to do, and nothing changes.
    again_run = move(stack, stop_jobs=True)
    assert 'is on %s already, and no move of it is under way: nothing to do' % B_NAME in again_run.stdout, (
        again_run.stdout[-3000:]
    )
    assert re.search(r'^nomad-dev\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0', again_run.stdout, re.M), (
        again_run.stdout[-1500:]
    )
    # The given-up move's final snapshot stays, on both sides; this move's own is the newest.
    _aborted_final, final = [s for s in snapshot_names(vm, B_DATASET) if s.startswith('nomad-zfs-csi-move_')]
    assert not exists(vm, ON_B)
    kept = vm.sh('journalctl -t zfs-dataset --since @%s --no-pager -o cat' % since).stdout
    assert 'kept %s: its data moved to %s' % (A_DATASET, B_NAME) in kept, kept

    # The moved-from dataset is node A's replica of the volume now: read-only, unmounted, none of the volume's marks;
    # renamed whole, since it wrote nothing after the final snapshot (no copy kept aside).
    assert not exists(vm, A_DATASET) and not exists(vm, '%s.diverged-after-%s' % (A_DATASET, final))
    assert props(vm, ON_A, 'readonly', 'mounted', MOVED, 'syncoid:sync', 'com.sun:auto-snapshot') == {
        'readonly': 'on',
        'mounted': 'no',
        MOVED: '-',
        'syncoid:sync': '-',
        'com.sun:auto-snapshot': '-',
    }
    assert guid(vm, ON_A + '@' + final) == guid(vm, B_DATASET + '@' + final)

    # Replication back carries only what changed on B: the 1 MiB file, from the final snapshot, not the 8 MiB.
    vm.zfs('snapshot', B_DATASET + '@autosnap_2026-11-26_01:00:00_hourly')
    journal = pull(vm, A_PULL)
    assert re.search(
        r"Sending incremental %s@'?%s'? \.\.\. '?autosnap_2026-11-26_01:00:00_hourly" % (B_DATASET, final), journal
    ), journal
    increment = vm.sh('zfs send -nvP -i @%s %s@autosnap_2026-11-26_01:00:00_hourly 2>&1' % (final, B_DATASET)).stdout
    size = int([line.split()[1] for line in increment.splitlines() if line.startswith('size')][0])
    assert MIB <= size < 1.5 * MIB, increment
    assert guid(vm, ON_A + '@autosnap_2026-11-26_01:00:00_hourly') == guid(
        vm, B_DATASET + '@autosnap_2026-11-26_01:00:00_hourly'
    )

    # A drain of B brings it back by itself. The follow controller, two instances of its Nomad job on the admin
    # client (playbooks/follow_controller.yml), runs the follow playbook in the one that holds the lock, with its
    # workload identity as its token and its SSH key from its variable; its move takes demo-mv with its data and its
    # job to A, which holds its replica. Nobody runs anything but the drain, not even when the acting instance
    # crashes in the middle of the move.
    vm.sh('echo before-the-drain > /%s/drained' % B_DATASET)
    hosts = {k: v for k, v in move_vars(stack).items() if k.startswith('host_volume_move_')}
    (tmp_path / 'admin').mkdir()
    drained = 'The drain of %s:' % B_NAME
    try:
        with admin_client(stack, tmp_path / 'admin') as admin, follow_job(stack, admin, hosts, count=2) as rulebook:
            rulebook.wait_for('Holding the lock %s' % FOLLOW_LOCK, timeout=180, why='an instance holding the lock')
            drain(stack, b_node, True)
            # The move has stopped the job: every process of the acting instance is killed, the playbook
            # too. Nomad restarts it; whichever instance takes the lock next follows B's drain again (node_snapshot),
            # and goes on with the move from its journal.
            wait_until(
                lambda: (move_journal(stack) or {}).get('done', '').startswith('stop'),
                timeout=600,
                why='the move under way, its job stopped',
            )
            [acting] = [
                alloc for alloc, said in rulebook.outputs().items() if 'Follow the drain or the loss of a node' in said
            ]
            admin.crash_task(acting, 'rulebook')
            said = rulebook.wait_for(drained, timeout=900, why='the follow of the drain, after the crash')
            moved = '%s %s/%s moved to %s; 0 could not move.' % (drained, NAMESPACE, VOLUME, a_node['Name'])
            assert moved in said and 'going on after stop' in said, said[-6000:]
            # One instance acted at a time: the drain's follow ended once, and an instance waited for the lock.
            assert said.count(drained) == 1, said[-6000:]
            assert 'Waiting for the lock %s: another instance holds it' % FOLLOW_LOCK in said, said[-6000:]
        # The same follow by hand while B is still drained: nothing is left to move, and nothing changes.
        again_follow = move(stack, playbook=FOLLOW, node=B_NAME)
    finally:
        drain(stack, b_node, False)
    assert changed(again_follow)['nomad-dev'] == 0, playbook_said(again_follow)
    assert 'The drain of %s: 0 could not move.' % B_NAME in again_follow.stdout, again_follow.stdout[-3000:]
    back = wait_until(
        lambda: running(stack, a_node['ID']),
        timeout=180,
        why=lambda _r: 'the job running on node A after the drain: %s' % job_state(stack),
    )
    [(_id, node_id)] = volumes(stack)
    assert node_id == a_node['ID'] and back['ID'] != again['ID']
    assert vm.sh('cat /%s/drained' % A_DATASET).stdout == 'before-the-drain\n'


def test_a_failover_waits_until_node_b_writes_no_more_and_brings_the_volume_up_on_a(
    stack, vm, two_nodes, gone_after, b_back, tmp_path
):
    """Never two writers: node B, cut off from the server, keeps its tasks; a failover of their volumes is refused
    until they are stopped, by B's own agent after stop_on_client_after (demo-fs), or by powering B off, which the
    operator then states (demo-fo). Back, B becomes demo-fo's standby by one command, its diverged copy kept aside."""
    a_node, b_node = two_nodes
    name, fenced_name = 'demo-fo', 'demo-fs'
    dataset = '%s/%s/%s' % (B_VOLUMES, NAMESPACE, name)
    gone_after(name)
    gone_after(fenced_name)
    first = volume_with_job(stack, name, b_node, dataset)
    [(first_volume_id, _node)] = volumes(stack, name)
    guarded = volume_with_job(
        stack, fenced_name, b_node, '%s/%s/%s' % (B_VOLUMES, NAMESPACE, fenced_name), stop_on_client_after=FENCE_AFTER
    )
    # The last replication before the loss, then a write that never reaches the standby.
    snapshot = 'autosnap_' + vm.sh('date -u +%Y-%m-%d_%H:%M:%S').stdout.strip() + '_hourly'
    vm.zfs('snapshot', '-r', '%s@%s' % (B_VOLUMES, snapshot))
    pull(vm, A_PULL)
    taken = int(vm.zfs('get', '-Hp', '-o', 'value', 'creation', '%s@%s' % (dataset, snapshot)).stdout)
    vm.sh('echo after-the-last-pull > /%s/lost' % dataset)

    # B's agent runs on, cut off from the server: Nomad marks B down, and both tasks still run.
    cut_off(vm)
    wait_until(lambda: stack.get('/v1/node/' + b_node['ID'])['Status'] == 'down', timeout=120, why='node B down')
    fast = {'host_volume_move_fence_margin': FENCE_MARGIN}
    early = plan_refused(
        stack,
        'Node %s has been down' % B_NAME,
        name=fenced_name,
        to=a_node['Name'],
        failover=True,
        fence_margin=FENCE_MARGIN,
    )
    assert 'its allocations %s stop themselves after stop_on_client_after' % guarded['ID'][:8] in early
    assert task_pids(vm, first['ID'])
    plan_refused(stack, 'a planned move needs it to send the last', name=name, to=a_node['Name'], stop_jobs=True)
    unguarded = 'Node %s is down, but its allocations %s (%s.g) may still be writing to %s' % (
        B_NAME,
        first['ID'][:8],
        name,
        name,
    )
    refused(move(stack, playbook=FAILOVER, volume=name, to=a_node['Name']), unguarded)

    # B's agent stops demo-fs's task itself; once that is certain, demo-fs fails over without the operator's word.
    wait_until(lambda: not task_pids(vm, guarded['ID']), timeout=90, why="demo-fs's task stopped by B's own agent")
    # The servers' clock: the VM's.
    down_for = int(vm.sh('date +%s').stdout) - down_since(stack, b_node)
    time.sleep(max(0, 2 * FENCE_AFTER + FENCE_MARGIN - down_for) + 1)
    fenced_by_itself = move(stack, playbook=FAILOVER, volume=fenced_name, to=a_node['Name'], **fast)
    assert fenced_by_itself.returncode == 0, playbook_said(fenced_by_itself)
    assert 'allocations stopped themselves (disconnect.stop_on_client_after)' in fenced_by_itself.stdout
    wait_until(lambda: running(stack, a_node['ID'], fenced_name), timeout=180, why='demo-fs running on node A')

    # demo-fo's task outlives its agent too: still refused, until B is powered off and the operator says so.
    crash(vm)
    assert task_pids(vm, first['ID'])
    plan_refused(stack, unguarded, name=name, to=a_node['Name'], failover=True)
    # Nor does the follow controller fail it over, started as an operator starts it: B advertises no fence watchdog.
    # Its event says why, and so do its metrics for the node exporter.
    metrics = tmp_path / 'metrics'
    metrics.mkdir()
    hosts = {k: v for k, v in move_vars(stack).items() if k.startswith('host_volume_move_')}
    hosts.update(host_volume_move_fence_margin=FENCE_MARGIN, host_volume_move_follow_metrics_dir=str(metrics))
    with follow_rulebook(stack, tmp_path, mover(stack), hosts) as rulebook:
        said = rulebook.wait_for("'reason': 'not_fenced'", timeout=300, why="the follow's event")
    assert "'name': '%s'" % name in said and '%s/%s stays (%s' % (NAMESPACE, name, unguarded) in said, said[-6000:]
    [(_id, node_id)] = volumes(stack, name)
    assert node_id == b_node['ID'] and task_pids(vm, first['ID'])
    stays = (metrics / ('nomad_zfs_csi_follow_%s.prom' % b_node['ID'])).read_text()
    labels = 'node="%s",node_id="%s",kind="failover"' % (B_NAME, b_node['ID'])
    assert 'nomad_zfs_csi_follow_volumes_following{%s} 0' % labels in stays, stays
    assert (
        'nomad_zfs_csi_follow_volume_stays{%s,namespace="%s",volume="%s",reason="not_fenced"} 1'
        % (
            labels,
            NAMESPACE,
            name,
        )
        in stays
    ), stays
    lose(vm)
    # The operator's machine dies once Nomad forgot B's volume, before the journal says so; the same command, without
    # fenced=true this time (the journal holds how B was fenced), finishes the failover.
    gone = "Record that the lost node's volume is gone"
    move_killed_at(stack, gone, playbook=FAILOVER, volume=name, to=a_node['Name'], fenced=True)
    assert move_journal(stack, name)['kind'] == 'failover' and volumes(stack, name) == []
    failed_over = move(stack, playbook=FAILOVER, volume=name, to=a_node['Name'])
    assert failed_over.returncode == 0, playbook_said(failed_over)
    assert move_journal(stack, name) is None and move_journal(stack, fenced_name) is None
    assert 'writes no more: the operator says it is fenced (fenced=true)' in failed_over.stdout
    point = re.search(r'Recovery point of %s: (\S+), taken (\S+), (\d+) s\s+ago' % name, failed_over.stdout)
    assert point, failed_over.stdout[-3000:]
    assert point.group(1) == '%s/127.0.0.1/%s@%s' % (A_REPLICAS, dataset, snapshot)
    assert point.group(2) == time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(taken))

    # The job runs on A, on the data as of that replication: the first file, not the one written after it.
    [(new_id, node_id)] = volumes(stack, name)
    assert node_id == a_node['ID'], failed_over.stdout[-3000:]
    again = wait_until(lambda: running(stack, a_node['ID'], name), timeout=180, why='the job running on node A')
    on_a = '%s/%s/%s' % (HOST_VOLUMES, NAMESPACE, name)
    wait_until(lambda: vm.sh('test -s /%s/second' % on_a, check=False).returncode == 0, timeout=60, why='2nd file')
    assert vm.sh('cat /%s/seen' % on_a).stdout.strip() == first['ID'] != again['ID']
    assert vm.sh('test -e /%s/lost' % on_a, check=False).returncode != 0

    # B comes back: its copy, with what was written after the last pull, stays, and no allocation mounts it.
    reconnect(vm)
    start(vm)
    wait_until(lambda: stack.get('/v1/node/' + b_node['ID'])['Status'] == 'ready', timeout=180, why='node B back')
    assert vm.sh('cat /%s/lost' % dataset).stdout == 'after-the-last-pull\n'
    assert running(stack, b_node['ID'], name) is None and running(stack, a_node['ID'], name)['ID'] == again['ID']
    assert vm.sh('awk \'$1 == "%s"\' /proc/mounts | wc -l' % dataset).stdout.strip() == '1'  # the plugin's own mount
    assert volumes(stack, name) == [(new_id, a_node['ID'])]
    # A move back to B now would adopt the volume over that copy: refused before anything changes.
    refused(move(stack, volume=name, stop_jobs=True), 'Node %s still has a dataset %s' % (B_NAME, dataset))
    assert running(stack, a_node['ID'], name)['ID'] == again['ID']

    # One command makes B the standby. Its copy, with the write after the last pull, is kept aside whole, read-only
    # and marked; a promoted clone of the recovery point becomes B's replica of the volume on A.
    aside = '%s.diverged-after-%s' % (dataset, snapshot)
    replica = '%s/127.0.0.1/%s' % (B_REPLICAS, on_a)
    checked = move(stack, '--check', '--diff', playbook=REJOIN, volume=name, node=B_NAME)
    assert checked.returncode == 0 and 'would pull it into %s' % replica in checked.stdout, checked.stdout[-3000:]
    assert exists(vm, dataset) and not exists(vm, replica) and not exists(vm, aside)
    rejoined = move(stack, playbook=REJOIN, volume=name, node=B_NAME)
    assert rejoined.returncode == 0, playbook_said(rejoined)
    assert 'kept whole as %s' % aside in rejoined.stdout, rejoined.stdout[-3000:]
    assert not exists(vm, dataset) and guid(vm, replica + '@' + snapshot) == guid(vm, on_a + '@' + snapshot)
    assert vm.zfs('get', '-H', '-o', 'value', 'readonly,%s,%s' % (MOVED, MARK), aside).stdout.split() == [
        'on',
        a_node['Name'],
        first_volume_id,
    ]
    vm.zfs('mount', aside)
    assert vm.sh('cat /%s/lost' % aside).stdout == 'after-the-last-pull\n'

    # B's agent starts again: its client state still holds the old volume, and the plugin makes no empty one.
    crash(vm)
    start(vm)
    wait_until(lambda: stack.get('/v1/node/' + b_node['ID'])['Status'] == 'ready', timeout=180, why='node B back')
    assert not exists(vm, dataset) and volumes(stack, name) == [(new_id, a_node['ID'])]

    # The next pull from A sends only what A wrote since the recovery point; a second run changes nothing.
    later = 'autosnap_' + vm.sh('date -u -d "+1 hour" +%Y-%m-%d_%H:%M:%S').stdout.strip() + '_hourly'
    vm.zfs('snapshot', '%s@%s' % (on_a, later))
    journal = pull(vm, B_PULL)
    assert re.search(r"Sending incremental %s@'?\S+'? \.\.\. '?%s" % (on_a, later), journal), journal
    assert guid(vm, replica + '@' + later) == guid(vm, on_a + '@' + later)
    again = move(stack, playbook=REJOIN, volume=name, node=B_NAME)
    assert re.search(r'^nomad-dev\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0', again.stdout, re.M), again.stdout[
        -3000:
    ]

    # Nomad's client on B still holds the old volume in its state, and with it the name on that node (its restore
    # locks the name before the plugin's create, and keeps it when the create fails): the same name cannot be made
    # on B again, which is why a move back to B is a documented limit (docs/move-and-failover.md).
    held = stack.module(
        'nomad_host_volume',
        {
            'name': name,
            'namespace': NAMESPACE,
            'node_id': b_node['ID'],
            'plugin_id': 'zfs-dataset',
            'capacity_max': '64M',
        },
    )
    fingerprint = stack.get('/v1/node/' + b_node['ID']).get('HostVolumes') or {}
    assert held['rc'] != 0 and 'volume name already exists on this node' in held['msg'], (held, fingerprint)
    assert volumes(stack, name) == [(new_id, a_node['ID'])]


def test_node_bs_watchdog_fences_it_once_out_of_contact_and_the_follow_then_fails_its_volume_over_to_a(
    stack, vm, two_nodes, gone_after, b_back, tmp_path
):
    """Node B's fence watchdog (host_volume_plugin_fence_after): an agent stalled for less than fence_after changes
    nothing; once B's agent has been dead that long, the task it left writing is killed and B's volumes are
    read-only, marked with the time. The follow rulebook, started as an operator starts it, then fails the job's
    volume over to A, once B surely fenced itself, and leaves the volume no job uses: never two writers, sampled by
    the writers themselves. Back, B keeps its fence, and `zfs-fence release` ends it only where Nomad still places
    the volume on B. Turned off, the watchdog stops and the node no longer advertises it."""
    a_node, b_node = two_nodes
    name, unused = 'demo-wd', 'demo-wd-idle'
    dataset, idle = ('%s/%s/%s' % (B_VOLUMES, NAMESPACE, n) for n in (name, unused))
    conf = '/etc/nomad-zfs-csi/fence/%s.conf' % B_UNIT
    since = vm.sh('date +%s').stdout.strip()
    gone_after(name)
    gone_after(unused)
    watchdog = {
        'host_volume_plugin_fence_after': WATCHDOG_AFTER,
        'host_volume_plugin_fence_nomad_token': stack.secret('host-volume-operator'),
    }
    ran = plugin_role(stack, **watchdog)
    assert changed(ran)['zfsvm'] > 0, playbook_said(ran)
    assert changed(plugin_role(stack, **watchdog))['zfsvm'] == 0
    assert vm.sh('systemctl is-active nomad-zfs-csi-fence@%s' % B_UNIT).stdout.strip() == 'active'
    assert stack.secret('host-volume-operator') not in vm.sh('journalctl -u nomad-zfs-csi-fence@%s' % B_UNIT).stdout
    advertised = {'nomad_zfs_csi.fence_after': str(WATCHDOG_AFTER), 'nomad_zfs_csi.fence_plugin': 'zfs-dataset'}
    wait_until(
        lambda: advertised.items() <= stack.get('/v1/node/' + b_node['ID'])['Meta'].items(),
        timeout=60,
        why="B's metadata advertising the watchdog",
    )
    first = volume_with_job(stack, name, b_node, dataset, script=WRITER)
    made = stack.module(
        'nomad_host_volume',
        {
            'name': unused,
            'namespace': NAMESPACE,
            'node_id': b_node['ID'],
            'plugin_id': 'zfs-dataset',
            'capacity_max': '64MiB',
        },
    )
    assert made['rc'] == 0, made
    # The last replication before the loss: A holds both volumes' replicas.
    vm.zfs('snapshot', '-r', '%s@autosnap_%s_hourly' % (B_VOLUMES, vm.sh('date -u +%F_%T').stdout.strip()))
    pull(vm, A_PULL)

    def fence_marks(of=dataset):
        return vm.zfs('get', '-H', '-o', 'value', 'readonly,' + FENCED, of).stdout.split()

    def beats(of=dataset):
        """The writers' beats in a copy of the volume: (time, allocation) each."""
        lines = vm.sh('cat /%s/beat' % of).stdout.split('\n')
        return [(float(t), alloc) for t, alloc in (line.split() for line in lines if line)]

    # A stall shorter than fence_after (and than the heartbeat's TTL): nothing is fenced.
    vm.sh('systemctl kill -s STOP %s; sleep 6; systemctl kill -s CONT %s' % (B_UNIT, B_UNIT))
    time.sleep(WATCHDOG_AFTER)
    assert fence_marks() == ['off', '-'] and task_pids(vm, first['ID'])

    hosts = {k: v for k, v in move_vars(stack).items() if k.startswith('host_volume_move_')}
    hosts['host_volume_move_fence_margin'] = FENCE_MARGIN
    with follow_rulebook(stack, tmp_path, mover(stack), hosts) as rulebook:
        # B's agent dies and leaves its task writing: the watchdog kills it once B was last seen ready fence_after
        # ago.
        crash(vm)
        crashed = time.monotonic()
        written = len(beats())
        wait_until(
            lambda: not task_pids(vm, first['ID']), timeout=3 * WATCHDOG_AFTER, why='the task killed by the fence'
        )
        took = time.monotonic() - crashed
        # Last seen ready at most one check (5 s) before the crash; the VM's slowness only delays the fence.
        assert WATCHDOG_AFTER - 6 <= took, took
        assert len(beats()) > written
        # The watchdog kills first, then sets its volumes read-only.
        wait_until(
            lambda: fence_marks()[0] == fence_marks(idle)[0] == 'on', timeout=60, why='the volumes made read-only'
        )
        readonly, fenced_at = fence_marks()
        assert re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ', fenced_at), fenced_at
        assert fence_marks(idle) == ['on', fenced_at]
        refused_write = vm.sh('echo root > /%s/after-the-fence' % dataset, check=False)
        assert refused_write.returncode != 0 and 'Read-only file system' in refused_write.stderr
        logged = vm.sh('journalctl -u nomad-zfs-csi-fence@%s --since @%s' % (B_UNIT, since)).stdout
        # Every volume under B's parent, those the earlier tests left there too.
        assert re.search(r'fenced (\S+, )*%s(, \S+)*: read-only' % re.escape(dataset), logged), logged[-2000:]
        assert 'out of contact: no answer from the agent' in logged, logged[-2000:]
        # Only the job's tasks: not B's other tasks, which see the volume at its mountpoint (a raw_exec one does).
        killed = set(re.findall(r'killed task \S*/([0-9a-f-]{36})\.[^/\s]+\.scope', logged))
        allocations = {a['ID'] for a in stack.get('/v1/job/%s/allocations?namespace=%s' % (name, NAMESPACE))}
        assert first['ID'] in killed and killed <= allocations, (killed, allocations)

        # Nomad marks B down, and the rulebook's follow fails the volume over once B's watchdog surely fenced it.
        said = rulebook.wait_for('The loss of %s:' % B_NAME, timeout=900, why='the follow of the loss of B')
    assert 'The loss of %s: %s/%s failed over to %s;' % (B_NAME, NAMESPACE, name, a_node['Name']) in said, said[-4000:]
    assert '%s/%s stays (no job lost with the node uses it' % (NAMESPACE, unused) in said, said[-4000:]
    assert ' 0 could not move.' in said, said[-4000:]
    how = re.search(r'beyond the (\d+) s after which its fence watchdog \(fence_after %d s\)' % WATCHDOG_AFTER, said)
    assert how and int(how.group(1)) == 125 + FENCE_MARGIN, said[-4000:]
    assert re.search(r'Recovery point of %s: \S+@autosnap_\S+, taken' % name, said), said[-4000:]
    [(_id, node_id)] = volumes(stack, name)
    assert node_id == a_node['ID']
    again = wait_until(lambda: running(stack, a_node['ID'], name), timeout=180, why='the job running on node A')
    on_a = '%s/%s/%s' % (HOST_VOLUMES, NAMESPACE, name)
    wait_until(lambda: [b for b in beats(on_a) if b[1] == again['ID']], timeout=60, why="the job's beats on node A")
    # Never two writers: B's task wrote its last beat before A's first.
    last_on_b = max(t for t, alloc in beats() if alloc == first['ID'])
    first_on_a = min(t for t, alloc in beats(on_a) if alloc == again['ID'])
    assert last_on_b < first_on_a, (last_on_b, first_on_a)

    # B comes back: the fence stays (A holds demo-wd now). Released only where Nomad still places the volume on B.
    start(vm)
    # Back as the watchdog sees it: its agent answers, and the servers see B ready (their old status is no answer).
    back = 'python3 -IS %s check %s' % (FENCE, conf)
    wait_until(
        lambda: vm.sh(back, check=False).returncode == 0, timeout=180, why='node B back, as its watchdog sees it'
    )
    assert fence_marks() == ['on', fenced_at] and fence_marks(idle) == ['on', fenced_at]
    not_one = vm.sh('python3 -IS %s release %s demo/nothing' % (FENCE, conf), check=False)
    assert not_one.returncode == 1 and 'is no volume of the zfs-dataset plugin' in not_one.stderr, not_one.stderr
    # With a token that may read the volumes: the mover's.
    release = 'NOMAD_TOKEN=%s python3 -IS %s release %s %s/%%s' % (mover(stack), FENCE, conf, NAMESPACE)
    moved_away = vm.sh(release % name, check=False)
    assert moved_away.returncode == 1 and 'the servers do not place volume' in moved_away.stderr, moved_away.stderr
    assert fence_marks() == ['on', fenced_at]
    released = vm.sh(release % unused, check=False)
    assert released.returncode == 0, released.stderr
    assert fence_marks(idle) == ['off', '-']

    off = plugin_role(stack, host_volume_plugin_fence_after=0)
    assert changed(off)['zfsvm'] > 0, playbook_said(off)
    assert vm.sh('systemctl is-active nomad-zfs-csi-fence@%s' % B_UNIT, check=False).stdout.strip() == 'inactive'
    assert vm.sh('test -e %s' % conf, check=False).returncode != 0
    wait_until(
        lambda: not set(advertised) & set(stack.get('/v1/node/' + b_node['ID'])['Meta']),
        timeout=60,
        why='the watchdog no longer advertised',
    )
