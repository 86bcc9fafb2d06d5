"""The zfs_metrics collector's cost per run for BENCH_VOLUMES (200) volumes, against the node exporter's own ZFS
collector and against a collector that asks zfs volume by volume.

The local stack (site.yml applied, so the collector, its unit and Debian's node exporter 1.5.0 are in the VM), with
half the volumes as democratic-csi's (<csi parent>/<volume>, a refquota) and half as the zfs-dataset plugin's
(<host volume parent>/bench/<volume>), each with one snapshot; all destroyed afterwards. In turn, BENCH_N (5) times:

- the collector as its unit runs it (`python3 -IS zfs-metrics`, as user prometheus);
- per volume, `zfs get` of the same four figures and a `zfs list` of its snapshots, as a textfile script that asks
  volume by volume would (the same numbers, one volume at a time);
- a scrape of the node exporter's zfs collector alone (`/metrics?collect[]=zfs`): what the exporter itself reports
  of ZFS (ARC and pool I/O kstats, each pool's state), which has no quota, usage or snapshot of a dataset; and of its
  textfile collector alone, which serves the collector's file.

zfs and zpool processes are counted by a logging shim in place of /usr/sbin/zfs and /usr/sbin/zpool for the run,
put back afterwards. Wall seconds and CPU seconds (bash's time of the whole command in the guest). Emulated VM (qemu
TCG): the figures compare the ways, not what real hardware does.
"""

import os
import shlex
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / 'tests' / 'integration'))
from zfsvm_client import bench_vm  # noqa: E402

ROUNDS = int(os.environ.get('BENCH_N', '5'))
VOLUMES = int(os.environ.get('BENCH_VOLUMES', '200'))
CSI, HOST = 'tank/nomad/csi', 'tank/nomad/volumes'  # inventories/local's parents
BENCH = HOST + '/bench'
COLLECTOR = (
    'runuser -u prometheus -- python3 -IS /usr/local/libexec/nomad-zfs-csi/zfs-metrics '
    '/var/lib/nomad-zfs-csi/metrics/nomad_zfs.prom '
    'csi=%s host=%s' % (CSI, HOST)
)
PER_VOLUME = (
    'for v in $(zfs list -H -o name -d 1 %s | grep /bench-m-; zfs list -H -o name -d 1 %s | grep /bench-m-); do '
    'zfs get -Hp -o value used,referenced,available,refquota $v; zfs list -Hp -t snapshot -o creation -d 1 $v; '
    'done > /dev/null' % (CSI, BENCH)
)
SCRAPE = 'python3 -c \'import urllib.request as u; u.urlopen("http://127.0.0.1:9100/metrics?collect[]=%s").read()\''
WAYS = {
    'zfs_metrics collector (2 listings)': COLLECTOR,
    'per volume: zfs get and zfs list': PER_VOLUME,
    "node exporter's zfs collector, one scrape": SCRAPE % 'zfs',
    "node exporter's textfile collector, one scrape": SCRAPE % 'textfile',
}
TIMED = "TIMEFORMAT='%%R %%U %%S'; time ( %s )"
SHIM = '#!/bin/sh\necho "$0 $*" >> /tmp/zfs-bench.log\nexec "$0.bench-real" "$@"\n'
TOOLS = ('/usr/sbin/zfs', '/usr/sbin/zpool')


def make_volumes(vm):
    half = VOLUMES // 2
    vm.sh(
        'zfs create -p %s && for i in $(seq %d); do '
        'zfs create -o refquota=64M %s/bench-m-$i && zfs snapshot %s/bench-m-$i@one; '
        'zfs create -o refquota=64M %s/bench-m-$i && zfs snapshot %s/bench-m-$i@one; done'
        % (BENCH, half, CSI, CSI, BENCH, BENCH),
        timeout=3600,
    )


def remove_volumes(vm):
    vm.sh(
        'zfs destroy -r %s; for v in $(zfs list -H -o name -d 1 %s | grep /bench-m-); do zfs destroy -r $v; done'
        % (BENCH, CSI),
        check=False,
        timeout=3600,
    )


def shims(vm, on):
    for tool in TOOLS:
        if on:
            vm.sh('mv %s %s.bench-real && cat > %s <<"EOF"\n%sEOF\nchmod 0755 %s' % (tool, tool, tool, SHIM, tool))
        else:
            vm.sh('test -e %s.bench-real && mv %s.bench-real %s || true' % (tool, tool, tool), check=False)


def call(vm, command):
    """(wall s, CPU s, zfs and zpool processes) of one run."""
    vm.sh('rm -f /tmp/zfs-bench.log; touch /tmp/zfs-bench.log; chmod 0666 /tmp/zfs-bench.log')
    ran = vm.sh('bash -c ' + shlex.quote(TIMED % command), timeout=1800)
    wall, user, system = (float(field) for field in ran.stderr.split()[-3:])
    processes = int(vm.sh('wc -l < /tmp/zfs-bench.log').stdout)
    return wall, round(user + system, 3), processes


def main():
    vm = bench_vm()
    runs = {}
    try:
        make_volumes(vm)
        listed = vm.sh('zfs list -H -o name -r %s %s | grep -c /bench-m-' % (CSI, HOST)).stdout.strip()
        assert int(listed) == VOLUMES, listed
        shims(vm, True)
        for _round in range(ROUNDS):  # in turn, so that a slow minute of the host weighs on each
            for way, command in WAYS.items():
                runs.setdefault(way, []).append(call(vm, command))
        written = vm.sh(
            'grep -c "^nomad_zfs_volume_used_bytes{.*bench-m-" /var/lib/nomad-zfs-csi/metrics/nomad_zfs.prom'
        )
        assert int(written.stdout) == VOLUMES, written.stdout
    finally:
        shims(vm, False)
        remove_volumes(vm)
    report(runs, vm.sh("dpkg-query -W -f '${Version}' prometheus-node-exporter").stdout)


def report(runs, exporter):
    print('# Metrics of %d volumes (node exporter %s): median (min to max) of %d runs\n' % (VOLUMES, exporter, ROUNDS))
    print('| way | wall s | CPU s | zfs and zpool processes |')
    print('|---|---|---|---|')
    for way, calls in runs.items():
        cells = []
        for column in range(3):
            values = [row[column] for row in calls]
            cells.append('%s (%s to %s)' % (round(statistics.median(values), 3), min(values), max(values)))
        print('| %s | %s |' % (way, ' | '.join(cells)))


if __name__ == '__main__':
    main()
