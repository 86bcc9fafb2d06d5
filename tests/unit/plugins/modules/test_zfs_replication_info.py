"""zfs_replication_info's main(): one local zfs list and one ssh through the pull's key, fed the real listings
captured in the VM; bad input is refused before either runs, and a failed ssh names what to check."""

import pytest
from ansible.module_utils import basic

from ansible_collections.nomad_zfs.csi.plugins.modules import zfs_replication_info
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

PRIMARY = (FIXTURES / 'zfs_list_replication_primary_2.3.2.txt').read_text()
STANDBY = (FIXTURES / 'zfs_list_replication_standby_2.3.2.txt').read_text()
ARGS = {'host': '127.0.0.1', 'parent': 'tank/it-src', 'target': 'backup/it-capture/tank/it-src'}
NOW = 1895612000
LIST = ['list', '-Hp', '-r', '-t', 'filesystem,volume,snapshot,bookmark', '-o', 'name,guid,createtxg,creation,written']


class Ran(list):
    """Every argv run, and what each program answers: (rc, stdout, stderr)."""

    def __init__(self):
        super().__init__()
        self.answers = {'ssh': (0, PRIMARY, ''), 'zfs': (0, STANDBY, '')}


@pytest.fixture
def processes(monkeypatch):
    """ssh answers with the primary's listing unless told otherwise, zfs with the standby's."""
    ran = Ran()
    answers = ran.answers

    def run_command(module, argv, **kwargs):
        assert isinstance(argv, list), 'argv lists only, never a shell string'
        ran.append(argv)
        return answers[argv[0].rsplit('/', 1)[-1]]

    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda module, name, **kw: '/usr/bin/' + name)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    return ran


def test_one_zfs_list_here_and_one_through_the_key_there(run_main, processes):
    result = run_main(zfs_replication_info, ARGS, check=True)
    assert not result['changed'] and result['not_replicated'] == ['tank/it-src/v2']
    assert [v['name'] for v in result['volumes']] == ['tank/it-src/v%d' % n for n in range(1, 6)]
    assert [v['in_sync'] for v in result['volumes']] == [False, False, False, True, False]
    assert processes == [
        ['/usr/bin/zfs'] + LIST + [ARGS['target']],
        [
            '/usr/bin/ssh',
            '-i',
            '/var/lib/zfs-replica/.ssh/id_ed25519',
            '-p',
            '22',
            '-o',
            'BatchMode=yes',
            '-o',
            'StrictHostKeyChecking=yes',
            '-o',
            'UserKnownHostsFile=/etc/nomad-zfs-csi/replication-known_hosts',
            'zfs-replica@127.0.0.1',
            'zfs',
        ]
        + LIST
        + ['tank/it-src'],
    ]


@pytest.mark.parametrize(
    'change, message',
    [
        ({'parent': 'tank/it-src; rm -rf /'}, "parent 'tank/it-src; rm -rf /'"),
        ({'target': 'standby//x'}, "target 'standby//x'"),
        ({'host': '-oProxyCommand=sh'}, 'host'),
        ({'host': 'a b'}, 'not a host name'),
        ({'user': '-oProxyCommand=sh'}, "user '-oProxyCommand=sh' is not a login name"),
    ],
)
def test_bad_input_is_refused_before_any_process(run_main, processes, change, message):
    result = run_main(zfs_replication_info, dict(ARGS, **change))
    assert result['failed'] and message in result['msg'] and processes == []


def test_a_refused_or_failed_ssh_names_what_to_check(run_main, processes):
    processes.answers['ssh'] = (255, '', 'Host key verification failed.\n')
    result = run_main(zfs_replication_info, ARGS)
    assert result['failed'] and 'Host key verification failed.' in result['msg']
    assert 'zfs_replication_standby_keys' in result['msg'] and 'replication-known_hosts' in result['msg']


def test_a_missing_target_says_to_run_the_role(run_main, processes):
    processes.answers['zfs'] = (1, '', "cannot open 'backup/it-capture/tank/it-src': dataset does not exist\n")
    result = run_main(zfs_replication_info, ARGS)
    assert result['failed'] and 'Run the zfs_replication role' in result['msg'] and len(processes) == 1


def test_with_the_primary_lost_only_the_replicas_are_read(run_main, processes, monkeypatch):
    monkeypatch.setattr('time.time', lambda: NOW)
    result = run_main(zfs_replication_info, dict(ARGS, primary_lost=True), check=True)
    assert processes == [['/usr/bin/zfs'] + LIST + [ARGS['target']]]
    # The replicas only: v2 and v3 never reached this standby.
    assert [v['name'] for v in result['volumes']] == ['tank/it-src/v1', 'tank/it-src/v4', 'tank/it-src/v5']
    v1 = result['volumes'][0]
    assert v1['replica'] == ARGS['target'] + '/v1'
    assert v1['newest_replica']['name'] == ARGS['target'] + '/v1@autosnap_2_hourly'
    v1_created = v1['newest_replica']['created']
    assert (v1['newest_source'], v1['behind'], v1['in_sync'], v1['lag_seconds']) == (None, None, None, NOW - v1_created)
    # The oldest newest snapshot among the replicas, with nothing to say what the primary wrote since.
    oldest = min(v['newest_replica']['created'] for v in result['volumes'])
    assert result['lag_seconds'] == NOW - oldest and result['without_snapshots'] == []
