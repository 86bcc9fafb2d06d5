"""What a job waits while its host volume moves to another node: ours (playbooks/move_host_volume.yml) against the
way an operator moves it without us (stop the job, rsync the mountpoint to the other node, start it there). Same
data, same run: a 1 GiB volume (BENCH_MIB) of random data, with 10 MiB rewritten in its middle since the last
replication (ours) or the last pre-seeding copy (rsync, warm).

The local stack with a second client agent in the VM (tests/integration/stack/replicating_nodes.py): node A is the
stack's (pool tank), node B is nzc-b (pool nodeb, a sparse file), each the other's standby. Each way holds its
volume with a service job that only sleeps, on A, and ends with that job running on B.

- **Ours**: the volume's replica on B is current as of a snapshot taken before the 10 MiB were written (one full
  pull, timed apart). The playbook stops the job, takes the final snapshot, pulls it, moves the volume in Nomad
  (the plugin on B adopts the replica) and starts the job; its own report gives the phases. The turnaround comes
  after the job runs again.
- **rsync, cold**: stop the job and wait until its allocation stopped; create the volume on B; `rsync -a --delete
  --inplace` of A's mountpoint into B's over SSH as root (in place: a temporary copy of the file would not fit
  the volume's quota beside the old one); delete A's volume (the plugin destroys its dataset); start the job,
  which can now only land on B.
- **rsync, warm**: the same, with B's volume made and filled by an rsync while the job still ran (timed apart), so
  that the rsync after the stop copies only the change. rsync still reads the whole file on both ends to find it.

Counted in the VM for the whole of each move by the kernel's process accounting (acct(2)): zfs, ssh and rsync
processes. HTTP calls are the requests the stack's agent (which serves the API) logged as complete.
"""

import json
import os
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
# The stack's conftest first: replicating_nodes.py reads its constants as `conftest`.
sys.path[:0] = [str(REPO / 'tests' / 'integration' / 'stack'), str(REPO / 'tests' / 'integration')]
from conftest import HOST_VOLUMES, Stack  # noqa: E402
from host_volume_job import host_volume_job  # noqa: E402
from node_b import HOST_VOLUMES as B_VOLUMES  # noqa: E402
from replicating_nodes import A_REPLICAS, B_PULL, replicating_nodes, snapshot_now  # noqa: E402
from vm_tools import install_rsync, remove_root_key, root_ssh  # noqa: E402
from zfsvm_client import STOP_BACKUPS, bench_vm, pull, wait_until  # noqa: E402

MIB = int(os.environ.get('BENCH_MIB', '1024'))
CHANGED = 10  # MiB rewritten since the last replication
WORK = '/var/tmp/nzc-move-bench'
ACCT = WORK + '/acct'
MOVE = REPO / 'playbooks' / 'move_host_volume.yml'
CAPACITY = '%dMiB' % (MIB + 256)

# In the VM: process accounting on or off; off prints what it counted by command name.
ACCT_ON = 'python3 -c \'import ctypes, sys; sys.exit(ctypes.CDLL("libc.so.6").acct(sys.argv[1].encode()))\' ' + ACCT
ACCT_OFF = (
    r"""python3 - <<'EOF'
import collections, ctypes, json, struct
ctypes.CDLL('libc.so.6').acct(None)
data = open('%s', 'rb').read()
counts = collections.Counter(data[o + 48:o + 64].split(b'\0')[0].decode() for o in range(0, len(data) - 63, 64))
print(json.dumps(counts))
EOF"""
    % ACCT
)


class Counted:
    """zfs, ssh and rsync processes in the VM, and HTTP calls to the stack's agent, while the block runs."""

    def __init__(self, vm):
        self.vm = vm

    def __enter__(self):
        self.since = int(self.vm.sh('date +%s').stdout)
        self.vm.sh('rm -f %s && touch %s && %s' % (ACCT, ACCT, ACCT_ON))
        self.started = time.monotonic()
        return self

    def __exit__(self, *exc):
        self.seconds = time.monotonic() - self.started
        self.processes = json.loads(self.vm.sh(ACCT_OFF).stdout)
        log = self.vm.sh('journalctl -u nzc-nomad --since @%d --no-pager -o cat' % self.since).stdout
        self.http = sum(1 for line in log.splitlines() if 'http: request complete' in line)

    def row(self, **extra):
        procs = self.processes
        return dict(
            extra,
            seconds=round(self.seconds, 1),
            zfs=procs.get('zfs', 0),
            ssh=procs.get('ssh', 0),
            rsync=procs.get('rsync', 0),
            http=self.http,
        )


class Bench:
    def __init__(self, stack, nodes):
        self.stack, self.vm = stack, stack.vm
        self.a, self.b = nodes

    def sh(self, command, timeout=1800):
        return self.vm.sh(command, timeout=timeout).stdout

    def volume(self, name, node):
        made = self.stack.module(
            'nomad_host_volume',
            {'name': name, 'node_id': node['ID'], 'plugin_id': 'zfs-dataset', 'capacity_max': CAPACITY},
        )
        assert made['rc'] == 0, made
        return made['volume']['host_path']

    def delete(self, name, node):
        """The volume deleted, its dataset with it; again while the client still holds a stopped job's mount."""
        args = {'name': name, 'node_id': node['ID'], 'state': 'deleted'}
        wait_until(
            lambda: self.stack.module('nomad_host_volume', args)['rc'] == 0, timeout=120, why='%s deleted' % name
        )

    def running_on(self, name, node):
        allocs = self.stack.get('/v1/job/%s/allocations' % name)
        return [a for a in allocs if a['ClientStatus'] == 'running' and a['NodeID'] == node['ID']]

    def held(self, name, sticky):
        """Volume `name` on A with MIB of random data, held by a running job; its path."""
        path = self.volume(name, self.a)
        self.stack.api('PUT', '/v1/jobs', host_volume_job(name, name, 'sleep 3600', sticky=sticky))
        wait_until(lambda: self.running_on(name, self.a), timeout=300, why='job %s on A' % name)
        self.sh('head -c %dM /dev/urandom > %s/data && sync' % (MIB, path))
        return path

    def stop(self, name):
        """Job `name` stopped, once none of its allocations runs: what `nomad job stop` waits for."""
        self.stack.api('DELETE', '/v1/job/' + name)
        wait_until(lambda: all(a['ClientStatus'] not in ('pending', 'running')
                               for a in self.stack.get('/v1/job/%s/allocations' % name)),
                   timeout=120, why='job %s stopped' % name)  # fmt: skip

    def gone(self, name):
        self.stop(name)
        self.stack.api('DELETE', '/v1/job/%s?purge=true' % name)

    def change(self, path):
        self.sh(
            'head -c %dM /dev/urandom | dd of=%s/data bs=1M seek=%d conv=notrunc iflag=fullblock status=none && sync'
            % (CHANGED, path, MIB // 2)
        )

    def ours(self, resumed=False):
        """The move, or with resumed, the move killed as it records the final send (the operator's machine dies
        there), then run again: both runs are counted, from the first run's start to the job running on B."""
        name = 'bench-mv'
        path = self.held(name, sticky=True)
        snapshot_now(self.vm, HOST_VOLUMES)
        started = time.monotonic()
        pull(self.vm, B_PULL)
        seeded = time.monotonic() - started
        self.change(path)
        nodes = {n['Name']: 'zfsvm' for n in self.stack.get('/v1/nodes')}
        extra = {'volume': name, 'to': self.b['Name'], 'stop_jobs': True, 'host_volume_move_hosts': nodes}
        with Counted(self.vm) as counted:
            if resumed:
                self.stack.playbook_killed_at(MOVE, 'Record that the step is done: send', extra=extra)
            moved = self.stack.playbook(MOVE, extra=extra)
        assert moved.returncode == 0, moved.stdout[-5000:]
        if resumed:
            resumed_at = r'going on after (stop) \(this run: ([a-z, ]+)\)\. The jobs stopped ([0-9.]+) s ago'
            report = re.search(resumed_at, moved.stdout)
            assert report and self.running_on(name, self.b), moved.stdout[-3000:]
            way = 'ours, killed after the final send and run again'
            row = counted.row(way=way, waited=float(report.group(3)), phases={}, seeded=round(seeded, 1))
            row['after'] = 'this run: ' + report.group(2)
            self.forget(name)
            return row
        report = re.search(
            r'The jobs waited ([0-9.]+) s: stop ([0-9.]+) s, final send ([0-9.]+) s, adopt ([0-9.]+) s, jobs running '
            r'again ([0-9.]+) s; then the turnaround ([0-9.]+) s',
            moved.stdout,
        )
        assert report and self.running_on(name, self.b), moved.stdout[-3000:]
        waited, stop, send, adopt, start, turnaround = map(float, report.groups())
        phases = {'stop': stop, 'copy': send, 'switch': adopt, 'start': start}
        row = counted.row(way='ours: move_host_volume.yml', waited=waited, phases=phases, seeded=round(seeded, 1))
        row['after'] = 'turnaround %.1f s' % turnaround
        self.forget(name)
        return row

    def forget(self, name):
        """The moved volume gone from B; the turnaround made A's former dataset its replica of B's volume, gone too:
        room for the next way."""
        self.gone(name)
        self.delete(name, self.b)
        self.sh('zfs destroy -r %s/127.0.0.1/%s/default/%s' % (A_REPLICAS, B_VOLUMES, name))

    def rsync(self, warm):
        name = 'bench-rs'
        path = self.held(name, sticky=False)
        seeded = None
        if warm:
            started = time.monotonic()
            b_path = self.volume(name, self.b)
            self.copy(path, b_path)
            seeded = round(time.monotonic() - started, 1)
        self.change(path)
        phases = {}
        with Counted(self.vm) as counted:
            mark = time.monotonic()

            def phase(label):
                nonlocal mark
                now = time.monotonic()
                phases[label] = round(now - mark, 1)
                mark = now

            self.stop(name)
            phase('stop')
            if not warm:
                b_path = self.volume(name, self.b)
            self.copy(path, b_path)
            phase('copy')
            self.delete(name, self.a)
            phase('switch')
            job = self.stack.get('/v1/job/' + name)
            job['Stop'] = False
            self.stack.api('PUT', '/v1/jobs', {'Job': job})
            wait_until(lambda: self.running_on(name, self.b), timeout=300, why='job %s on B' % name)
            phase('start')
        row = counted.row(way='rsync, %s' % ('warm' if warm else 'cold'), phases=phases, seeded=seeded)
        row['waited'] = round(sum(phases.values()), 1)
        self.gone(name)
        self.delete(name, self.b)
        return row

    def copy(self, source, target):
        self.sh(
            'env PATH=%s:/usr/bin:/bin LD_LIBRARY_PATH=%s/lib rsync -a --delete --inplace --rsync-path="%s" -e "%s" '
            '%s/ '
            'root@127.0.0.1:%s/' % (WORK, WORK, self.rsync_path, self.ssh, source, target)
        )


def clear_leftovers(stack):
    """An earlier run's jobs and volumes, if it stopped midway. Its node B is purged, and Nomad keeps such a volume
    until forced."""
    bench = Bench(stack, (None, None))
    for job in stack.get('/v1/jobs?prefix=bench-'):
        bench.gone(job['ID'])
    for volume in stack.get('/v1/volumes?type=host&prefix=bench-'):
        path = '/v1/volume/host/%s?force=true' % volume['ID']
        wait_until(lambda p=path: attempt(stack.api, 'DELETE', p), timeout=120, why='%s deleted' % volume['Name'])
    stack.vm.sh('for d in $(zfs list -H -o name -r %s | grep /bench-); do zfs destroy -r $d; done' % HOST_VOLUMES)


def attempt(call, *args):
    try:
        call(*args)
    except AssertionError:  # the stack's answer to an HTTP error
        return False
    return True


def bench_stack():
    """The stack of the bench's VM, the backups' timers stopped and an earlier run's leftovers gone."""
    vm = bench_vm()
    vm.ending = lambda: False  # the stack's helpers ask whether pytest is about to throw the VM away
    vm.sh(STOP_BACKUPS)
    stack = Stack(vm)
    clear_leftovers(stack)
    return stack


def main():
    stack = bench_stack()
    vm = stack.vm
    rows = []
    # nodeb holds the replica, then the adopted volume, and one rsync copy at a time.
    with replicating_nodes(stack, pool_size='%dM' % (2 * MIB + 512)) as nodes:
        bench = Bench(stack, nodes)
        vm.sh('rm -rf %s && mkdir -p %s' % (WORK, WORK))
        try:
            bench.rsync_path = install_rsync(vm, WORK)
            bench.ssh = root_ssh(vm, WORK)
            rows.append(bench.ours())
            rows.append(bench.ours(resumed=True))
            rows.append(bench.rsync(warm=False))
            rows.append(bench.rsync(warm=True))
        finally:
            remove_root_key(vm)
            vm.sh('rm -rf %s' % WORK, check=False)
    version = vm.sh('/usr/sbin/zfs version | head -1').stdout.strip()
    print('# Moving a %d MiB host volume with %d MiB changed, A to B (%s)\n' % (MIB, CHANGED, version))
    print('| way | job waited (s) | stop | copy | switch | start | done before the stop | zfs | ssh | rsync | HTTP |')
    print('|---|---|---|---|---|---|---|---|---|---|---|')
    for row in rows:
        phases = [
            ('%.1f' % row['phases'][k]) if k in row['phases'] else '-' for k in ('stop', 'copy', 'switch', 'start')
        ]
        seeded = '%.1f s' % row['seeded'] if row['seeded'] is not None else '-'
        counts = [row[k] for k in ('zfs', 'ssh', 'rsync', 'http')]
        cells = tuple([row['way'], row['waited']] + phases + [seeded] + counts)
        print('| %s | %.1f | %s | %s | %s | %s | %s | %d | %d | %d | %d |' % cells)
    print('\n```json\n%s\n```' % json.dumps(rows, indent=1))


if __name__ == '__main__':
    main()
