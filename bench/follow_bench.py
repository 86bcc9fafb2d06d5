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

The local stack with node B (tests/integration/stack/replicating_nodes.py). Both ways run on the management token, in
namespace default (the mover's token reaches the tenants' namespaces only; the tests prove it). Not measured here: a
lost node's failover (the watchdog test, two_nodes/test_move_and_failover.py, times it once).
"""

import os
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
from replicating_nodes import A_PULL, B_REPLICAS, replicating_nodes  # noqa: E402
from zfsvm_client import pull, wait_until  # noqa: E402

NAME = 'bench-fl'
# B's agent serves plain HTTP at the address it advertises, while the stack's agent serves HTTPS.
AGENTS = {'host_volume_move_agent_addrs': {B_NAME: 'http://127.0.0.1:5656'}}
ROUNDS = int(os.environ.get('BENCH_ROUNDS', '3'))


class Watch:
    """Polls the job's allocations every half second: when it last ran on one node and first ran on the other."""

    def __init__(self, stack, source, target):
        self.stack, self.source, self.target = stack, source, target
        self.last_on_source = self.first_on_target = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)

    def poll(self):
        while not self.done.is_set():
            now = time.monotonic()
            running = {
                a['NodeID']
                for a in self.stack.get('/v1/job/%s/allocations' % NAME)
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
        self.sh('zfs snapshot -r %s@autosnap_$(date -u +%%Y-%%m-%%d_%%H:%%M:%%S)_hourly' % B_VOLUMES)
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
    rows = []
    with replicating_nodes(stack, pool_size='%dM' % (2 * MIB + 512)) as nodes:
        bench = FollowBench(stack, nodes)
        vm.sh('rm -rf %s && mkdir -p %s' % (WORK, WORK))  # process accounting's file
        hosts = dict(AGENTS, host_volume_move_hosts={n['Name']: 'zfsvm' for n in stack.get('/v1/nodes')})
        with tempfile.TemporaryDirectory() as workdir, follow_rulebook(
            stack, Path(workdir), stack.management, hosts
        ) as rulebook:
            # No need to wait for it to listen: a drain it has not seen yet comes in its node snapshot.
            for way in order:
                rows.append(bench.round(way, rulebook))
                print(rows[-1], flush=True)
    version = vm.sh('/usr/sbin/zfs version | head -1').stdout.strip()
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


if __name__ == '__main__':
    main()
