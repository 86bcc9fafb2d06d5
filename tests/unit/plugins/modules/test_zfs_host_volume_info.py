"""zfs_host_volume_info's main(): the plugin's configuration and the pulls read from files, and one zfs list fed the
real listing captured in the VM (OpenZFS 2.3.2): a marked source dataset with a move's final snapshot, a replica
received from it, and a pull whose replica does not exist yet."""

import pytest
from ansible.module_utils import basic

from ansible_collections.nomad_zfs.csi.plugins.modules import zfs_host_volume_info
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

LISTING = (FIXTURES / 'zfs_list_host_volume_node_2.3.2.txt').read_text()
MISSING = (FIXTURES / 'zfs_list_host_volume_node_2.3.2.stderr').read_text()
REPLICA = 'tank/cap/replica/storage-1/tank/nomad/volumes/team-a/pgdata'


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A plugin configuration and three pulls: two into the replica parent, one into another dataset."""
    (tmp_path / 'zfs-dataset.conf').write_text('parent=tank/cap/volumes\nreplica_parent=tank/cap/replica\n')
    pulls = tmp_path / 'pulls'
    pulls.mkdir()
    for host, target in (
        ('storage-1', 'tank/cap/replica/storage-1/tank/nomad/volumes'),
        ('storage-3', 'tank/cap/replica/storage-3/tank/nomad/volumes'),
        ('storage-1', 'backup/replica/storage-1/tank/nomad/csi'),
    ):
        text = '# Read by zfs-replication-pull@x.service\nSOURCE=zfs-replica@%s:%s\nPORT=22\nTARGET=%s\n' % (
            host,
            target.split('/', 4)[4],
            target,
        )
        (pulls / (target.replace('/', '_') + '.conf')).write_text(text)
    ran = []

    def run_command(module, argv, **kwargs):
        assert isinstance(argv, list), 'argv lists only, never a shell string'
        ran.append(argv[1:])
        return 1, LISTING, MISSING

    monkeypatch.setattr(basic.AnsibleModule, 'get_bin_path', lambda module, name, **kw: '/usr/sbin/' + name)
    monkeypatch.setattr(basic.AnsibleModule, 'run_command', run_command)
    args = {'plugin_conf': str(tmp_path / 'zfs-dataset.conf'), 'pulls_dir': str(pulls), 'namespace': 'team-a',
            'name': 'pgdata'}  # fmt: skip
    return args, ran


def test_one_zfs_list_reads_the_dataset_its_marks_and_the_replicas_the_pulls_keep(run_main, node):
    args, ran = node
    read = run_main(zfs_host_volume_info, args, check=True)
    assert read['changed'] is False and (read['parent'], read['replica_parent']) == (
        'tank/cap/volumes',
        'tank/cap/replica',
    )
    [listed] = ran
    assert listed[:3] == ['list', '-H', '-p'] and listed[-5:] == [
        'tank/cap/volumes/team-a/pgdata',
        'tank/cap/replica/storage-1/tank/nomad/volumes/team-a',
        REPLICA,
        'tank/cap/replica/storage-3/tank/nomad/volumes/team-a',
        'tank/cap/replica/storage-3/tank/nomad/volumes/team-a/pgdata',
    ]
    dataset = read['dataset']
    assert (dataset['exists'], dataset['type'], dataset['readonly']) == (True, 'filesystem', True)
    assert (dataset['mark'], dataset['moved_to']) == ('6d0f7a5e-2c1b-4f7e-9a35-0c6a2f3b9e11', 'storage-2')
    assert [s['name'].split('@')[1] for s in dataset['snapshots']] == [
        'autosnap_2026-11-26_09:00:00_hourly',
        'nomad-zfs-csi-move_2026-11-26_10:00:00',
    ]
    # The pull into another dataset than the replica parent is not one the plugin could adopt from.
    one, three = read['pulls']
    assert (one['host'], one['parent'], one['adopt']) == (
        'storage-1',
        'tank/nomad/volumes',
        'storage-1/tank/nomad/volumes',
    )
    assert one['instance'] == 'tank_cap_replica_storage-1_tank_nomad_volumes' and one['namespace_replica_exists']
    assert (
        one['replica']['name'] == REPLICA and one['replica']['snapshots'][0]['guid'] == dataset['snapshots'][0]['guid']
    )
    assert three['replica'] == {'name': three['target'] + '/team-a/pgdata', 'exists': False, 'snapshots': []}
    assert not three['namespace_replica_exists']


def test_a_node_without_the_plugins_configuration_is_not_the_collections(run_main, node, tmp_path):
    args, ran = node
    failed = run_main(zfs_host_volume_info, dict(args, plugin_conf=str(tmp_path / 'mkdir.conf')))
    assert (
        failed['failed'] and 'cannot read %s (No such file or directory)' % (tmp_path / 'mkdir.conf') in failed['msg']
    )
    assert 'only a volume of the zfs-dataset plugin' in failed['msg'] and ran == []


def test_a_zfs_list_that_fails_for_another_reason_is_an_error(run_main, node, monkeypatch):
    args, _ran = node
    monkeypatch.setattr(
        basic.AnsibleModule,
        'run_command',
        lambda module, argv, **kw: (1, '', "cannot open 'tank': permission denied\n"),
    )
    failed = run_main(zfs_host_volume_info, args)
    assert failed['failed'] and 'permission denied' in failed['msg']
