"""systemd_units' main(), fed what systemd 252 printed in the VM for `systemctl show` of running, enabled units, a
stopped and disabled pull timer, a unit that does not exist and a masked one; each command it runs then changes
the state that the next show prints."""

import pytest
from ansible.module_utils import basic

from ansible_collections.nomad_zfs.csi.plugins.modules import systemd_units
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

GONE = 'zfs-replication-pull@gone.timer'


@pytest.fixture
def systemd(monkeypatch):
    """ran: every argv after systemctl; units: each unit's shown properties, which enable, disable, start, stop
    and restart change as systemd would."""
    blocks = (FIXTURES / 'systemctl_show_252.txt').read_text().strip().split('\n\n')
    units = dict(
        (b.splitlines()[0].split('=', 1)[1], dict(line.split('=', 1) for line in b.splitlines())) for b in blocks
    )
    state = {'ran': [], 'units': units}
    effects = {
        'enable': ('UnitFileState', 'enabled'),
        'disable': ('UnitFileState', 'disabled'),
        'start': ('ActiveState', 'active'),
        'restart': ('ActiveState', 'active'),
        'stop': ('ActiveState', 'inactive'),
    }

    def run_command(module, argv, **kwargs):
        assert isinstance(argv, list), 'argv lists only, never a shell string'
        args = argv[1:]
        state['ran'].append(args)
        if args[0] == 'show':
            names = args[args.index('--') + 1 :]
            missing = dict(LoadState='not-found', ActiveState='inactive', UnitFileState='')
            shown = [dict(units.get(name, missing), Id=name) for name in names]
            return 0, '\n\n'.join('\n'.join('%s=%s' % kv for kv in unit.items()) for unit in shown) + '\n', ''
        if args[0] in effects:
            key, value = effects[args[0]]
            for name in args[1:]:
                units[name][key] = value
        return 0, '', ''

    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda module, name, **kw: '/usr/bin/' + name)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    return state


def test_check_mode_predicts_one_command_per_verb_which_the_run_makes_then_nothing(run_main, systemd):
    units = {
        'units': [
            {'name': GONE, 'enabled': True, 'state': 'started'},
            {'name': 'sanoid.timer', 'enabled': True, 'state': 'started'},
            {'name': 'nfs-server.service', 'enabled': True, 'state': 'started', 'restart': True},
            {'name': 'zfs-share.service', 'enabled': True},
        ]
    }
    checked = run_main(systemd_units, units, check=True, diff=True)
    wanted = [['enable', GONE], ['start', GONE], ['restart', 'nfs-server.service']]
    assert (checked['changed'], checked['commands']) == (True, wanted)
    assert checked['diff']['before'][GONE] == {'enabled': False, 'active': False}
    assert checked['diff']['after'][GONE] == {'enabled': True, 'active': True}
    assert [args[0] for args in systemd['ran']] == ['show']
    assert run_main(systemd_units, units)['commands'] == wanted
    units['units'][2]['restart'] = False
    systemd['ran'][:] = []
    again = run_main(systemd_units, units)
    assert (again['changed'], again['commands'], [a[0] for a in systemd['ran']]) == (False, [], ['show'])


def test_daemon_reload_runs_first_and_never_in_check_mode(run_main, systemd):
    units = {'units': [{'name': 'sanoid.timer', 'state': 'started'}], 'daemon_reload': True}
    assert run_main(systemd_units, units, check=True)['changed'] is False
    assert [a[0] for a in systemd['ran']] == ['show']
    ran = run_main(systemd_units, units)
    assert ran['changed'] and [a[0] for a in systemd['ran'][1:]] == ['daemon-reload', 'show']


def test_stopping_and_disabling_a_timer_no_longer_wanted(run_main, systemd):
    timer = 'zfs-replication-pull@backup_replica_127.0.0.1_tank_nomad_csi.timer'
    result = run_main(systemd_units, {'units': [{'name': timer, 'enabled': False, 'state': 'stopped'}]})
    assert result['commands'] == [['disable', timer], ['stop', timer]]


@pytest.mark.parametrize(
    'name, message',
    [
        ('no-such-unit.service', 'units[1].name no-such-unit.service is not-found on this host: install it first'),
        ('nzc-masked.service', 'units[1].name nzc-masked.service is masked on this host: unmask it first'),
    ],
)
def test_an_unknown_or_masked_unit_is_refused_before_any_change(run_main, systemd, name, message):
    units = {'units': [{'name': GONE, 'enabled': True, 'state': 'started'}, {'name': name, 'state': 'started'}]}
    refused = run_main(systemd_units, units)
    assert refused['failed'] and message in refused['msg'] and 'Nothing was changed' in refused['msg']
    assert [args[0] for args in systemd['ran']] == ['show']
