"""The zfs_metrics role that site.yml ran: Debian's node exporter serves, from its textfile collector, each volume's
and pool's figures as real OpenZFS has them, written by the collector on its timer as the exporter's user."""

import json
import re
import shlex
import subprocess

import pytest
from stack_layout import HOST_VOLUMES, PARENT, dataset

from test_host_volume_plugin import props
from zfsvm_client import CACHE, REPO

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

MIB = 1024**2
RULES = REPO / 'roles' / 'zfs_metrics' / 'files' / 'nomad-zfs-csi.rules.yml'
TEXTFILE = '/var/lib/prometheus/node-exporter/nomad_zfs.prom'
OUTPUT = '/var/lib/nomad-zfs-csi/metrics'  # the collector's own directory, which TEXTFILE links into
WRAPPER = '/usr/local/libexec/nomad-zfs-csi/zfs'  # what democratic-csi runs as the csi user
SAMPLE = re.compile(r'^(\w+)(?:\{(.*)\})? (\S+)$')


def collected(vm):
    """The collector's unit run now (a oneshot: back when the file is written), then the exporter scraped."""
    vm.sh('systemctl start zfs-metrics.service')
    return scrape(vm)


def scrape(vm):
    """{(name, {labels}) as a sorted tuple: value} from the exporter's /metrics, for nomad_zfs_* and the textfile
    collector's own."""
    text = vm.sh(
        'python3 -c \'import urllib.request as u; print(u.urlopen("http://127.0.0.1:9100/metrics").read().decode())\''
    ).stdout
    found = {}
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match and match.group(1).startswith(('nomad_zfs_', 'node_textfile_')):
            labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or '')))
            found[(match.group(1), labels)] = float(match.group(3))
    return found


def snapshots(vm, name):
    out = vm.zfs('list', '-Hp', '-t', 'snapshot', '-o', 'creation', '-s', 'creation', '-d', '1', name).stdout
    return [float(line) for line in out.split()]


def test_the_exporter_serves_each_volume_and_pool_as_zfs_has_them(stack, host_volume):
    vm = stack.vm
    made = host_volume('t-metrics', capacity_max='4M')
    assert made['volume']['state'] == 'ready', made
    volume = dataset('t-metrics')
    # 3.75 MiB of its 4 (random: no compression), more than the 90% that NomadZfsVolumeNearlyFull fires at. Small: the
    # emulated VM writes about 0.6 MiB/s into a dataset, checksums and compression included.
    vm.sh('head -c %d /dev/urandom > /%s/data && sync' % (15 * MIB // 4, volume))
    vm.zfs('snapshot', volume + '@t-metrics')
    csi = PARENT + '/demo'  # the stack's CSI volume, which democratic-csi made
    # The csi user (democratic-csi) sets the property democratic-csi keeps on its datasets, with a line of its own
    # after a newline: a forged snapshot of the host volume, taken in 2286. The collector lists no user property.
    forged = '%s@forged\tsnapshot\t0\t0\t-\t-\t-\t-\t9999999999' % volume
    name = vm.zfs('get', '-H', '-o', 'value', 'democratic-csi:csi_volume_name', csi).stdout.strip()
    try:
        assert (
            vm.sh(
                '%s set %s %s' % (WRAPPER, shlex.quote('democratic-csi:csi_volume_name=x\n' + forged), csi),
                user='csi',
                check=False,
            ).returncode
            == 0
        )
        got = collected(vm)
    finally:
        vm.zfs('set', 'democratic-csi:csi_volume_name=' + name, csi)

    host_labels = (('dataset', volume), ('kind', 'host'), ('namespace', 'default'), ('volume', 't-metrics'))
    csi_labels = (('dataset', csi), ('kind', 'csi'), ('namespace', ''), ('volume', 'demo'))
    for labels, name in ((host_labels, volume), (csi_labels, csi)):
        zfs = dict(
            (prop, float(value))
            for prop, value in props(vm, name, 'used', 'referenced', 'available', 'refquota').items()
        )
        for metric in ('used', 'referenced', 'available'):
            assert got[('nomad_zfs_volume_%s_bytes' % metric, labels)] == zfs[metric], (metric, labels)
        assert got[('nomad_zfs_volume_quota_bytes', labels)] == zfs['refquota']
        taken = snapshots(vm, name)
        assert got[('nomad_zfs_volume_snapshots', labels)] == len(taken)
    assert got[('nomad_zfs_volume_quota_bytes', host_labels)] == 4 * MIB
    assert got[('nomad_zfs_volume_referenced_bytes', host_labels)] >= 15 * MIB // 4
    assert got[('nomad_zfs_volume_newest_snapshot_timestamp_seconds', host_labels)] == snapshots(vm, volume)[-1]
    assert not any('forged' in str(key) for key in got) and snapshots(vm, volume)[-1] < 9999999999

    size, free = vm.sh('zpool list -Hp -o size,free tank').stdout.split()
    assert got[('nomad_zfs_pool_size_bytes', (('pool', 'tank'),))] == float(size)
    assert got[('nomad_zfs_pool_state', (('pool', 'tank'), ('state', 'online')))] == 1
    assert got[('nomad_zfs_parent_exists', (('kind', 'csi'), ('parent', PARENT)))] == 1
    assert got[('nomad_zfs_parent_exists', (('kind', 'host'), ('parent', HOST_VOLUMES)))] == 1
    # The exporter read the file whole, through root's link; it is the collector's user's, and nothing half-written is
    # left beside it.
    assert got[('node_textfile_scrape_error', ())] == 0
    assert vm.sh('stat -c %%U:%%F %s' % TEXTFILE).stdout.strip() == 'root:symbolic link'
    assert vm.sh('stat -L -c %%U:%%a %s' % TEXTFILE).stdout.strip() == 'prometheus:644'
    assert vm.sh('ls -A %s' % OUTPUT).stdout.split() == ['nomad_zfs.prom']
    shown = vm.sh('systemctl show -p User -p NoNewPrivileges --value zfs-metrics.service').stdout.split()
    assert shown == ['prometheus', 'yes']
    assert vm.sh('systemctl is-enabled zfs-metrics.timer; systemctl is-active zfs-metrics.timer').stdout.split() == [
        'enabled',
        'active',
    ]

    # The collection's alert rules on these very series, as Prometheus would scrape them for 20 minutes: the full
    # host volume fires NomadZfsVolumeNearlyFull, and the CSI volume does not.
    scraped = dict(host_labels, instance='zfsvm:9100')
    series = input_series(
        got, lambda name, _labels: name in ('nomad_zfs_volume_referenced_bytes', 'nomad_zfs_volume_quota_bytes'), 20
    )
    full = got[('nomad_zfs_volume_referenced_bytes', host_labels)] / got[('nomad_zfs_volume_quota_bytes', host_labels)]
    summary = 'Volume t-metrics (%s) on zfsvm:9100 is %.4g%% full' % (volume, full * 100)  # humanizePercentage
    alert = {
        'eval_time': '20m',
        'alertname': 'NomadZfsVolumeNearlyFull',
        'exp_alerts': [{'exp_labels': dict(scraped, severity='warning'), 'exp_annotations': {'summary': summary}}],
    }
    promtool_test(vm.workdir, [{'interval': '1m', 'input_series': series, 'alert_rule_test': [alert]}])


def input_series(got, keep, minutes, clock=0):
    """promtool's input series of the scraped samples that keep(name, labels) takes, as Prometheus would have scraped
    them every minute for that long. Timestamps count from clock: promtool's clock starts at 0."""
    series = []
    for (name, labels), value in got.items():
        if keep(name, labels):
            pairs = ','.join('%s=%s' % (k, json.dumps(v)) for k, v in labels + (('instance', 'zfsvm:9100'),))
            value = value - clock if name.endswith('_timestamp_seconds') else value
            series.append({'series': '%s{%s}' % (name, pairs), 'values': '%dx%d' % (value, minutes)})
    return series


def promtool_test(workdir, tests):
    """promtool test rules on the collection's rules file with these tests (promtool reads JSON as YAML)."""
    path = workdir / 'zfs-metrics.test.json'
    path.write_text(json.dumps({'rule_files': [str(RULES)], 'evaluation_interval': '1m', 'tests': tests}))
    run = subprocess.run(
        [str(CACHE / 'bin' / 'promtool'), 'test', 'rules', str(path)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
