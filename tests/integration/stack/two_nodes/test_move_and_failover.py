"""A planned move of a zfs-dataset host volume to another node, with its data and the job that uses it, by
playbooks/move_host_volume.yml, on the stack's Nomad with two client agents and the real sanoid and syncoid pulls,
then a drain that the follow controller's job follows. Every move runs on the mover's token that site.yml made
(nomad_access_mover_name), as the operator runs them, in tenant demo's namespace: the only kind of namespace that
token reaches. The failover and the fence watchdog are on the example's clients (tests/integration/cluster).

Node A is the stack's node (pool tank), node B is nzc-b (pool nodeb, node_b.py); the VM is both nodes' host. B
pulls A's volumes into nodeb/replica, A pulls B's into tank/it-replicas: each replica parent in the pool of the
node that adopts from it. The backups' timers are stopped for the test, which runs sanoid and the pulls itself.
"""

import json
import re

import pytest
from stack_layout import HOST_VOLUMES, REPO

from admin_client import admin_client
from follow_rulebook import follow_job
from host_volume_job import host_volume_job
from node_b import HOST_VOLUMES as B_VOLUMES
from node_b import NAME as B_NAME
from replicating_nodes import A_PULL, A_REPLICAS, B_PULL, B_REPLICAS, snapshot_now
from test_host_volume_plugin import MARK, props
from zfsvm_client import changed, playbook_said, pull, wait_until

MOVE = REPO / 'playbooks' / 'move_host_volume.yml'
FOLLOW = REPO / 'playbooks' / 'follow_node.yml'
# Tenant demo may mount host volumes named demo-* (inventories/local), and the mover moves only tenants' volumes.
NAMESPACE, VOLUME = 'demo', 'demo-mv'
A_DATASET, B_DATASET = '%s/%s/%s' % (HOST_VOLUMES, NAMESPACE, VOLUME), '%s/%s/%s' % (B_VOLUMES, NAMESPACE, VOLUME)
# Each node's replica of the other's volume: <replica parent>/<host>/<parent>/<namespace>/<name>.
ON_B, ON_A = '%s/127.0.0.1/%s' % (B_REPLICAS, A_DATASET), '%s/127.0.0.1/%s' % (A_REPLICAS, B_DATASET)
MIB = 1048576
MOVED = 'nomad-zfs-csi:moved-to'
FOLLOW_LOCK = 'nomad-zfs-csi/follow/lock'
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
