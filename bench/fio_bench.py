"""iSCSI against NFS, with Debian's fio in the workload: a volume of the zfs-generic-iscsi plugin (a zvol, exported by
the storage host's LIO target, ext4 on the node's LUN) and one of the stack's zfs-generic-nfs plugin (a dataset,
NFSv4), each written by bench/fio-workload.nomad: a sequential write of 1 MiB blocks, then a random write of 4 KiB
blocks, each O_DIRECT from one thread (psync, queue depth 1), flushed at the end (end_fsync) and in a fio process
of its own. Beside them the same fio as root on the storage host itself, without the protocol: in the NFS volume's
own dataset, and in ext4 on a zvol made like the iSCSI volume's (same volsize, volblocksize and compression; the
volume's own is held open by the target).
The ways take turns for BENCH_N rounds (3); same run, same VM.

The iSCSI plugin and its storage instance are test_iscsi_target.py's (tests/integration/stack/iscsi_stack.py). fio is
installed into the VM from Debian if missing (the VM reaches the Debian mirror, as its image build does).

Emulated VM (qemu TCG, two vCPUs, one virtual disk for the pool): initiator, target, NFS server and client share
the guest's CPUs, and the loopback network costs CPU, not wire time. The figures compare the ways in one run, not
what real hardware does. OpenZFS 2.3 honours O_DIRECT only for writes aligned to the record size, so the 4 KiB
writes to a dataset still go through the ARC.
"""

import json
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO / 'tests' / 'integration' / 'stack'), str(REPO / 'tests' / 'integration')]
import iscsi_stack  # noqa: E402
from conftest import PARENT, Stack  # noqa: E402
from zfsvm_client import STOP_BACKUPS, bench_vm  # noqa: E402

ROUNDS = int(os.environ.get('BENCH_N', '3'))
WORKLOAD = HERE / 'fio-workload.nomad'
SIZE = '1G'
# One fio process for each job: in one process, fio lays out every job's file before the first job starts, so the
# sequential write would overwrite a file written moments before (measured on a dataset: 977 MiB/s so, 69 alone).
# fio counts end_fsync's flush in the job's time (fio's own fix of 2019, axboe/fio#837).
COMMON = ['--output-format=json', '--ioengine=psync', '--direct=1', '--end_fsync=1', '--unlink=1', '--runtime=60']
JOBS = {
    'seq-1m': ['--name=seq-1m', '--rw=write', '--bs=1M', '--size=128M'],
    'rand-4k': ['--name=rand-4k', '--rw=randwrite', '--bs=4k', '--size=16M'],
}
FLOOR_ZVOL = 'tank/bench-fio-zvol'
FLOOR_MOUNT = '/mnt/bench-fio-zvol'


def in_workload(stack, volume, job_args):
    """fio's report of one job in one allocation of the workload on the volume."""
    variables = {'volume': volume, 'fio_args': COMMON + job_args + ['--directory=/data']}
    return json.loads(stack.batch(WORKLOAD, variables))


def on_host(vm, directory, job_args):
    """fio's report of the same job, as root on the storage host."""
    argv = ['fio'] + COMMON + job_args + ['--directory=' + directory]
    return json.loads(vm.sh(' '.join(argv), timeout=600).stdout)


def figures(report):
    """(MiB/s, IOPS, median and 99th percentile completion latency in ms) of the report's one job."""
    (job,) = report['jobs']
    write = job['write']
    pct = write['clat_ns']['percentile']
    return (
        round(write['bw_bytes'] / 2**20, 1),
        round(write['iops']),
        round(pct['50.000000'] / 1e6, 2),
        round(pct['99.000000'] / 1e6, 2),
    )


def floor_zvol(vm, like):
    """A zvol of the iSCSI volume's volsize, volblocksize and compression, with ext4, mounted for root's fio."""
    props = vm.zfs('get', '-Hp', '-o', 'value', 'volsize,volblocksize,compression', like).stdout.split()
    vm.zfs('create', '-V', props[0], '-o', 'volblocksize=' + props[1], '-o', 'compression=' + props[2], FLOOR_ZVOL)
    vm.sh(
        'udevadm settle && mkfs.ext4 -q /dev/zvol/%s && mkdir -p %s && mount /dev/zvol/%s %s'
        % (FLOOR_ZVOL, FLOOR_MOUNT, FLOOR_ZVOL, FLOOR_MOUNT)
    )


def main():
    vm = bench_vm()
    vm.sh(STOP_BACKUPS)
    vm.sh(
        'command -v fio >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive '
        'apt-get install -y -qq --no-install-recommends fio >/dev/null; }',
        timeout=900,
    )
    version = vm.sh('fio --version').stdout.strip()
    stack = Stack(vm)
    nfs, iscsi = 'bench-fio-nfs', 'bench-fio-iscsi'
    runs = {}
    with iscsi_stack.driver(stack, vm):
        sized = {'capacity_min': SIZE, 'capacity_max': SIZE}
        try:
            for volume, plugin in ((nfs, 'zfs'), (iscsi, iscsi_stack.PLUGIN)):
                made = stack.volume(volume, plugin_id=plugin, **sized)
                assert made['rc'] == 0, made
            floor_zvol(vm, '%s/%s' % (iscsi_stack.PARENT, iscsi))
            ways = [
                ('NFS (dataset), in the workload', lambda args: in_workload(stack, nfs, args)),
                ('iSCSI (zvol, ext4), in the workload', lambda args: in_workload(stack, iscsi, args)),
                ('dataset on the storage host', lambda args: on_host(vm, '/%s/%s' % (PARENT, nfs), args)),
                ('zvol with ext4 on the storage host', lambda args: on_host(vm, FLOOR_MOUNT, args)),
            ]
            for _round in range(ROUNDS):  # in turn, so that a slow minute of the host weighs on each
                for label, run in ways:
                    for job, args in JOBS.items():
                        runs.setdefault(label, {}).setdefault(job, []).append(figures(run(args)))
        finally:
            vm.sh('umount %s' % FLOOR_MOUNT, check=False)
            vm.zfs('destroy', FLOOR_ZVOL, check=False)
            stack.volume(nfs, plugin_id='zfs', state='deleted')
            stack.volume(iscsi, plugin_id=iscsi_stack.PLUGIN, state='deleted')
    report(runs, version)


def report(runs, version):
    print('# %s, O_DIRECT, one thread at queue depth 1: median (min to max) of %d rounds\n' % (version, ROUNDS))
    for job, title in (
        ('seq-1m', 'sequential write, 1 MiB blocks, 128 MiB'),
        ('rand-4k', 'random write, 4 KiB blocks, 16 MiB'),
    ):
        print('## %s\n' % title)
        print('| way | MiB/s | IOPS | latency p50 (ms) | latency p99 (ms) |')
        print('|---|---|---|---|---|')
        for label, jobs in runs.items():
            cells = []
            for column in range(4):
                values = [row[column] for row in jobs[job]]
                cells.append('%s (%s to %s)' % (statistics.median(values), min(values), max(values)))
            print('| %s | %s |' % (label, ' | '.join(cells)))
        print()
    print('```json\n%s\n```' % json.dumps(runs, indent=1))


if __name__ == '__main__':
    main()
