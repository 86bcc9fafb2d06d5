"""The zfs_metrics role installs the collection's renderer and status reader beside its collector, checks parents as
zfs_replication does, and reads the pulls where zfs_replication leaves them: one source for each."""

import importlib.machinery
import importlib.util
import json
import os
import sys
from pathlib import Path

import jinja2
import yaml

from ansible_collections.nomad_zfs.csi.plugins.module_utils import _replication_status, _zfs_metrics
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.module_utils.test_zfs_metrics import samples

ROLES = Path(__file__).resolve().parents[3] / 'roles'
sys.path.insert(0, str(Path(_zfs_metrics.__file__).parent))  # where the role installs them: beside the collector
COLLECTOR = str(ROLES / 'zfs_metrics' / 'files' / 'zfs-metrics')
SPEC = importlib.util.spec_from_loader('zfs_metrics', importlib.machinery.SourceFileLoader('zfs_metrics', COLLECTOR))
collector = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(collector)


def role_vars(role):
    return yaml.safe_load((ROLES / role / 'vars' / 'main.yml').read_text())


def test_the_role_installs_the_renderer_the_collector_imports_and_checks_names_as_zfs_replication():
    mine = role_vars('zfs_metrics')
    installed = mine['zfs_metrics_renderer'].replace('{{ role_path }}', str(ROLES / 'zfs_metrics'))
    assert Path(installed).resolve() == Path(_zfs_metrics.__file__).resolve()
    reader = mine['zfs_metrics_pull_status_reader'].replace('{{ role_path }}', str(ROLES / 'zfs_metrics'))
    assert Path(reader).resolve() == Path(_replication_status.__file__).resolve()
    collector = (ROLES / 'zfs_metrics' / 'files' / 'zfs-metrics').read_text()
    assert 'from _zfs_metrics import' in collector and Path(installed).name == '_zfs_metrics.py'
    assert mine['zfs_metrics_dataset_pattern'] == role_vars('zfs_replication')['zfs_replication_dataset_pattern']
    # The argument spec's kinds are the renderer's.
    spec = yaml.safe_load((ROLES / 'zfs_metrics' / 'meta' / 'argument_specs.yml').read_text())
    kinds = spec['argument_specs']['main']['options']['zfs_metrics_parents']['options']['kind']['choices']
    assert sorted(kinds) == sorted(_zfs_metrics.KINDS)


def test_the_collector_reads_each_pull_where_zfs_replication_leaves_it(tmp_path):
    defaults = yaml.safe_load((ROLES / 'zfs_metrics' / 'defaults' / 'main.yml').read_text())
    theirs = role_vars('zfs_replication')
    assert defaults['zfs_metrics_pull_dir'] == theirs['zfs_replication_pull_dir']
    assert defaults['zfs_metrics_pull_status_dir'] == '/var/lib/' + theirs['zfs_replication_status_directory']
    conf, status = tmp_path / 'pulls', tmp_path / 'status'
    conf.mkdir()
    status.mkdir()
    # As the role's pull.conf.j2 writes it, and a pull whose status file is not one.
    template = jinja2.Environment().from_string((ROLES / 'zfs_replication' / 'templates' / 'pull.conf.j2').read_text())
    for host in ('storage-1', 'storage-2'):
        pull = {'host': host, 'parent': 'tank/nomad/csi', 'port': 22, 'target': 'b/%s/tank/nomad/csi' % host,
                'instance': 'b_' + host}  # fmt: skip
        text = template.render(ansible_managed='managed', zfs_replication_user='zfs-replica', item=pull)
        (conf / (pull['instance'] + '.conf')).write_text(text)
    (status / 'b_storage-1.json').write_text(json.dumps({'finished': 7}))
    (status / 'b_storage-2.json').symlink_to(status / 'b_storage-1.json')
    found = collector.pulls(str(conf), str(status))
    assert [(pull, got) for pull, got, _why in found] == [
        ({'host': 'storage-1', 'parent': 'tank/nomad/csi', 'target': 'b/storage-1/tank/nomad/csi'}, {'finished': 7}),
        ({'host': 'storage-2', 'parent': 'tank/nomad/csi', 'target': 'b/storage-2/tank/nomad/csi'}, None),
    ]
    assert found[0][2] is None and 'symbolic links' in found[1][2]  # why the link was refused
    assert collector.pulls(str(tmp_path / 'none'), str(status)) == []


def forged_pulls(tmp_path, statuses):
    """A pull configured for each of statuses, {instance: the bytes of its status file, or None for a FIFO}, as the
    role's pull.conf.j2 writes it; (conf, status) directories."""
    conf, status = tmp_path / 'pulls', tmp_path / 'status'
    conf.mkdir()
    status.mkdir()
    for instance, data in statuses.items():
        (conf / (instance + '.conf')).write_text(
            'SOURCE=zfs-replica@%s:tank/nomad/csi\nTARGET=b/%s\n' % (instance, instance)
        )
        if data is None:
            os.mkfifo(str(status / (instance + '.json')))
        else:
            (status / (instance + '.json')).write_bytes(data)
    return str(conf), str(status)


def run_collector(monkeypatch, tmp_path, conf, status):
    """The collector's main as its unit runs it, on the captured listings; the samples of the file it wrote."""
    captured = {'/usr/sbin/zfs': 'zfs_list_metrics_2.3.2.txt', '/usr/sbin/zpool': 'zpool_list_metrics_2.3.2.txt'}
    monkeypatch.setattr(collector, 'listing', lambda argv: (FIXTURES / captured[argv[0]]).read_text())
    out = tmp_path / 'nomad_zfs.prom'
    collector.main(['--pulls', conf, '--pull-status', status, str(out), 'csi=tank/it-metrics/csi'])
    return samples(out.read_text(encoding='utf-8'))


def unreadable(got):
    return dict(
        (dict(labels)['host'], value) for (name, labels), value in got.items() if name.endswith('status_unreadable')
    )


def test_a_status_file_the_collector_cannot_take_stops_no_other_metric(monkeypatch, tmp_path):
    """The replication user's forged files: 100,000 levels deep (json's RecursionError), a lone surrogate as an escape
    and as raw bytes (the .prom file's UnicodeEncodeError), a number of 100,000 digits, a FIFO. Each pull says its file
    was refused; the pools, the volumes and the pull whose file is fine are all there."""
    surrogate = b'{"finished": 1, "volumes": [{"name": "tank/nomad/csi/%s", "recovery_point": 1}]}'
    conf, status = forged_pulls(tmp_path, {
        'deep': b'{"volumes": ' + b'[' * 100000 + b']' * 100000 + b'}',
        'escaped': surrogate % b'\\ud800',
        'raw': surrogate % b'\xed\xa0\x80',
        'huge': b'{"finished": 1' + b'0' * 100000 + b'}',
        'fifo': None,
        'fine': b'{"finished": 1700000900, "volumes": [{"name": "tank/nomad/csi/db", "recovery_point": 1}]}',
    })  # fmt: skip
    got = run_collector(monkeypatch, tmp_path, conf, status)
    assert unreadable(got) == {'deep': 1, 'escaped': 1, 'raw': 1, 'huge': 1, 'fifo': 1, 'fine': 0}
    assert got[('nomad_zfs_pool_state', (('pool', 'tank'), ('state', 'online')))] == 1
    assert got[('nomad_zfs_pool_size_bytes', (('pool', 'tank'),))] == 4026531840
    assert ('nomad_zfs_parent_exists', (('kind', 'csi'), ('parent', 'tank/it-metrics/csi'))) in got
    assert any(name == 'nomad_zfs_volume_used_bytes' for name, _labels in got)
    fine = (('host', 'fine'), ('parent', 'tank/nomad/csi'), ('target', 'b/fine'))
    assert got[('nomad_zfs_replica_last_pull_timestamp_seconds', fine)] == 1700000900
    recovered = [dict(labels)['host'] for name, labels in got if name.endswith('recovery_point_timestamp_seconds')]
    assert recovered == ['fine']


def test_a_status_that_slips_past_the_reader_stops_no_other_metric(monkeypatch, tmp_path):
    """Should the reader let through what the .prom file cannot hold (here a lone surrogate, as if load_status did not
    check), every pull counts as unreadable and the rest is written: no pool's alert is frozen."""
    conf, status = forged_pulls(tmp_path, {'one': b'{}', 'two': b'{}'})
    slipped = {'finished': 1, 'volumes': [{'name': 'tank/nomad/csi/\ud800', 'recovery_point': 1}]}
    monkeypatch.setattr(collector, 'load_status', lambda path: (slipped, None))
    got = run_collector(monkeypatch, tmp_path, conf, status)
    assert unreadable(got) == {'one': 1, 'two': 1}
    assert got[('nomad_zfs_pool_size_bytes', (('pool', 'tank'),))] == 4026531840
    assert not any(
        name.endswith(('recovery_point_timestamp_seconds', 'last_pull_timestamp_seconds')) for name, _l in got
    )
