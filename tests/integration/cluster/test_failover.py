"""A failover between the example's clients, on hosts of their own: client-2 is cut from the others by its link
going down (a real partition: its agent and its tasks run on, and nothing of theirs arrives), then powered off and
back on with its disk. Never two writers: a volume fails over only once client-2's own agent stopped its tasks
(stop_on_client_after) or the operator says it is fenced, and the follow rulebook leaves it where it is until then;
back, client-2 becomes the standby by one command, its diverged copy kept aside. Every move runs on the mover's
token, as the example's operator runs them."""

import re
import time

import pytest

from host_volume_job import host_volume_job
from nomad_agents import crash_agent, node_name, start_agent, task_pids
from separate_hosts import CLIENT_1, CLIENT_2
from topology import ADMIN, host_volumes
from zfsvm_client import STOP_BACKUPS, changed, playbook_said, pull, tolerant, wait_until

# The extended tier (docs/testing.md, Tiers), until it can take the place of the two nodes' failover within CI's
# budget (a rehearsal with it in the core tier, 2026-12-04: docs/testing.md, Separate hosts).
pytestmark = pytest.mark.extended

NAMESPACE = 'team-a'
UNGUARDED, GUARDED = 'ledger', 'cache'
MARK = 'nomad-zfs-csi:host-volume-id'
MOVED = 'nomad-zfs-csi:moved-to'
# cache's group stops itself this many seconds after its client lost the server; the failover waits twice that plus
# this margin after the node went down. Longer than the heartbeat's TTL (10 to 20 s): with 10 s, a connected client
# stopped its group itself between two heartbeats (seen on the local stack's two nodes).
FENCE_AFTER, FENCE_MARGIN = 30, 5
# The first allocation leaves its ID; one that finds it copies it to `seen` and writes 1 MiB more.
SCRIPT = (
    'if [ -f /data/first ]; then cat /data/first > /data/seen; head -c 1048576 /dev/urandom > /data/second; '
    'else echo "$NOMAD_ALLOC_ID" > /data/first; fi; sync; sleep 3600'
)


# A host's backups stopped, and their timers masked so that they stay off through a boot too: at boot, the pulls'
# timers catch up at once (seen in a rehearsal: client-2's pull of client-1's new volume before the failover test's
# rejoin, which found the replica made). The names are kept for RELEASE_BACKUPS. Not for a test that runs site.yml there
# meanwhile: the role starts the timers, and systemd refuses a masked one.
HELD = '/root/nzc-held-timers'
HOLD_BACKUPS = STOP_BACKUPS + (
    " && held=\"sanoid.timer $(systemctl list-units --all --plain --no-legend 'zfs-replication-pull@*.timer' | "
    "awk '{print $1}')\" && echo $held > %s && systemctl mask $held" % HELD
)
RELEASE_BACKUPS = 'if [ -f {0} ]; then systemctl unmask $(cat {0}) && rm {0}; fi'.format(HELD)


def dataset(client, name):
    return '%s/%s/%s' % (host_volumes(client), NAMESPACE, name)


def replica_parent(standby, primary):
    """Where standby's pull puts primary's host volumes: <replica parent>/<primary's host>/<primary's parent>."""
    return '%s/%s/%s' % (host_volumes(standby, 'replica'), primary, host_volumes(primary))


def exists(host, name):
    return host.zfs('list', name, check=False).returncode == 0


def guid(host, snapshot):
    return host.zfs('get', '-Hp', '-o', 'value', 'guid', snapshot).stdout.strip()


def volumes(cluster, name):
    listed = cluster.api('GET', '/v1/volumes?type=host&namespace=%s&prefix=%s' % (NAMESPACE, name))
    return [(v['ID'], v['NodeID']) for v in listed if v['Name'] == name]


def running(cluster, node_id, job_id):
    allocs = cluster.api('GET', '/v1/job/%s/allocations?namespace=%s' % (job_id, NAMESPACE))
    live = [a for a in allocs if a['ClientStatus'] == 'running' and a['NodeID'] == node_id]
    return live[0] if live else None


def node_status(cluster, node_id):
    return cluster.api('GET', '/v1/node/' + node_id)['Status']


def make_volume(cluster, name, node_id):
    """nomad_host_volume's making of volume `name` on the node; its result."""
    return cluster.module(
        'nomad_host_volume', name=name, namespace=NAMESPACE, node_id=node_id, plugin_id='zfs-dataset',
        capacity_max='64MiB',
    )  # fmt: skip


def volume_with_job(cluster, name, client, node_id, stop_on_client_after=None, script=SCRIPT):
    """Volume `name` made on the client's node, and job `name` running there once it wrote its first file; its
    allocation."""
    made = make_volume(cluster, name, node_id)
    assert made.rc == 0, made.output
    job = host_volume_job(name, name, script, True, stop_on_client_after=stop_on_client_after, namespace=NAMESPACE)
    cluster.api('PUT', '/v1/jobs', job)
    first = wait_until(lambda: running(cluster, node_id, name), timeout=300, why='job %s running' % name)
    host = cluster.hosts[client]
    wait_until(lambda: host.sh('test -s /%s/first' % dataset(client, name), check=False).returncode == 0, why='file')
    return first


@pytest.fixture
def made_on_client_2(converged, separate_hosts):
    """made_on_client_2(name): job and volume `name` (in team-a's namespace) are gone after the test, wherever they
    are, and what the test made of them under the clients' parents too. Both clients' backups are stopped for the
    test (sanoid's timer, and the pulls' that could take a pull's work from the test's own), and on again after it,
    unmasked where the test held them (HOLD_BACKUPS);
    client-2 is mended and on, its agent running."""
    clients = [converged.hosts[c] for c in (CLIENT_1, CLIENT_2)]
    for host in clients:
        host.sh(STOP_BACKUPS)
    names = []
    yield names.append
    client_2 = converged.hosts[CLIENT_2]
    tolerant(separate_hosts.mend, client_2)
    tolerant(separate_hosts.power_on, client_2)
    tolerant(start_agent, client_2)
    for name in names:
        tolerant(converged.api, 'DELETE', '/v1/job/%s?namespace=%s&purge=true' % (name, NAMESPACE))
        for _id, node_id in volumes(converged, name):
            tolerant(
                wait_until,
                lambda n=node_id, v=name: (
                    converged.module('nomad_host_volume', name=v, namespace=NAMESPACE, node_id=n, state='deleted').rc
                    == 0
                ),
                bool,
                120,
                'volume %s deleted' % name,
            )
    # The copies the test left on each client: volumes, replicas, copies kept aside.
    for host in clients:
        listed = host.zfs('list', '-H', '-o', 'name', '-r', 'tank/' + node_name(host.name), check=False).stdout.split()
        for name in listed:
            namespace, leaf = name.split('/')[-2:]
            if namespace == NAMESPACE and leaf.split('.diverged-after-')[0] in names:
                tolerant(host.zfs, 'destroy', '-r', name)
        tolerant(host.sh, RELEASE_BACKUPS)
        tolerant(host.sh, "systemctl start sanoid.timer 'zfs-replication-pull@*.timer'")


def refused(ran, message):
    """A playbook run that failed on the admin host with message, having changed nothing there."""
    assert ran.returncode != 0 and message in ran.stdout, ran.stdout[-3000:]
    recap = r'^%s\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1' % re.escape(ADMIN)
    assert re.search(recap, ran.stdout, re.M), ran.stdout[-1500:]


def test_a_failover_waits_until_client_2_writes_no_more_and_client_2_comes_back_as_the_standby(
    converged, separate_hosts, made_on_client_2, tmp_path
):
    cluster, vm = converged, converged.vm
    made_on_client_2(UNGUARDED)
    made_on_client_2(GUARDED)
    client_1, client_2 = cluster.hosts[CLIENT_1], cluster.hosts[CLIENT_2]
    nodes = cluster.node_ids()
    to_1, to_2 = node_name(CLIENT_1), node_name(CLIENT_2)
    mover = cluster.secret('host-volume-mover')

    def plan_refused(message, **args):
        """What Nomad alone decides, asked of nomad_host_volume_move_plan on the mover's token, as the role's first
        call asks it: refused, before any change."""
        result = cluster.module('nomad_host_volume_move_plan', token=mover, namespace=NAMESPACE, **args)
        assert result.failed and message in result['msg'], result.output
        assert result['msg'].endswith(' Nothing was changed.'), result.output
        return result['msg']

    def wanted(**variables):
        """A move's extra vars, in tenant team-a's namespace (the mover's token is in the vault)."""
        return {'namespace': NAMESPACE} | variables

    def run(playbook, *flags, **variables):
        return cluster.playbook(playbook, *flags, extra=wanted(**variables))

    def journal(name):
        return cluster.variable('nomad-zfs-csi/moves/' + name, NAMESPACE)

    on_2 = dataset(CLIENT_2, UNGUARDED)
    first = volume_with_job(cluster, UNGUARDED, CLIENT_2, nodes[CLIENT_2])
    [(first_volume_id, _node)] = volumes(cluster, UNGUARDED)
    guarded = volume_with_job(cluster, GUARDED, CLIENT_2, nodes[CLIENT_2], stop_on_client_after=FENCE_AFTER)
    # The last replication before the loss, client-1's pull of client-2 by its timer's service, then a write that
    # never reaches client-1.
    snapshot = 'autosnap_' + vm.sh('date -u +%Y-%m-%d_%H:%M:%S').stdout.strip() + '_hourly'
    client_2.zfs('snapshot', '-r', '%s@%s' % (host_volumes(CLIENT_2), snapshot))
    standby = replica_parent(CLIENT_1, CLIENT_2)
    pull(client_1, standby.replace('/', '_'))
    taken = int(client_2.zfs('get', '-Hp', '-o', 'value', 'creation', '%s@%s' % (on_2, snapshot)).stdout)
    client_2.sh('echo after-the-last-pull > /%s/lost' % on_2)

    # client-2's backups stay off through its power cycle below (no SSH reaches it once cut off).
    client_2.sh(HOLD_BACKUPS)
    # client-2's link goes down: its agent and both tasks run on, and Nomad marks the node down.
    separate_hosts.cut(client_2)
    wait_until(lambda: node_status(cluster, nodes[CLIENT_2]) == 'down', timeout=180, why='client-2 down')
    early = plan_refused(
        'Node %s has been down' % to_2, name=GUARDED, to=to_1, failover=True, fence_margin=FENCE_MARGIN
    )
    assert 'its allocations %s stop themselves after stop_on_client_after' % guarded['ID'][:8] in early, early
    assert task_pids(vm, first['ID'])
    plan_refused('a planned move needs it to send the last', name=UNGUARDED, to=to_1, stop_jobs=True)
    unguarded = 'Node %s is down, but its allocations %s (%s.g) may still be writing to %s' % (
        to_2,
        first['ID'][:8],
        UNGUARDED,
        UNGUARDED,
    )
    refused(run('failover_host_volume', volume=UNGUARDED, to=to_1), unguarded)

    # client-2's agent stops cache's task itself; once that is certain, cache fails over without the operator's word.
    wait_until(lambda: not task_pids(vm, guarded['ID']), timeout=120, why="cache's task stopped by client-2's agent")
    # The servers' clock is the VM's, which every host shares.
    down_for = int(vm.sh('date +%s').stdout) - cluster.api('GET', '/v1/node/' + nodes[CLIENT_2])['StatusUpdatedAt']
    time.sleep(max(0, 2 * FENCE_AFTER + FENCE_MARGIN - down_for) + 1)
    fenced_by_itself = run('failover_host_volume', volume=GUARDED, to=to_1, host_volume_move_fence_margin=FENCE_MARGIN)
    assert fenced_by_itself.returncode == 0, playbook_said(fenced_by_itself)
    assert 'allocations stopped themselves (disconnect.stop_on_client_after)' in fenced_by_itself.stdout
    wait_until(lambda: running(cluster, nodes[CLIENT_1], GUARDED), timeout=300, why='cache running on client-1')

    # ledger's task still writes, cut off: still refused, until client-2 is powered off and the operator says so.
    plan_refused(unguarded, name=UNGUARDED, to=to_1, failover=True)
    # Nor does the follow rulebook fail it over, started as an operator starts it: client-2 advertises no fence
    # watchdog. Its event says why, and so do its metrics for the node exporter.
    metrics = tmp_path / 'metrics'
    metrics.mkdir()
    follow_vars = {'host_volume_move_fence_margin': FENCE_MARGIN, 'host_volume_move_follow_metrics_dir': str(metrics)}
    with cluster.follow_rulebook(mover, tmp_path, **follow_vars) as followed:
        said = followed.wait_for("'reason': 'not_fenced'", timeout=300, why="the follow's event")
    stays = '%s/%s stays (%s' % (NAMESPACE, UNGUARDED, unguarded)
    assert "'name': '%s'" % UNGUARDED in said and stays in said, said[-6000:]
    [(_id, node_id)] = volumes(cluster, UNGUARDED)
    assert node_id == nodes[CLIENT_2] and task_pids(vm, first['ID'])
    prom = (metrics / ('nomad_zfs_csi_follow_%s.prom' % nodes[CLIENT_2])).read_text()
    labels = 'node="%s",node_id="%s",kind="failover"' % (to_2, nodes[CLIENT_2])
    assert 'nomad_zfs_csi_follow_volumes_following{%s} 0' % labels in prom, prom
    stays_metric = 'nomad_zfs_csi_follow_volume_stays{%s,namespace="%s",volume="%s",reason="not_fenced"} 1'
    assert stays_metric % (labels, NAMESPACE, UNGUARDED) in prom, prom
    separate_hosts.power_off(client_2)
    assert task_pids(vm, first['ID']) == []
    # The operator's machine dies once Nomad forgot client-2's volume, before the journal says so; the same command,
    # without fenced=true this time (the journal holds how client-2 was fenced), finishes the failover.
    gone = "Record that the lost node's volume is gone"
    cluster.playbook_killed_at('failover_host_volume', gone, extra=wanted(volume=UNGUARDED, to=to_1, fenced=True))
    assert journal(UNGUARDED)['kind'] == 'failover' and volumes(cluster, UNGUARDED) == []
    failed_over = run('failover_host_volume', volume=UNGUARDED, to=to_1)
    assert failed_over.returncode == 0, playbook_said(failed_over)
    assert journal(UNGUARDED) is None and journal(GUARDED) is None
    assert 'writes no more: the operator says it is fenced (fenced=true)' in failed_over.stdout
    point = re.search(r'Recovery point of %s: (\S+), taken (\S+), (\d+) s\s+ago' % UNGUARDED, failed_over.stdout)
    assert point, failed_over.stdout[-3000:]
    assert point.group(1) == '%s/%s/%s@%s' % (standby, NAMESPACE, UNGUARDED, snapshot)
    assert point.group(2) == time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(taken))

    # The job runs on client-1, on the data as of that replication: the first file, not the one written after it.
    [(new_id, node_id)] = volumes(cluster, UNGUARDED)
    assert node_id == nodes[CLIENT_1], failed_over.stdout[-3000:]
    again = wait_until(lambda: running(cluster, nodes[CLIENT_1], UNGUARDED), timeout=300, why='ledger on client-1')
    on_1 = dataset(CLIENT_1, UNGUARDED)
    wait_until(lambda: client_1.sh('test -s /%s/second' % on_1, check=False).returncode == 0, why='2nd file')
    assert client_1.sh('cat /%s/seen' % on_1).stdout.strip() == first['ID'] != again['ID']
    assert client_1.sh('test -e /%s/lost' % on_1, check=False).returncode != 0

    # client-2 comes back with its disk: its copy, with what was written after the last pull, stays, and no
    # allocation mounts it.
    separate_hosts.mend(client_2)
    separate_hosts.power_on(client_2)
    wait_until(lambda: node_status(cluster, nodes[CLIENT_2]) == 'ready', timeout=300, why='client-2 back')
    assert running(cluster, nodes[CLIENT_2], UNGUARDED) is None
    assert running(cluster, nodes[CLIENT_1], UNGUARDED)['ID'] == again['ID']
    assert volumes(cluster, UNGUARDED) == [(new_id, nodes[CLIENT_1])]
    # The hosts' boot mounts nothing (zfs-mount.service is masked: it would mount every host's datasets), and Nomad's
    # restore of the volume it still holds does not either: mounted here as a real host's boot would.
    if client_2.zfs('get', '-H', '-o', 'value', 'mounted', on_2).stdout.strip() == 'no':
        client_2.zfs('mount', on_2)
    assert client_2.sh('cat /%s/lost' % on_2).stdout == 'after-the-last-pull\n'
    # A move back to client-2 now would adopt the volume over that copy: refused before anything changes.
    refused(run('move_host_volume', volume=UNGUARDED, to=to_2, stop_jobs=True),
            'Node %s still has a dataset %s' % (to_2, on_2))  # fmt: skip
    assert running(cluster, nodes[CLIENT_1], UNGUARDED)['ID'] == again['ID']

    # One command makes client-2 the standby. Its copy, with the write after the last pull, is kept aside whole,
    # read-only and marked; a promoted clone of the recovery point becomes client-2's replica of the volume on
    # client-1.
    aside = '%s.diverged-after-%s' % (on_2, snapshot)
    replica = '%s/%s/%s' % (replica_parent(CLIENT_2, CLIENT_1), NAMESPACE, UNGUARDED)
    checked = run('rejoin_host_volume', '--check', '--diff', volume=UNGUARDED, node=to_2)
    assert checked.returncode == 0 and 'would pull it into %s' % replica in checked.stdout, checked.stdout[-3000:]
    assert exists(client_2, on_2) and not exists(client_2, replica) and not exists(client_2, aside)
    rejoined = run('rejoin_host_volume', volume=UNGUARDED, node=to_2)
    assert rejoined.returncode == 0, playbook_said(rejoined)
    assert 'kept whole as %s' % aside in rejoined.stdout, rejoined.stdout[-3000:]
    assert not exists(client_2, on_2)
    assert guid(client_2, replica + '@' + snapshot) == guid(client_1, on_1 + '@' + snapshot)
    marks = client_2.zfs('get', '-H', '-o', 'value', 'readonly,%s,%s' % (MOVED, MARK), aside).stdout.split()
    assert marks == ['on', to_1, first_volume_id], marks
    client_2.zfs('mount', aside)
    assert client_2.sh('cat /%s/lost' % aside).stdout == 'after-the-last-pull\n'

    # client-2's agent crashes and starts again: its client state still holds the old volume, and the plugin makes
    # no empty one.
    crash_agent(client_2)
    since = vm.sh('date +%s').stdout.strip()
    start_agent(client_2)
    # Registered again, which its client does after its restore of the volumes its state holds.
    journal = 'journalctl -u nomad --since @%s --no-pager -o cat' % since
    wait_until(
        lambda: 'node registration complete' in client_2.sh(journal).stdout, timeout=300, why="client-2's agent back"
    )
    wait_until(lambda: node_status(cluster, nodes[CLIENT_2]) == 'ready', timeout=300, why='client-2 ready')
    assert not exists(client_2, on_2) and volumes(cluster, UNGUARDED) == [(new_id, nodes[CLIENT_1])]

    # client-2's next pull sends only what client-1 wrote since the recovery point; a second rejoin changes nothing.
    later = 'autosnap_' + vm.sh('date -u -d "+1 hour" +%Y-%m-%d_%H:%M:%S').stdout.strip() + '_hourly'
    client_1.zfs('snapshot', '%s@%s' % (on_1, later))
    said = pull(client_2, replica_parent(CLIENT_2, CLIENT_1).replace('/', '_'))
    assert re.search(r"Sending incremental %s@'?\S+'? \.\.\. '?%s" % (on_1, later), said), said
    assert guid(client_2, replica + '@' + later) == guid(client_1, on_1 + '@' + later)
    again_run = run('rejoin_host_volume', volume=UNGUARDED, node=to_2)
    assert set(changed(again_run).values()) == {0}, playbook_said(again_run)

    # Nomad's client on client-2 still holds the old volume in its state, and with it the name on that node: the
    # same name cannot be made there again (docs/move-and-failover.md, a move back is a documented limit).
    held = make_volume(cluster, UNGUARDED, nodes[CLIENT_2])
    assert held.failed and 'volume name already exists on this node' in held['msg'], held.output
    assert volumes(cluster, UNGUARDED) == [(new_id, nodes[CLIENT_1])]


# client-2's fence watchdog fences it this many seconds after it was last seen ready (host_volume_plugin_fence_after).
WATCHDOG_AFTER = 20
FENCED = 'nomad-zfs-csi:fenced-at'
FENCE = '/usr/local/libexec/nomad-zfs-csi/zfs-fence'
FENCE_CONF = '/etc/nomad-zfs-csi/fence/nomad.conf'
FENCE_UNIT = 'nomad-zfs-csi-fence@nomad'
# A task that writes all the time: a line every half second, with the time and its allocation.
WRITER = (
    'echo "$NOMAD_ALLOC_ID" > /data/first; while true; do echo "$(date +%s.%N) $NOMAD_ALLOC_ID" >> /data/beat; '
    'sleep 0.5; done'
)


@pytest.fixture
def fence_after(converged):
    """fence_after(seconds): client-2's watchdog set so, as an operator sets it, in the copy's host_vars of
    client-2, by site.yml limited to client-2 (its tokens from the vault); its run. Turned off after the test if the
    test left it on: asked before made_on_client_2, so that this runs after client-2's agent is back."""
    path = converged.inventory / 'host_vars' / (CLIENT_2 + '.yml')
    original = path.read_text()

    def set_to(seconds):
        path.write_text(original + 'host_volume_plugin_fence_after: %d\n' % seconds)
        return converged.site('--limit', CLIENT_2)

    yield set_to
    on = converged.hosts[CLIENT_2].sh('systemctl is-active -q %s' % FENCE_UNIT, check=False).returncode == 0
    if on:
        tolerant(set_to, 0)
    path.write_text(original)


def test_client_2s_watchdog_fences_it_once_out_of_contact_and_the_follow_then_fails_its_volume_over_to_client_1(
    converged, fence_after, made_on_client_2, tmp_path
):
    """client-2's fence watchdog: an agent stalled for less than fence_after changes nothing; once client-2's agent
    has been dead that long, the task it left writing is killed and client-2's volumes are read-only, marked with the
    time. The follow rulebook, started as an operator starts it, then fails the job's volume over to client-1, once
    client-2 surely fenced itself, and leaves the volume no job uses: never two writers, sampled by the writers
    themselves. Back, client-2 keeps its fence, and `zfs-fence release` ends it only where Nomad still places the
    volume on client-2. Turned off, the watchdog stops and the node no longer advertises it."""
    cluster, vm = converged, converged.vm
    client_1, client_2 = cluster.hosts[CLIENT_1], cluster.hosts[CLIENT_2]
    nodes = cluster.node_ids()
    to_1, to_2 = node_name(CLIENT_1), node_name(CLIENT_2)
    name, unused = 'beats', 'beats-idle'
    on_2, idle = dataset(CLIENT_2, name), dataset(CLIENT_2, unused)
    made_on_client_2(name)
    made_on_client_2(unused)
    since = client_2.sh('date +%s').stdout.strip()
    ran = fence_after(WATCHDOG_AFTER)
    assert changed(ran)[CLIENT_2] > 0, playbook_said(ran)
    again = fence_after(WATCHDOG_AFTER)
    assert changed(again) == {CLIENT_2: 0}, playbook_said(again)
    assert client_2.sh('systemctl is-active %s' % FENCE_UNIT).stdout.strip() == 'active'
    token = cluster.secret('fence-watchdog')
    assert token in client_2.sh('cat /etc/nomad-zfs-csi/fence/nomad.token').stdout
    assert token not in client_2.sh('journalctl -u %s' % FENCE_UNIT).stdout
    advertised = {'nomad_zfs_csi.fence_after': str(WATCHDOG_AFTER), 'nomad_zfs_csi.fence_plugin': 'zfs-dataset'}
    wait_until(
        lambda: advertised.items() <= cluster.api('GET', '/v1/node/' + nodes[CLIENT_2])['Meta'].items(),
        timeout=60,
        why="client-2's metadata advertising the watchdog",
    )
    first = volume_with_job(cluster, name, CLIENT_2, nodes[CLIENT_2], script=WRITER)
    made = make_volume(cluster, unused, nodes[CLIENT_2])
    assert made.rc == 0, made.output
    # The last replication before the loss: client-1 holds both volumes' replicas.
    client_2.zfs(
        'snapshot', '-r', '%s@autosnap_%s_hourly' % (host_volumes(CLIENT_2), vm.sh('date -u +%F_%T').stdout.strip())
    )
    pull(client_1, replica_parent(CLIENT_1, CLIENT_2).replace('/', '_'))

    def fence_marks(of=on_2):
        return client_2.zfs('get', '-H', '-o', 'value', 'readonly,' + FENCED, of).stdout.split()

    def beats(host, of):
        """The writers' beats in a copy of the volume: (time, allocation) each. The hosts share the VM's clock."""
        lines = host.sh('cat /%s/beat' % of).stdout.split('\n')
        return [(float(t), alloc) for t, alloc in (line.split() for line in lines if line)]

    # A stall shorter than fence_after (and than the heartbeat's TTL): nothing is fenced.
    client_2.sh('systemctl kill -s STOP nomad; sleep 6; systemctl kill -s CONT nomad')
    time.sleep(WATCHDOG_AFTER)
    assert fence_marks() == ['off', '-'] and task_pids(vm, first['ID'])

    mover = cluster.secret('host-volume-mover')
    with cluster.follow_rulebook(mover, tmp_path, host_volume_move_fence_margin=FENCE_MARGIN) as followed:
        # client-2's agent dies and leaves its task writing: the watchdog kills it once client-2 was last seen ready
        # fence_after ago.
        crash_agent(client_2)
        crashed = time.monotonic()
        written = len(beats(client_2, on_2))
        wait_until(
            lambda: not task_pids(vm, first['ID']), timeout=3 * WATCHDOG_AFTER, why='the task killed by the fence'
        )
        took = time.monotonic() - crashed
        # Last seen ready at most one check (5 s) before the crash; the VM's slowness only delays the fence.
        assert WATCHDOG_AFTER - 6 <= took, took
        assert len(beats(client_2, on_2)) > written
        # The watchdog kills first, then sets its volumes read-only.
        wait_until(
            lambda: fence_marks()[0] == fence_marks(idle)[0] == 'on', timeout=60, why='the volumes made read-only'
        )
        readonly, fenced_at = fence_marks()
        assert re.fullmatch(r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ', fenced_at), fenced_at
        assert fence_marks(idle) == ['on', fenced_at]
        refused_write = client_2.sh('echo root > /%s/after-the-fence' % on_2, check=False)
        assert refused_write.returncode != 0 and 'Read-only file system' in refused_write.stderr
        logged = client_2.sh('journalctl -u %s --since @%s' % (FENCE_UNIT, since)).stdout
        # Every volume under client-2's parent, those the earlier tests left there too.
        assert re.search(r'fenced (\S+, )*%s(, \S+)*: read-only' % re.escape(on_2), logged), logged[-2000:]
        assert 'out of contact: no answer from the agent' in logged, logged[-2000:]
        # Only the job's tasks.
        killed = set(re.findall(r'killed task \S*/([0-9a-f-]{36})\.[^/\s]+\.scope', logged))
        allocations = {a['ID'] for a in cluster.api('GET', '/v1/job/%s/allocations?namespace=%s' % (name, NAMESPACE))}
        assert first['ID'] in killed and killed <= allocations, (killed, allocations)

        # Nomad marks client-2 down, and the rulebook's follow fails the volume over once the watchdog surely fenced
        # it.
        said = followed.wait_for('The loss of %s:' % to_2, timeout=900, why='the follow of the loss of client-2')
    assert 'The loss of %s: %s/%s failed over to %s;' % (to_2, NAMESPACE, name, to_1) in said, said[-4000:]
    assert '%s/%s stays (no job lost with the node uses it' % (NAMESPACE, unused) in said, said[-4000:]
    assert ' 0 could not move.' in said, said[-4000:]
    how = re.search(r'beyond the (\d+) s after which its fence watchdog \(fence_after %d s\)' % WATCHDOG_AFTER, said)
    assert how and int(how.group(1)) == 125 + FENCE_MARGIN, said[-4000:]
    assert re.search(r'Recovery point of %s: \S+@autosnap_\S+, taken' % name, said), said[-4000:]
    [(_id, node_id)] = volumes(cluster, name)
    assert node_id == nodes[CLIENT_1]
    moved = wait_until(lambda: running(cluster, nodes[CLIENT_1], name), timeout=300, why='the job on client-1')
    on_1 = dataset(CLIENT_1, name)
    wait_until(lambda: [b for b in beats(client_1, on_1) if b[1] == moved['ID']], why="the job's beats on client-1")
    # Never two writers: client-2's task wrote its last beat before client-1's first.
    last_on_2 = max(t for t, alloc in beats(client_2, on_2) if alloc == first['ID'])
    first_on_1 = min(t for t, alloc in beats(client_1, on_1) if alloc == moved['ID'])
    assert last_on_2 < first_on_1, (last_on_2, first_on_1)

    # client-2 comes back: the fence stays (client-1 holds the volume now). Released only where Nomad still places
    # the volume on client-2.
    start_agent(client_2)
    # Back as the watchdog sees it: its agent answers, and the servers see client-2 ready.
    back = 'python3 -IS %s check %s' % (FENCE, FENCE_CONF)
    wait_until(
        lambda: client_2.sh(back, check=False).returncode == 0,
        timeout=300,
        why='client-2 back, as its watchdog sees it',
    )
    assert fence_marks() == ['on', fenced_at] and fence_marks(idle) == ['on', fenced_at]
    not_one = client_2.sh('python3 -IS %s release %s %s/nothing' % (FENCE, FENCE_CONF, NAMESPACE), check=False)
    assert not_one.returncode == 1 and 'is no volume of the zfs-dataset plugin' in not_one.stderr, not_one.stderr
    # With a token that may read the volumes, the mover's, on standard input (no secret in an argv).
    release = 'NOMAD_TOKEN=$(cat) python3 -IS %s release %s %s/%%s' % (FENCE, FENCE_CONF, NAMESPACE)
    moved_away = client_2.sh(release % name, check=False, stdin=mover)
    assert moved_away.returncode == 1 and 'the servers do not place volume' in moved_away.stderr, moved_away.stderr
    assert fence_marks() == ['on', fenced_at]
    released = client_2.sh(release % unused, check=False, stdin=mover)
    assert released.returncode == 0, released.stderr
    assert fence_marks(idle) == ['off', '-']

    off = fence_after(0)
    assert changed(off)[CLIENT_2] > 0, playbook_said(off)
    assert client_2.sh('systemctl is-active %s' % FENCE_UNIT, check=False).stdout.strip() == 'inactive'
    assert client_2.sh('test -e %s' % FENCE_CONF, check=False).returncode != 0
    wait_until(
        lambda: not set(advertised) & set(cluster.api('GET', '/v1/node/' + nodes[CLIENT_2])['Meta']),
        timeout=60,
        why='the watchdog no longer advertised',
    )
