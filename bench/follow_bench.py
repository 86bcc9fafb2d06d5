"""What a job waits when a drain moves its host volume by itself: the follow rulebook (nomad_zfs.csi.follow), running
on this host as an operator starts it, answers a drain of node B; against today's manual move of the same volume
(playbooks/move_host_volume.yml with stop_jobs, run by hand the moment the drain would have started). Same data for
both: a BENCH_MIB volume of random data held by a service job that only sleeps, on B, replicated to A, with 10 MiB
rewritten since the last pull. Both end with the job running on A with that data.

Interleaved: manual, follow, follow, manual, manual, follow (BENCH_ROUNDS pairs, 3 by default); medians per way.

- **until running**: from the drain's start (the manual move: the playbook's start) to the job running on A;
- **downtime**: from the last poll that saw the job's allocation running on B to the first that saw one running on A
  (polled every half second, for both ways alike);
- zfs and ssh processes in the VM (process accounting) and HTTP calls to the stack's agent, as move_bench counts them.

Then, B's fence watchdog turned on (fence_after 20 s, as the watchdog test's), BENCH_FAILOVERS failovers (3 by default)
of a volume whose job writes a beat every half second, replicated as above: B's agent is killed and leaves the task
writing, the watchdog fences B, Nomad marks it down, and the same rulebook fails the volume over to A.

- **loss to running**: from the kill of B's agent to the job running on A; **loss to fenced**: to its task gone;
- **downtime**: from the job's last beat on B to its first on A, as the beats in both copies tell it;
- **writes lost**: the seconds of beats that only B's copy holds, after the recovery point (the newest replicated
  snapshot, which the follow reports).

The local stack with node B (tests/integration/stack/replicating_nodes.py). Every way runs on the management token, in
namespace default (the mover's token reaches the tenants' namespaces only; the tests prove it).
"""

import os
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO / 'tests' / 'integration' / 'stack'), str(REPO / 'tests' / 'integration'), str(HERE)]
from move_bench import CHANGED, MIB, MOVE, WORK, Bench, Counted, bench_stack  # noqa: E402

from conftest import HOST_VOLUMES  # noqa: E402
from follow_rulebook import follow_rulebook  # noqa: E402
from host_volume_job import host_volume_job  # noqa: E402
from node_b import HOST_VOLUMES as B_VOLUMES  # noqa: E402
from node_b import NAME as B_NAME  # noqa: E402
from node_b import crash, node_ready, plugin_role, task_pids  # noqa: E402
from node_b import start as start_b  # noqa: E402
from replicating_nodes import A_PULL, A_REPLICAS, B_REPLICAS, replicating_nodes, snapshot_now  # noqa: E402
from zfsvm_client import pull, wait_until  # noqa: E402

NAME = 'bench-fl'
# B's agent serves plain HTTP at the address it advertises, while the stack's agent serves HTTPS.
AGENTS = {'host_volume_move_agent_addrs': {B_NAME: 'http://127.0.0.1:5656'}}
ROUNDS = int(os.environ.get('BENCH_ROUNDS', '3'))
FAILOVERS = int(os.environ.get('BENCH_FAILOVERS', '3'))
# The failover's: B's fence watchdog fences it this long after it was last seen ready (host_volume_plugin_fence_after,
# as the watchdog test's), and the follow waits this margin beyond the time by which the watchdog surely did.
WATCHDOG_AFTER, FENCE_MARGIN = 20, 5
# The failover's job writes a beat every half second: the time and its allocation, into the volume.
WRITER = 'while true; do echo "$(date +%s.%N) $NOMAD_ALLOC_ID" >> /data/beat; sleep 0.5; done'


class Watch:
    """Polls the job's allocations every half second: when it last ran on one node and first ran on the other."""

    def __init__(self, stack, source, target, job=NAME):
        self.stack, self.source, self.target, self.job = stack, source, target, job
        self.last_on_source = self.first_on_target = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)

    def poll(self):
        while not self.done.is_set():
            now = time.monotonic()
            running = {
                a['NodeID']
                for a in self.stack.get('/v1/job/%s/allocations' % self.job)
                if a['ClientStatus'] == 'running'
            }  # fmt: skip
            if self.source['ID'] in running:
                self.last_on_source = now
            if self.target['ID'] in running and self.first_on_target is None:
                self.first_on_target = now
                self.done.set()
            time.sleep(0.5)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join(timeout=10)

    def downtime(self):
        return round(self.first_on_target - self.last_on_source, 1)


class FollowBench(Bench):
    def held_on_b(self):
        """Volume NAME on B with MIB of random data, its job running there, A's replica current but for CHANGED MiB."""
        path = self.volume(NAME, self.b)
        self.stack.api('PUT', '/v1/jobs', host_volume_job(NAME, NAME, 'sleep 3600', sticky=True))
        wait_until(lambda: self.running_on(NAME, self.b), timeout=300, why='job %s on B' % NAME)
        self.sh('head -c %dM /dev/urandom > %s/data && sync' % (MIB, path))
        snapshot_now(self.vm, B_VOLUMES)
        pull(self.vm, A_PULL)
        self.change(path)

    def round(self, way, rulebook):
        self.held_on_b()
        nodes = {n['Name']: 'zfsvm' for n in self.stack.get('/v1/nodes')}
        with Counted(self.vm) as counted, Watch(self.stack, self.b, self.a) as watch:
            started = time.monotonic()
            if way == 'manual':
                extra = dict(AGENTS, volume=NAME, to=self.a['Name'], stop_jobs=True, host_volume_move_hosts=nodes)
                moved = self.stack.playbook(MOVE, extra=extra, token=self.stack.management)
                assert moved.returncode == 0, moved.stdout[-5000:]
            else:
                said = rulebook.output().count('The drain of %s:' % self.b['Name'])
                self.drain(True)
                wait_until(
                    lambda: rulebook.output().count('The drain of %s:' % self.b['Name']) > said,
                    timeout=1800,
                    why='the follow of the drain',
                    pause=1,
                )
            wait_until(watch.done.is_set, timeout=600, why='job %s on A' % NAME, pause=0.5)
            until_running = round(watch.first_on_target - started, 1)
        row = counted.row(way=way, until_running=until_running, downtime=watch.downtime())
        if way == 'follow':
            back = rulebook.output().count('is not down, nor draining')
            self.drain(False)
            # The rulebook follows B once more when it is back in service: let that run end before the next round.
            wait_until(lambda: rulebook.output().count('is not down, nor draining') > back, timeout=300, why='B back')
        self.forget_on_a()
        return row

    def failover(self, rulebook, name):
        """B lost while its job writes (its agent killed, its task left writing, as a crashed client leaves it),
        with A's replica current but for CHANGED MiB and the beats since the pull: from the loss to the job running
        on A; the downtime as the job's own beats tell it (its last on B, fenced by the watchdog, to its first on
        A); the recovery point the follow reports, and the writes after it that only B's copy holds."""
        path = self.volume(name, self.b)
        self.stack.api('PUT', '/v1/jobs', host_volume_job(name, name, WRITER, sticky=True))
        [first] = wait_until(lambda: self.running_on(name, self.b), timeout=300, why='job %s on B' % name)
        self.sh('head -c %dM /dev/urandom > %s/data && sync' % (MIB, path))
        snapshot_now(self.vm, B_VOLUMES)
        pull(self.vm, A_PULL)
        self.change(path)
        lost = 'The loss of %s:' % B_NAME
        said, mark = rulebook.output().count(lost), len(rulebook.output())
        with Counted(self.vm) as counted, Watch(self.stack, self.b, self.a, name) as watch:
            started = time.monotonic()
            crash(self.vm)
            wait_until(lambda: not task_pids(self.vm, first['ID']), timeout=300, why='the task fenced', pause=1)
            fenced = round(time.monotonic() - started, 1)
            wait_until(lambda: rulebook.output().count(lost) > said, timeout=900, why='the follow of the loss', pause=1)
            wait_until(watch.done.is_set, timeout=600, why='job %s on A' % name, pause=0.5)
            until_running = round(watch.first_on_target - started, 1)
        report = rulebook.output().split(lost)[said + 1]
        assert 'failed over to %s' % self.a['Name'] in report, report[:3000]
        recovery = re.search(r'Recovery point of %s: (\S+), taken (\S+), (\d+) s ago' % name, rulebook.output()[mark:])
        assert recovery, rulebook.output()[-3000:]
        # The beats: B's copy (fenced, read-only, kept as it was), and A's, which the replica gave and the job on A
        # goes on writing.
        on_b = self.beats('/%s/default/%s' % (B_VOLUMES, name))
        on_a = wait_until(
            lambda: self.beats('/%s/default/%s' % (HOST_VOLUMES, name)),
            done=lambda beats: any(alloc != first['ID'] for _t, alloc in beats),
            timeout=60,
            why='a beat on A',
        )
        last_on_b = max(t for t, a in on_b if a == first['ID'])
        replicated = max(t for t, a in on_a if a == first['ID'])
        first_on_a = min(t for t, a in on_a if a != first['ID'])
        assert last_on_b < first_on_a, (last_on_b, first_on_a)
        row = counted.row(
            way='failover',
            until_running=until_running,
            downtime=round(first_on_a - last_on_b, 1),
            fenced=fenced,
            recovery_point=recovery.group(2),
            lost_seconds=round(last_on_b - replicated, 1),
            lost_beats=len([1 for t, a in on_b if a == first['ID'] and t > replicated]),
        )
        self.b_back(rulebook, name)
        return row

    def beats(self, mountpoint):
        lines = self.sh('cat %s/beat' % mountpoint).split('\n')
        return [(float(t), alloc) for t, alloc in (line.split() for line in lines if line)]

    def b_back(self, rulebook, name):
        """B's agent again, and the failover's leftovers gone: the job, the volume on A and any that B's client still
        reports, B's fenced copy and what is left of A's replica of it. The rulebook follows B once more when it is
        back in service: that run ends first."""
        back = rulebook.output().count('is not down, nor draining')
        start_b(self.vm)
        wait_until(lambda: node_ready(self.stack), timeout=180, why='node B back')
        wait_until(lambda: rulebook.output().count('is not down, nor draining') > back, timeout=300, why='B followed')
        # And any run that the loss's later events queued: the rulebook quiet for 10 s.
        quiet = {'output': None, 'since': time.monotonic()}

        def settled():
            output = rulebook.output()
            if output != quiet['output']:
                quiet.update(output=output, since=time.monotonic())
            return time.monotonic() - quiet['since'] >= 10

        wait_until(settled, timeout=300, why='the rulebook quiet', pause=1)
        self.gone(name)
        for volume in self.stack.get('/v1/volumes?type=host&prefix=%s' % name):
            if volume['Name'] == name:
                self.delete(name, {'ID': volume['NodeID']})
        wait_until(
            lambda: (
                self.vm.zfs('destroy', '-r', '%s/default/%s' % (B_VOLUMES, name), check=False).returncode == 0
                or self.vm.zfs('list', '%s/default/%s' % (B_VOLUMES, name), check=False).returncode != 0
            ),
            timeout=120,
            why="B's fenced copy destroyed",
        )
        self.vm.zfs('destroy', '-r', '%s/127.0.0.1/%s/default/%s' % (A_REPLICAS, B_VOLUMES, name), check=False)

    def drain(self, enable):
        spec = {'Deadline': 3600 * 10**9, 'IgnoreSystemJobs': False} if enable else None
        self.stack.api('PUT', '/v1/node/%s/drain' % self.b['ID'], {'DrainSpec': spec, 'MarkEligible': not enable})

    def forget_on_a(self):
        """The moved volume gone from A; the turnaround made B's former dataset its replica of A's volume, gone
        too: room for the next round."""
        self.gone(NAME)
        self.delete(NAME, self.a)
        self.sh('zfs destroy -r %s/127.0.0.1/%s/default/%s' % (B_REPLICAS, HOST_VOLUMES, NAME))


def median(rows, key):
    return statistics.median(row[key] for row in rows)


def main():
    stack = bench_stack()
    vm = stack.vm
    order = (['manual', 'follow', 'follow', 'manual'] * ROUNDS)[: 2 * ROUNDS]
    rows, failovers = [], []
    with replicating_nodes(stack, pool_size='%dM' % (2 * MIB + 512)) as nodes:
        bench = FollowBench(stack, nodes)
        vm.sh('rm -rf %s && mkdir -p %s' % (WORK, WORK))  # process accounting's file
        hosts = dict(
            AGENTS,
            host_volume_move_hosts={n['Name']: 'zfsvm' for n in stack.get('/v1/nodes')},
            host_volume_move_fence_margin=FENCE_MARGIN,
        )
        with tempfile.TemporaryDirectory() as workdir, follow_rulebook(
            stack, Path(workdir), stack.management, hosts
        ) as rulebook:
            # No need to wait for it to listen: a drain it has not seen yet comes in its node snapshot.
            for way in order:
                rows.append(bench.round(way, rulebook))
                print(rows[-1], flush=True)
            # B's fence watchdog, as host_volume_plugin_fence_after turns it on; B's replica parent stays.
            watchdog = plugin_role(
                stack,
                host_volume_plugin_replica_parent=B_REPLICAS,
                host_volume_plugin_fence_after=WATCHDOG_AFTER,
                host_volume_plugin_fence_nomad_token=stack.secret('host-volume-operator'),
            )
            assert watchdog.returncode == 0, watchdog.stdout[-3000:]
            wait_until(
                lambda: 'nomad_zfs_csi.fence_after' in stack.get('/v1/node/' + bench.b['ID'])['Meta'],
                timeout=60,
                why="B's metadata advertising the watchdog",
            )
            # A name of its own each: the client of a node that returns still holds the name of the volume that failed
            # over (docs/move-and-failover.md), and refuses a new volume of that name.
            for round_ in range(FAILOVERS):
                failovers.append(bench.failover(rulebook, '%s-%d' % (NAME, round_ + 1)))
                print(failovers[-1], flush=True)
    version = vm.sh('/usr/sbin/zfs version | head -1').stdout.strip()
    if rows:
        drains(rows, version)
    if failovers:
        lost_nodes(failovers)


def drains(rows, version):
    print('\n# A drain of B followed by itself, against the manual move (%d MiB, %d MiB changed, %s)\n'
          % (MIB, CHANGED, version))  # fmt: skip
    print('| way | runs | until running (s), median | downtime (s), median | zfs | ssh | HTTP | each run (s) |')
    print('|---|---|---|---|---|---|---|---|')
    for way in ('manual', 'follow'):
        mine = [r for r in rows if r['way'] == way]
        counts = [int(median(mine, k)) for k in ('zfs', 'ssh', 'http')]
        runs = ', '.join('%.1f' % r['until_running'] for r in mine)
        cells = (way, len(mine), median(mine, 'until_running'), median(mine, 'downtime'), *counts, runs)
        print('| %s | %d | %.1f | %.1f | %d | %d | %d | %s |' % cells)


def lost_nodes(failovers):
    print('\n# B lost while its job writes, failed over by itself (fence_after %d s, fence_margin %d s)\n'
          % (WATCHDOG_AFTER, FENCE_MARGIN))  # fmt: skip
    print('| runs | loss to running (s) | loss to fenced (s) | downtime (s) | writes lost (s) | zfs | ssh | HTTP | '
          'each run: loss to running (writes lost) (s) |')  # fmt: skip
    print('|---|---|---|---|---|---|---|---|---|')
    keys = ('until_running', 'fenced', 'downtime', 'lost_seconds')
    each = ', '.join('%.1f (%.1f)' % (r['until_running'], r['lost_seconds']) for r in failovers)
    cells = (
        len(failovers),
        *[median(failovers, k) for k in keys],
        *[int(median(failovers, k)) for k in ('zfs', 'ssh', 'http')],
        each,
    )
    print('| %d | %.1f | %.1f | %.1f | %.1f | %d | %d | %d | %s |' % cells)


if __name__ == '__main__':
    main()
