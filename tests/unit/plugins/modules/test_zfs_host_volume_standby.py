"""zfs_host_volume_standby's main(), fed the listings real OpenZFS 2.3.2 printed in the VM: a copy that wrote after
the common snapshot (a snapshot and data after it) with no replica yet, and the same after the module's commands ran
there by hand (the replica a promoted clone, the copy aside as its clone)."""

import pytest
from ansible.module_utils import basic

from ansible_collections.nomad_zfs.csi.plugins.modules import zfs_host_volume_standby
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

COPY = 'tank/it-cap/vol/default/pg'
REPLICA = 'tank/it-cap/replica/127.0.0.1/tank/vol/default/pg'
ASIDE = COPY + '.diverged-after-autosnap_1_hourly'


def captured(when):
    name = 'zfs_list_host_volume_standby_%s_2.3.2.' % when
    return [(FIXTURES / (name + ext)).read_text() for ext in ('txt', 'stderr')]


@pytest.fixture
def zfs(monkeypatch):
    """answers: what each zfs list/get prints; ran: every argv after zfs."""
    state = {'listing': captured('before'), 'local': '', 'ran': []}

    def run_command(module, argv, **kwargs):
        assert isinstance(argv, list), 'argv lists only, never a shell string'
        state['ran'].append(argv[1:])
        if argv[1] == 'list':
            return 1, state['listing'][0], state['listing'][1]
        if argv[1] == 'get':
            return 0, state['local'], ''
        return 0, '', ''

    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda module, name, **kw: '/usr/sbin/' + name)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    return state


def args(**changes):
    common = captured('before')[0].splitlines()[1].split('\t')
    assert common[0] == COPY + '@autosnap_1_hourly'
    return dict(
        dict(dataset=COPY, replica=REPLICA, common='autosnap_1_hourly', common_guid=common[2], moved_to='nzc-a'),
        **changes,
    )


def test_check_mode_predicts_the_commands_and_runs_none(run_main, zfs):
    result = run_main(zfs_host_volume_standby, args(), check=True, diff=True)
    assert result['changed'] and result['diverged'] and result['aside'] == ASIDE
    assert result['commands'] == [
        ['zfs', 'unmount', COPY],
        ['zfs', 'set', 'nomad-zfs-csi:moved-to=nzc-a', 'readonly=on', COPY],
        ['zfs', 'clone', COPY + '@autosnap_1_hourly', REPLICA],
        ['zfs', 'promote', REPLICA],
        ['zfs', 'rename', '-u', COPY, ASIDE],
    ]
    assert result['diff'] == {'before': {'copy': COPY}, 'after': {'standby': REPLICA, 'aside': ASIDE}}
    assert [argv[0] for argv in zfs['ran']] == ['list']


def test_it_runs_them_and_then_has_nothing_left_to_do(run_main, zfs):
    result = run_main(zfs_host_volume_standby, args())
    assert [argv[0] for argv in zfs['ran']] == ['list', 'unmount', 'set', 'clone', 'promote', 'rename']
    assert result['changed']
    zfs['listing'], zfs['ran'][:] = captured('after'), []
    again = run_main(zfs_host_volume_standby, args())
    assert (again['changed'], again['aside'], again['commands']) == (False, ASIDE, [])
    assert [argv[0] for argv in zfs['ran']] == ['list', 'get']


@pytest.mark.parametrize(
    'changes, message',
    [
        ({'dataset': 'tank/it-cap/../x'}, "dataset 'tank/it-cap/../x'"),
        ({'common': 'pg@autosnap_1_hourly'}, "common 'pg@autosnap_1_hourly' is not a snapshot's short name"),
        ({'common_guid': '12XB'}, "common_guid '12XB' is not a guid"),
        ({'common_guid': '42'}, 'has no snapshot autosnap_1_hourly (guid 42)'),
    ],
)
def test_bad_input_is_named_and_nothing_runs(run_main, zfs, changes, message):
    result = run_main(zfs_host_volume_standby, args(**changes))
    assert result['failed'] and message in result['msg'], result
    assert [argv[0] for argv in zfs['ran']] in ([], ['list'])
