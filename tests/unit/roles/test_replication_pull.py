"""The pull unit's wrapper (roles/zfs_replication/files/zfs-replication-pull) reads from the unit's own syncoid
argv what its listing of the primary needs. What it leaves out is _replication_status.pull_plan's (unit tested
there); that syncoid then skips those datasets and pulls the rest is tested on the VM
(tests/integration/replication). A listing it cannot take still ends in a status."""

import importlib.machinery
import importlib.util
import json
import shlex
import sys
from pathlib import Path

import jinja2
import pytest

from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

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


PRIMARY = (FIXTURES / 'zfs_list_replication_primary_2.3.2.txt').read_bytes()
STANDBY = FIXTURES / 'zfs_list_replication_standby_2.3.2.txt'
PARENT, TARGET = 'tank/it-src', 'backup/it-capture/tank/it-src'


def script(path, text):
    path.write_text('#!/bin/sh\n' + text)
    path.chmod(0o755)
    return str(path)


def run_pull(monkeypatch, tmp_path, primary, code):
    """main with the primary's listing (ssh), the replica's (zfs) captured, and a syncoid exiting with code: what
    syncoid was given, the status written, and the exit code."""
    (tmp_path / 'primary').write_bytes(primary)
    monkeypatch.setattr(pull, 'SSH', script(tmp_path / 'ssh', 'cat %s\n' % (tmp_path / 'primary')))
    monkeypatch.setattr(pull, 'ZFS', script(tmp_path / 'zfs', 'cat %s\n' % STANDBY))
    syncoid = script(tmp_path / 'syncoid', 'printf "%%s\\n" "$@" > %s\nexit %d\n' % (tmp_path / 'argv', code))
    status = tmp_path / 'status.json'
    with pytest.raises(SystemExit) as exited:
        pull.main(str(status), [syncoid, '--sshkey=/k', 'zfs-replica@storage-1:' + PARENT, TARGET])
    return (tmp_path / 'argv').read_text().splitlines(), json.loads(status.read_text()), exited.value.code


@pytest.mark.parametrize('code', [0, 1])
@pytest.mark.parametrize(
    'primary',
    [
        PRIMARY + b'garbage\n',  # too few fields
        PRIMARY + PARENT.encode() + b'/v1@x\tguid\t1\t1\t0\n',  # a figure that is no number
        PRIMARY + PARENT.encode() + b'/v1@x\t1\t1\tnow\t0\n',
        PRIMARY + PARENT.encode() + b'/v1@x\t1\t\xc2\xb2\t1\t0\n',  # '²': str.isdigit(), not int()
        PRIMARY + PARENT.encode() + b'/v1@\xff\t1\t1\t1\t0\n',  # not UTF-8
    ],
)
def test_a_listing_of_the_primary_it_cannot_take_still_ends_in_a_status(monkeypatch, tmp_path, primary, code):
    """As when the primary cannot be listed: syncoid, which lists for itself, pulls everything, and the status says
    whether it failed, with each replica's newest snapshot as its recovery point."""
    argv, status, exit_code = run_pull(monkeypatch, tmp_path, primary, code)
    assert argv == ['--sshkey=/k', 'zfs-replica@storage-1:' + PARENT, TARGET]  # no --exclude
    assert (status['failed'], status['exit_code'], exit_code) == (bool(code), code, code)
    # The replicas the standby has (v2 was made on the primary after the pull captured), each at its newest snapshot.
    assert [(v['name'], bool(v['recovery_point'])) for v in status['volumes']] == [
        (PARENT + '/v%d' % n, True) for n in (1, 4, 5)
    ]


def test_a_listing_it_can_take_leaves_out_what_is_in_sync(monkeypatch, tmp_path):
    argv, status, exit_code = run_pull(monkeypatch, tmp_path, PRIMARY, 0)
    assert [a for a in argv if a.startswith('--exclude=')] and exit_code == 0 and not status['failed']
