"""The zfs_metrics role installs the collection's renderer and status reader beside its collector, checks parents as
zfs_replication does, and reads the pulls where zfs_replication leaves them: one source for each."""

import importlib.machinery
import importlib.util
import json
import sys
from pathlib import Path

import jinja2
import yaml

from ansible_collections.nomad_zfs.csi.plugins.module_utils import _replication_status, _zfs_metrics

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
    assert collector.pulls(str(conf), str(status)) == [
        ({'host': 'storage-1', 'parent': 'tank/nomad/csi', 'target': 'b/storage-1/tank/nomad/csi'}, {'finished': 7}),
        ({'host': 'storage-2', 'parent': 'tank/nomad/csi', 'target': 'b/storage-2/tank/nomad/csi'}, None),
    ]
    assert collector.pulls(str(tmp_path / 'none'), str(status)) == []
