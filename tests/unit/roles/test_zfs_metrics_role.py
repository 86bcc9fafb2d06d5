"""The zfs_metrics role installs the collection's renderer beside its collector, and checks parents as zfs_replication
does: one source for each."""

from pathlib import Path

import yaml

from ansible_collections.nomad_zfs.csi.plugins.module_utils import _zfs_metrics

ROLES = Path(__file__).resolve().parents[3] / 'roles'


def role_vars(role):
    return yaml.safe_load((ROLES / role / 'vars' / 'main.yml').read_text())


def test_the_role_installs_the_renderer_the_collector_imports_and_checks_names_as_zfs_replication():
    mine = role_vars('zfs_metrics')
    installed = mine['zfs_metrics_renderer'].replace('{{ role_path }}', str(ROLES / 'zfs_metrics'))
    assert Path(installed).resolve() == Path(_zfs_metrics.__file__).resolve()
    collector = (ROLES / 'zfs_metrics' / 'files' / 'zfs-metrics').read_text()
    assert 'from _zfs_metrics import' in collector and Path(installed).name == '_zfs_metrics.py'
    assert mine['zfs_metrics_dataset_pattern'] == role_vars('zfs_replication')['zfs_replication_dataset_pattern']
    # The argument spec's kinds are the renderer's.
    spec = yaml.safe_load((ROLES / 'zfs_metrics' / 'meta' / 'argument_specs.yml').read_text())
    kinds = spec['argument_specs']['main']['options']['zfs_metrics_parents']['options']['kind']['choices']
    assert sorted(kinds) == sorted(_zfs_metrics.KINDS)
