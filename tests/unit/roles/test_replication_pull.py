"""The pull unit's wrapper (roles/zfs_replication/files/zfs-replication-pull) reads from the unit's own syncoid
argv what its listing of the primary needs. What it leaves out is _replication_status.pull_plan's (unit tested
there); that syncoid then skips those datasets and pulls the rest is tested on the VM
(tests/integration/replication)."""

import importlib.machinery
import importlib.util
import shlex
import sys
from pathlib import Path

import jinja2

ROOT = Path(__file__).resolve().parents[3]
ROLE = ROOT / 'roles' / 'zfs_replication'
sys.path.insert(0, str(ROOT / 'plugins' / 'module_utils'))  # where the role installs _replication_status.py: beside it
WRAPPER = str(ROLE / 'files' / 'zfs-replication-pull')
SPEC = importlib.util.spec_from_loader(
    'zfs_replication_pull', importlib.machinery.SourceFileLoader('zfs_replication_pull', WRAPPER)
)
pull = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(pull)


def exec_start(**values):
    """The unit's ExecStart as systemd runs it, with the pull's EnvironmentFile expanded."""
    text = (ROLE / 'templates' / 'zfs-replication-pull@.service.j2').read_text()
    unit = jinja2.Environment(trim_blocks=True).from_string(text).render(
        ansible_managed='', zfs_replication_user='zfs-replica', zfs_replication_pull_dir='/etc/nomad-zfs-csi/pulls',
        zfs_replication_pull_script='/usr/local/libexec/nomad-zfs-csi/zfs-replication-pull',
        zfs_replication_key='/var/lib/zfs-replica/.ssh/id_ed25519', zfs_replication_pull_bwlimit=values.get('bwlimit'),
        zfs_replication_known_hosts='/etc/nomad-zfs-csi/replication-known_hosts',
        zfs_replication_status_directory='nomad-zfs-csi/replication',
    )  # fmt: skip
    line = unit.replace('\\\n', '').split('ExecStart=', 1)[1].split('\n', 1)[0]
    line = line.replace('${PORT}', '2222').replace('${SOURCE}', 'zfs-replica@storage-1:tank/nomad/volumes')
    return shlex.split(line.replace('${TARGET}', 'backup/replica/storage-1/tank/nomad/volumes'))


def test_the_wrapper_runs_syncoid_with_the_units_arguments_and_lists_through_the_same_key_and_host_keys():
    for bwlimit in (None, '10M'):
        argv = exec_start(bwlimit=bwlimit)
        assert argv[:3] == ['/usr/bin/python3', '-IS', '/usr/local/libexec/nomad-zfs-csi/zfs-replication-pull']
        assert argv[3] == '--status=%S/nomad-zfs-csi/replication/%i.json'
        syncoid = argv[4:]
        assert syncoid[0] == '/usr/sbin/syncoid' and ('--target-bwlimit=10M' in syncoid) == bool(bwlimit)
        key, port, options, login, parent, target = pull.settings(syncoid)
        assert (key, port, login, parent, target) == (
            '/var/lib/zfs-replica/.ssh/id_ed25519',
            '2222',
            'zfs-replica@storage-1',
            'tank/nomad/volumes',
            'backup/replica/storage-1/tank/nomad/volumes',
        )
        assert options == [
            'UserKnownHostsFile=/etc/nomad-zfs-csi/replication-known_hosts',
            'StrictHostKeyChecking=yes',
            'BatchMode=yes',
        ]
