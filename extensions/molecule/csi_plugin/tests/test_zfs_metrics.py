"""Verify the zfs_metrics role after site.yml: the node exporter runs, the collector and the renderer beside it are
root's, and its timer runs it as the exporter's user, who may write only its own directory, which root's link in the
textfile directory points into."""

import os
from pathlib import Path

import pytest
import testinfra

LIBEXEC = '/usr/local/libexec/nomad-zfs-csi'


@pytest.fixture(scope='module')
def zfsvm():
    return testinfra.get_host('ansible://zfsvm', ansible_inventory=os.environ['MOLECULE_INVENTORY_FILE'])


def test_the_exporter_and_the_collectors_timer_run(zfsvm):
    for unit in ('prometheus-node-exporter.service', 'zfs-metrics.timer'):
        assert zfsvm.service(unit).is_enabled and zfsvm.service(unit).is_running, unit


@pytest.mark.parametrize('name', ['zfs-metrics', '_zfs_metrics.py', '_replication_status.py'])
def test_the_collector_is_roots_and_nobody_elses_to_change(zfsvm, name):
    installed = zfsvm.file('%s/%s' % (LIBEXEC, name))
    assert (installed.user, installed.group, installed.mode) == ('root', 'root', 0o644)
    assert zfsvm.file(LIBEXEC).user == 'root' and zfsvm.file(LIBEXEC).mode == 0o755


def test_the_collector_runs_as_the_exporters_user_and_writes_only_its_directory(zfsvm):
    shown = zfsvm.check_output(
        'systemctl show -p User -p NoNewPrivileges -p ProtectSystem -p ReadWritePaths zfs-metrics.service'
    )
    assert sorted(shown.splitlines()) == [
        'NoNewPrivileges=yes',
        'ProtectSystem=strict',
        'ReadWritePaths=/var/lib/nomad-zfs-csi/metrics',
        'User=prometheus',
    ]
    written = zfsvm.file('/var/lib/prometheus/node-exporter/nomad_zfs.prom')
    assert (
        written.user == 'prometheus' and 'nomad_zfs_pool_state{pool="tank",state="online"} 1' in written.content_string
    )


def test_the_alert_rules_are_the_collections(zfsvm):
    """The rules entry point (site.yml's zfs_metrics_rules group, the VM here, which runs no Prometheus)."""
    rules = zfsvm.file('/etc/prometheus/rules/nomad-zfs-csi.rules.yml')
    source = Path(__file__).resolve().parents[4] / 'roles' / 'zfs_metrics' / 'files' / 'nomad-zfs-csi.rules.yml'
    assert (rules.user, rules.mode) == ('root', 0o644) and rules.content_string == source.read_text()
