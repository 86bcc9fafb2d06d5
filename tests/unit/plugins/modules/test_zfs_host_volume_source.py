"""zfs_host_volume_source's main(), fed what real OpenZFS 2.3.2 printed in the VM for its one zfs get: a live
volume's dataset whose final snapshot does not exist yet, and the same dataset after the module's commands ran there
(frozen, marked, snapshotted)."""

import pytest
from ansible.module_utils import basic

from ansible_collections.nomad_zfs.csi.plugins.modules import zfs_host_volume_source
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

DATASET = 'tank/it-cap/vol/default/pg'
FINAL = 'nomad-zfs-csi-move_2026-11-26_10:00:00'


def captured(when):
    name = 'zfs_get_host_volume_source_%s_2.3.2.' % when
    return tuple((FIXTURES / (name + ext)).read_text() for ext in ('txt', 'stderr'))


@pytest.fixture
def zfs(monkeypatch):
    """answers: what zfs get prints, in turn; ran: every argv after zfs."""
    state = {'answers': [captured('live'), captured('marked')], 'ran': []}

    def run_command(module, argv, **kwargs):
        assert isinstance(argv, list), 'argv lists only, never a shell string'
        state['ran'].append(argv[1:])
        if argv[1] == 'get':
            out, err = state['answers'].pop(0) if len(state['answers']) > 1 else state['answers'][0]
            return (1 if err else 0), out, err
        return 0, '', ''

    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda module, name, **kw: '/usr/sbin/' + name)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    return state


ARGS = {'dataset': DATASET, 'state': 'marked', 'moved_to': 'nzc-b', 'final': FINAL}


def test_check_mode_predicts_and_runs_one_zfs_get(run_main, zfs):
    result = run_main(zfs_host_volume_source, ARGS, check=True, diff=True)
    assert result['changed'] and 'final_guid' not in result
    assert result['commands'] == [
        ['zfs', 'set', 'com.sun:auto-snapshot=false', 'nomad-zfs-csi:moved-to=nzc-b', 'readonly=on', DATASET],
        ['zfs', 'snapshot', DATASET + '@' + FINAL],
    ]
    assert result['diff']['before']['readonly'] == 'off' and result['diff']['after']['readonly'] == 'on'
    assert (result['diff']['before']['final_snapshot'], result['diff']['after']['final_snapshot']) == (
        None,
        DATASET + '@' + FINAL,
    )
    assert [argv[0] for argv in zfs['ran']] == ['get']


def test_it_freezes_snapshots_and_answers_the_guid_then_has_nothing_left(run_main, zfs):
    result = run_main(zfs_host_volume_source, ARGS)
    assert [argv[0] for argv in zfs['ran']] == ['get', 'set', 'snapshot', 'get']
    guid = [
        line.split('\t')[2]
        for line in captured('marked')[0].splitlines()
        if line.startswith(DATASET + '@') and '\tguid\t' in line
    ]
    assert result['changed'] and [result['final_guid']] == guid
    zfs['ran'][:] = []
    again = run_main(zfs_host_volume_source, ARGS)
    assert (again['changed'], again['commands'], again['final_guid']) == (False, [], guid[0])
    assert [argv[0] for argv in zfs['ran']] == ['get']


@pytest.mark.parametrize(
    'changes, message',
    [
        ({'dataset': 'tank/../x'}, "dataset 'tank/../x'"),
        ({'final': 'pg@x'}, "final 'pg@x' is not a snapshot's short name"),
        ({'moved_to': ''}, 'moved_to is required with state=marked'),
    ],
)
def test_bad_input_is_named_and_nothing_runs(run_main, zfs, changes, message):
    result = run_main(zfs_host_volume_source, dict(ARGS, **changes))
    assert result['failed'] and message in result['msg'], result
    assert zfs['ran'] == []
