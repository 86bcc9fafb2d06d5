"""zfs_dataset's main() with a fake zfs: what it runs, what check mode predicts, and what it refuses."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import zfs_dataset
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_zfs import FakeZfs

GIB = str(1024**3)


@pytest.fixture
def zfs(monkeypatch):
    return FakeZfs('tank', 'tank/nomad').install(monkeypatch)


def test_create_runs_one_create_and_reports_the_properties_read_back(run_main, zfs):
    result = run_main(zfs_dataset, {'name': 'tank/nomad/csi', 'properties': {'quota': '1G', 'compression': 'lz4'}})
    assert result['changed'] and result['commands'] == [
        ['create', '-o', 'compression=lz4', '-o', 'quota=' + GIB, 'tank/nomad/csi']
    ]
    assert zfs.writes() == result['commands']
    assert result['properties']['quota'] == {'value': GIB, 'source': 'local'}


def test_check_mode_predicts_the_same_commands_and_changes_nothing(run_main, zfs):
    args = {'name': 'tank/nomad/csi', 'properties': {'quota': '1G'}}
    predicted = run_main(zfs_dataset, args, check=True, diff=True)
    assert zfs.writes() == [] and 'tank/nomad/csi' not in zfs.datasets
    assert predicted['diff'] == {
        'before': {'name': 'tank/nomad/csi', 'state': 'absent'},
        'after': {'name': 'tank/nomad/csi', 'state': 'present', 'type': 'filesystem', 'properties': {'quota': GIB}},
    }
    applied = run_main(zfs_dataset, args)
    assert applied['commands'] == predicted['commands']
    assert applied['properties']['quota'] == predicted['properties']['quota']


def test_an_unchanged_dataset_costs_one_zfs_process(run_main, zfs):
    zfs.add('tank/nomad/csi', quota=GIB)
    result = run_main(zfs_dataset, {'name': 'tank/nomad/csi', 'properties': {'quota': '1GiB'}})
    assert result['changed'] is False and result['commands'] == []
    assert [c[0] for c in zfs.commands] == ['get']


def test_set_and_inherit_with_a_diff_of_local_values(run_main, zfs):
    zfs.add('tank/nomad/csi', quota=GIB, atime='off')
    result = run_main(
        zfs_dataset, {'name': 'tank/nomad/csi', 'properties': {'quota': '2G'}, 'inherit': ['atime']}, diff=True
    )
    assert result['commands'] == [
        ['set', 'quota=%d' % (2 * 1024**3), 'tank/nomad/csi'],
        ['inherit', 'atime', 'tank/nomad/csi'],
    ]
    assert result['diff']['before']['properties'] == {'atime': 'off', 'quota': GIB}
    assert result['diff']['after']['properties'] == {'quota': str(2 * 1024**3)}


@pytest.mark.parametrize(
    'args, message',
    [
        ({'name': 'tank/nomad/csi', 'properties': {'quota': '12XB'}}, 'properties: '),
        ({'name': 'tank//x'}, "name 'tank//x' "),
        (
            {'name': 'tank/other', 'parent_guard': 'tank/nomad'},
            "name 'tank/other' is outside parent_guard 'tank/nomad'",
        ),
        ({'name': 'tank', 'state': 'absent'}, 'is a pool root'),
        ({'name': 'tank/nomad/csi', 'properties': {'atime': 'off'}, 'inherit': ['atime']}, 'both in properties'),
    ],
)
def test_bad_input_fails_naming_the_field_before_any_zfs_process(run_main, zfs, args, message):
    result = run_main(zfs_dataset, args)
    assert result['failed'] and message in result['msg'], result
    assert zfs.commands == []


@pytest.mark.parametrize(
    'args, message',
    [
        ({'name': 'other/x'}, "pool 'other' does not exist"),
        ({'name': 'tank/a/b'}, "parent 'tank/a' does not exist; create it first or set create_parents: true"),
        ({'name': 'tank/nomad/v', 'type': 'volume'}, 'properties.volsize is required'),
        ({'name': 'tank/nomad/csi', 'properties': {'volblocksize': '8K'}}, 'only apply to type=volume'),
        ({'name': 'tank/nomad/csi', 'properties': {'nosuchprop': 'x'}}, "unknown ZFS property 'nosuchprop'"),
    ],
)
def test_refusals_after_reading_change_nothing(run_main, zfs, args, message):
    result = run_main(zfs_dataset, args)
    assert result['failed'] and message in result['msg'], result
    assert zfs.writes() == []


def test_a_creation_only_property_cannot_change(run_main, zfs):
    zfs.add('tank/nomad/csi', casesensitivity='sensitive')
    result = run_main(zfs_dataset, {'name': 'tank/nomad/csi', 'properties': {'casesensitivity': 'insensitive'}})
    assert result['failed'] and 'casesensitivity cannot change after creation' in result['msg'], result
    assert zfs.writes() == []


def test_absent_refuses_children_unless_recursive(run_main, zfs):
    zfs.add('tank/nomad/csi').add('tank/nomad/csi/vol').add('tank/nomad/csi@s1', kind='snapshot')
    refused = run_main(zfs_dataset, {'name': 'tank/nomad/csi', 'state': 'absent'})
    assert refused['failed'] and '1 child dataset(s) and 1 snapshot(s)' in refused['msg'], refused
    assert zfs.writes() == []
    checked = run_main(zfs_dataset, {'name': 'tank/nomad/csi', 'state': 'absent', 'recursive': True}, check=True)
    assert checked['commands'] == [['destroy', '-r', 'tank/nomad/csi']] and zfs.writes() == []
    gone = run_main(zfs_dataset, {'name': 'tank/nomad/csi', 'state': 'absent', 'recursive': True})
    assert gone['changed'] and zfs.writes() == [['destroy', '-r', 'tank/nomad/csi']]
    assert run_main(zfs_dataset, {'name': 'tank/nomad/csi', 'state': 'absent'})['changed'] is False


def test_a_zfs_failure_is_reported_with_its_command(run_main, zfs, monkeypatch):
    monkeypatch.setattr(zfs, '_create', lambda args: (1, '', "cannot create 'tank/nomad/csi': permission denied\n"))
    result = run_main(zfs_dataset, {'name': 'tank/nomad/csi'})
    assert result['failed'] and 'permission denied' in result['msg'] and result['cmd'][:2] == ['zfs', 'create']


def test_a_failure_after_a_command_ran_reports_it_written_and_changed(run_main, zfs, monkeypatch):
    zfs.add('tank/nomad/csi', quota=GIB, atime='off')
    monkeypatch.setattr(zfs, '_inherit', lambda args: (1, '', "cannot inherit 'atime': permission denied\n"))
    args = {'name': 'tank/nomad/csi', 'properties': {'quota': '2G'}, 'inherit': ['atime']}
    result = run_main(zfs_dataset, args)
    assert result['failed'] and result['changed'] is True and 'permission denied' in result['msg']
    assert result['written'] == [['set', 'quota=%d' % (2 * 1024**3), 'tank/nomad/csi']]
