"""zfs_info's main() with a fake zfs: one zfs process, and a missing dataset is not an error."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import zfs_info
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_zfs import FakeZfs


@pytest.fixture
def zfs(monkeypatch):
    return FakeZfs('tank', 'tank/nomad').install(monkeypatch).add('tank/nomad/csi', quota='1073741824')


def test_datasets_with_typed_values_in_one_zfs_process(run_main, zfs):
    result = run_main(zfs_info, {'name': 'tank/nomad', 'properties': ['quota']})
    assert result['exists'] and [d['name'] for d in result['datasets']] == ['tank/nomad', 'tank/nomad/csi']
    assert result['datasets'][1]['properties'] == {'quota': {'value': 1073741824, 'source': 'local'}}
    assert zfs.commands == [
        [
            'get',
            '-Hp',
            '-o',
            'name,property,value,source',
            '-t',
            'filesystem,volume,snapshot',
            '-r',
            'quota,type',
            'tank/nomad',
        ]
    ]


def test_a_missing_dataset_is_reported_as_absent(run_main, zfs):
    result = run_main(zfs_info, {'name': 'tank/nope'})
    result.pop('invocation', None)
    assert result == {'changed': False, 'exists': False, 'datasets': []}


@pytest.mark.parametrize(
    'args, message',
    [
        ({'name': 'tank/a b'}, "name 'tank/a b' "),
        ({'name': 'tank', 'depth': -2}, 'depth must be -1'),
    ],
)
def test_bad_input_fails_before_any_zfs_process(run_main, zfs, args, message):
    result = run_main(zfs_info, args)
    assert result['failed'] and message in result['msg'], result
    assert zfs.commands == []
