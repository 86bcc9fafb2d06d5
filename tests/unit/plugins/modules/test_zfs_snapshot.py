"""zfs_snapshot's main(), fed what real OpenZFS 2.3.2 printed in the VM for its zfs get of a dataset and its
snapshots: one a clone was made from (@before), one with a hold (@held), one free (@free), and one missing."""

import pytest
from ansible.module_utils import basic

from ansible_collections.nomad_zfs.csi.plugins.modules import zfs_snapshot
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

DATASET = 'tank/it-cap/snap/data'
LINES = (FIXTURES / 'zfs_get_snapshots_2.3.2.txt').read_text().splitlines()


@pytest.fixture
def zfs(monkeypatch):
    """ran: every argv after zfs. zfs get answers the captured lines of the names asked for, and for another name
    what zfs printed for the missing one; a snapshot taken is then answered with @free's lines."""
    state = {'ran': [], 'taken': []}

    def run_command(module, argv, **kwargs):
        assert isinstance(argv, list), 'argv lists only, never a shell string'
        state['ran'].append(argv[1:])
        if argv[1] == 'snapshot':
            state['taken'].append(argv[2])
        if argv[1] != 'get':
            return 0, '', ''
        out, err = [], []
        for name in argv[6:]:
            found = [line for line in LINES if line.split('\t')[0] == name]
            if not found and name in state['taken']:
                found = [line.replace(DATASET + '@free', name) for line in LINES if line.startswith(DATASET + '@free')]
            out += found
            if not found:
                err.append("cannot open '%s': dataset does not exist" % name)
        return (1 if err else 0), '\n'.join(out) + '\n', '\n'.join(err)

    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda module, name, **kw: '/usr/sbin/' + name)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    return state


def test_check_mode_predicts_with_one_zfs_get_then_the_snapshot_is_taken_once(run_main, zfs):
    name = DATASET + '@new'
    checked = run_main(zfs_snapshot, {'name': name}, check=True, diff=True)
    assert (checked['changed'], checked['commands'], 'guid' in checked) == (True, [['snapshot', name]], False)
    assert checked['diff'] == {'before': {'snapshot': None}, 'after': {'snapshot': name}}
    assert [argv[0] for argv in zfs['ran']] == ['get']
    taken = run_main(zfs_snapshot, {'name': name})
    assert taken['changed'] and taken['guid'] == '6310802760426737426'
    zfs['ran'][:] = []
    again = run_main(zfs_snapshot, {'name': name})
    assert (again['changed'], again['commands'], again['guid']) == (False, [], '6310802760426737426')
    assert [argv[0] for argv in zfs['ran']] == ['get']


def test_an_existing_snapshot_is_kept_and_a_free_one_destroyed_alone(run_main, zfs):
    kept = run_main(zfs_snapshot, {'name': DATASET + '@before'})
    assert (kept['changed'], kept['guid']) == (False, '17312330914631534866')
    gone = run_main(zfs_snapshot, {'name': DATASET + '@free', 'state': 'absent'}, diff=True)
    assert gone['changed'] and zfs['ran'][-1] == ['destroy', DATASET + '@free']
    assert gone['diff'] == {'before': {'snapshot': DATASET + '@free'}, 'after': {'snapshot': None}}
    missing = run_main(zfs_snapshot, {'name': DATASET + '@missing', 'state': 'absent'})
    assert (missing['changed'], missing['commands']) == (False, [])


@pytest.mark.parametrize(
    'args, message',
    [
        ({'name': DATASET + '@before', 'state': 'absent'}, 'has clones (tank/it-cap/snap/copy)'),
        ({'name': DATASET + '@held', 'state': 'absent'}, 'is held (1 holds; zfs holds %s@held' % DATASET),
        ({'name': 'tank/it-cap/none@x'}, 'the dataset tank/it-cap/none does not exist'),
        ({'name': DATASET}, 'is not a snapshot: give <dataset>@<short name>'),
        ({'name': DATASET + '@a@b'}, 'is not a snapshot'),
        ({'name': 'tank/../x@a'}, "name 'tank/../x'"),
        ({'name': DATASET + '@x', 'parent_guard': 'tank/other'}, "is outside parent_guard 'tank/other'"),
    ],
)
def test_refusals_name_the_field_and_nothing_changes(run_main, zfs, args, message):
    result = run_main(zfs_snapshot, args)
    assert result['failed'] and message in result['msg'], result['msg']
    assert 'Nothing was changed' in result['msg'] or not zfs['ran']
    assert [argv[0] for argv in zfs['ran']] in ([], ['get'])
