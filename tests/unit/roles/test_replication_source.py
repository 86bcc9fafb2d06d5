"""The replication user's forced command on a primary: what syncoid asks for runs, as an argv with no shell;
everything else is refused before anything runs. The commands are the ones syncoid 2.1.0 sent in the VM
(tests/unit/fixtures/syncoid_2.1.0_source_commands.txt); the real refusals are tested there
(tests/integration/replication)."""

import importlib.util
from pathlib import Path

import pytest

from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

SOURCE = Path(__file__).resolve().parents[3] / 'roles' / 'zfs_replication' / 'files' / 'zfs-replication-source.py'
SPEC = importlib.util.spec_from_file_location('zfs_replication_source', str(SOURCE))
source = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(source)

PARENTS = ['tank/nomad/csi', 'tank/nomad/volumes']
CAPTURED = [line for line in (FIXTURES / 'syncoid_2.1.0_source_commands.txt').read_text().splitlines() if line.strip()]


@pytest.mark.parametrize('command', CAPTURED)
def test_every_command_syncoid_sent_is_allowed(command):
    argv, status = source.plan(command, PARENTS)
    if argv is None:
        assert status in (0, 1)
    else:
        assert argv[0] in (source.ZFS, source.ZPOOL)


def test_the_argv_is_the_command_split_without_a_shell():
    argv = source.plan(
        "zfs send -I 'tank/nomad/csi/v1'@'autosnap_a_hourly' 'tank/nomad/csi/v1'@'autosnap_b_hourly'", PARENTS
    )[0]
    assert argv == [
        source.ZFS,
        'send',
        '-I',
        'tank/nomad/csi/v1@autosnap_a_hourly',
        'tank/nomad/csi/v1@autosnap_b_hourly',
    ]
    argv = source.plan("zfs get -Hpd 1 -t snapshot guid,creation 'tank/nomad/volumes/ns/v'", PARENTS)[0]
    assert argv == [
        source.ZFS,
        'get',
        '-H',
        '-p',
        '-d',
        '1',
        '-t',
        'snapshot',
        'guid,creation',
        'tank/nomad/volumes/ns/v',
    ]
    assert source.plan('command -v lzop', PARENTS) == (None, 1)
    assert source.plan('exit', PARENTS) == (None, 0)


@pytest.mark.parametrize(
    ('command', 'why'),
    [
        ('', 'only zfs'),
        ('sh', 'only zfs'),
        ('zfs destroy tank/nomad/csi/v1@s', 'only zfs list'),
        ('zfs rollback -r tank/nomad/csi/v1@s', 'only zfs list'),
        ('zfs receive tank/nomad/csi/x', 'only zfs list'),
        ('zfs snapshot tank/nomad/csi/v1@s', 'only zfs list'),
        ('zfs set readonly=on tank/nomad/csi/v1', 'only zfs list'),
        ('zfs allow tank/nomad/csi', 'only zfs list'),
        ('zfs send tank/other/v1@s', 'outside the replicated parents'),
        ('zfs send tank/nomad/csi-snapshots/v1@s', 'outside the replicated parents'),
        ('zfs send tank/nomad/csi/../../secret@s', 'not a dataset name'),
        ('zfs send -R tank/nomad/csi@s', 'option -R not recognized'),
        ('zfs send tank/nomad/csi/v1', 'one snapshot'),
        ('zfs send tank/nomad/csi/v1@s | sh', 'one snapshot'),
        ('zfs send tank/nomad/csi/v1@s; rm -rf /', 'one snapshot'),
        ('zfs send "tank/nomad/csi/v1@s;rm"', 'not a dataset name'),
        ('zfs send -t "$(id)"', 'not a resume token'),
        ('zfs send -I tank/other@a tank/nomad/csi/v1@b', 'outside the replicated parents'),
        ('zfs list', 'needs datasets'),
        ('zfs list -r tank', 'outside the replicated parents'),
        ('zfs get all tank', 'outside the replicated parents'),
        ('zfs bookmark tank/nomad/csi/v1@s tank/other#b', 'outside the replicated parents'),
        ('zfs hold keep tank/nomad/csi/v1@s', 'only zfs list, get, send and bookmark'),
        ('zfs release keep tank/nomad/csi/v1@s', 'only zfs list, get, send and bookmark'),
        ('zpool get all tank', 'only zpool get of a feature'),
        ('zpool get -H feature@x other', 'only zpool get of a feature'),
        ('zpool destroy tank', 'only zfs list'),
        ("zfs get -H name 'unbalanced", 'cannot split'),
    ],
)
def test_everything_else_is_refused_with_the_reason(command, why):
    with pytest.raises(source.Refused, match=why.replace('(', r'\(')):
        source.plan(command, PARENTS)


@pytest.mark.parametrize('text', ['', 'parent=\n', 'parent=tank/../x\n', 'parent=tank/a b\n', 'parent=tank@s\n'])
def test_a_missing_or_bad_parent_line_names_the_role(text):
    with pytest.raises(source.Refused, match='zfs_replication role'):
        source.read_parents(text)
