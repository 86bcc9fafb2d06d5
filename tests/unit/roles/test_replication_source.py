"""The replication user's forced command on a primary (roles/zfs_replication/files/zfs-replication-source, Perl):
what syncoid asks for runs, as an argv with no shell; everything else is refused before anything runs. The commands
are the ones syncoid 2.1.0 sent in the VM (tests/unit/fixtures/syncoid_2.1.0_source_commands.txt); the real
refusals are tested there (tests/integration/replication). Its functions are called through one perl process per
batch, which loads the file as a library (it runs only when perl runs it)."""

import getopt
import json
import random
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._replication_status import LIST_ARGS
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

SOURCE = Path(__file__).resolve().parents[3] / 'roles' / 'zfs_replication' / 'files' / 'zfs-replication-source'
ZFS, ZPOOL = '/usr/sbin/zfs', '/usr/sbin/zpool'
# Each call [function, args...] to {"ok": result} or {"refused": why}; lists come back as arrays, a plan as
# [argv] or [null, status].
HARNESS = r"""
use strict;
use JSON::PP;
require $ARGV[0];
my @out;
for my $call (@{ decode_json(do { local $/; <STDIN> }) }) {
    my ($function, @args) = @$call;
    my $result = eval {
        $function eq 'split' ? [split_words($args[0])]
        : $function eq 'name' ? do { my @n = name($args[0]); @n ? \@n : undef }
        : $function eq 'options' ? [options($args[0], $args[1])]
        : $function eq 'read_parents' ? [read_parents($args[0])]
        : $function eq 'read_send_max' ? read_send_max($args[0])
        : plan($args[0], $args[1]);
    };
    push @out, defined $result || !$@ ? {ok => $result} : {refused => (ref $@ ? $@->{refused} : "$@")};
}
print encode_json(\@out);
"""


def perl(*calls):
    """The forced command's functions on each call, in one perl process."""
    run = subprocess.run(['perl', '-e', HARNESS, str(SOURCE)], input=json.dumps(calls), capture_output=True,
                         text=True, check=True)  # fmt: skip
    return json.loads(run.stdout)


def plan(command):
    result = perl(['plan', command, PARENTS])[0]
    if 'refused' in result:
        raise Refused(result['refused'])
    argv, *status = result['ok']
    return (argv, status[0]) if argv is None else (argv, None)


class Refused(Exception):
    pass


PARENTS = ['tank/nomad/csi', 'tank/nomad/volumes']
CAPTURED = [line for line in (FIXTURES / 'syncoid_2.1.0_source_commands.txt').read_text().splitlines() if line.strip()]


def test_every_command_syncoid_sent_is_allowed():
    for command, result in zip(CAPTURED, perl(*[['plan', c, PARENTS] for c in CAPTURED])):
        assert 'ok' in result, (command, result)
        argv, *status = result['ok']
        assert argv[0] in (ZFS, ZPOOL) if argv else status[0] in (0, 1), (command, result)


def test_the_argv_is_the_command_split_without_a_shell():
    argv = plan("zfs send -I 'tank/nomad/csi/v1'@'autosnap_a_hourly' 'tank/nomad/csi/v1'@'autosnap_b_hourly'")[0]
    assert argv == [
        ZFS,
        'send',
        '-I',
        'tank/nomad/csi/v1@autosnap_a_hourly',
        'tank/nomad/csi/v1@autosnap_b_hourly',
    ]
    argv = plan("zfs get -Hpd 1 -t snapshot guid,creation 'tank/nomad/volumes/ns/v'")[0]
    assert argv == [
        ZFS,
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
    assert plan('command -v lzop') == (None, 1)
    assert plan('exit') == (None, 0) == plan('echo -n')


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
        ('zfs get guid tank', 'outside the replicated parents'),
        # A property whose name puts `zfs send` on the command line: sanoid deferred pruning while it ran unread.
        ('zfs get all tank/nomad/csi/v1', 'zfs get takes only'),
        ('zfs get -r zfssend:x tank/nomad/csi/v1', 'zfs get takes only'),
        ('zfs get -o value,zfsrecv guid tank/nomad/csi/v1', 'zfs get -o takes only'),
        ('zfs list -r -o name,zfsreceive:x tank/nomad/csi', 'zfs list -o takes only'),
        ('zfs list -r -s zfssend:x tank/nomad/csi', 'zfs list -s takes only'),
        ('zfs list -r -t zfssend tank/nomad/csi', 'zfs list -t takes only'),
        ('zfs list -d zfssend tank/nomad/csi', 'is not a depth'),
        ('zfs bookmark tank/nomad/csi/v1@s tank/other#b', 'outside the replicated parents'),
        ('zfs hold keep tank/nomad/csi/v1@s', 'only zfs list, get, send and bookmark'),
        ('zfs release keep tank/nomad/csi/v1@s', 'only zfs list, get, send and bookmark'),
        ('zpool get all tank', 'only zpool get of a feature'),
        ('zpool get -H feature@x other', 'only zpool get of a feature'),
        ('zpool destroy tank', 'only zfs list'),
        ("zfs get -H name 'unbalanced", 'cannot split'),
        ('zfs list --recursive tank/nomad/csi', 'option --recursive not recognized'),
        ('zfs list -r -o', 'option -o requires argument'),
        ('zfs list -r: tank/nomad/csi', 'option -: not recognized'),
    ],
)
def test_everything_else_is_refused_with_the_reason(command, why):
    with pytest.raises(Refused, match=why.replace('(', r'\(')):
        plan(command)


@pytest.mark.parametrize('text', ['', 'parent=\n', 'parent=tank/../x\n', 'parent=tank/a b\n', 'parent=tank@s\n'])
def test_a_missing_or_bad_parent_line_names_the_role(text):
    [result] = perl(['read_parents', text])
    assert 'zfs_replication role' in result['refused'], result


def test_a_sends_life_is_the_conf_line_and_nothing_else():
    text = 'parent=tank/nomad/csi\nsend_max_seconds=%s\n'
    assert perl(['read_send_max', text % '3600'], ['read_send_max', text % '1']) == [{'ok': '3600'}, {'ok': '1'}]
    for bad in ('0', '-1', '1.5', '', '36OO', '1e3', '9999999999', '3600\nsend_max_seconds=1'):
        [result] = perl(['read_send_max', text % bad])
        assert 'send_max_seconds' in result['refused'] and 'zfs_replication role' in result['refused'], (bad, result)
    [result] = perl(['read_send_max', 'parent=tank/nomad/csi\n'])
    assert 'zfs_replication role' in result['refused'], result


@pytest.mark.parametrize(
    'words',
    [
        ['-Hpd', '1', '-t', 'snapshot', 'guid', 'x'],
        ['-d1', '-ro', 'name', '--', '-r', 'x'],
        ['-r', '-', '-H'],
        ['x', '-r'],
        ['-o'],
        ['-q', 'x'],
        ['--long', 'x'],
        ['-r:', 'x'],
        [],
    ],
)
def test_options_are_split_as_pythons_getopt_splits_them(words):
    """The forced command's getopt against Python's."""
    try:
        expected = [
            [list(o) for o in getopt.getopt(words, 'rHpd:o:t:s:S:')[0]],
            getopt.getopt(words, 'rHpd:o:t:s:S:')[1],
        ]
    except getopt.GetoptError:
        expected = 'refused'
    [result] = perl(['options', words, 'rHpd:o:t:s:S:'])
    assert result.get('ok', 'refused') == expected


def test_the_listing_of_the_pull_and_of_zfs_replication_info_is_allowed_under_a_parent_only():
    listing = 'zfs %s ' % ' '.join(LIST_ARGS)  # as ssh joins its argv
    assert plan(listing + 'tank/nomad/volumes')[0] == [ZFS, 'list', '-H', '-p'] + LIST_ARGS[2:] + ['tank/nomad/volumes']
    with pytest.raises(Refused, match='outside the replicated parents'):
        plan(listing + 'tank')


def _outcome(function, *args):
    try:
        return function(*args)
    except ValueError:
        return 'refused'


def _random_texts(alphabet, count, longest):
    chooser = random.Random(37)
    texts = []
    for unused in range(count):
        texts.append(''.join(chooser.choice(alphabet) for unused in range(chooser.randint(0, longest))))
    return texts


def test_commands_are_split_as_shlex_splits_them():
    """shlex costs the forced command an import of re at every start; its own splitter must agree with it on
    every command syncoid sent and on quotes, escapes and blanks in any order."""
    texts = CAPTURED + _random_texts(['a', ' ', '\t', '\n', "'", '"', '\\', '@', ';', '$'], 20000, 10)
    got = [r.get('ok', 'refused') for r in perl(*[['split', t] for t in texts])]
    assert got == [_outcome(shlex.split, t) for t in texts]


def test_names_are_checked_as_the_regular_expression_of_a_dataset_name_checks_them():
    component = r'[A-Za-z0-9_.:-]+'
    pattern = re.compile(r'(%s(?:/%s)*)([@#]%s)?' % (component, component, component))

    def by_regex(name):
        match = pattern.fullmatch(name)
        if not match or any(part in ('.', '..') for part in re.split('[/@#]', name)):
            return None
        return match.group(1), match.group(2) or ''

    names = _random_texts(['a', '/', '@', '#', '.', '-', ':', '_', 'Z', '9', ' ', '!'], 20000, 9)
    got = [r['ok'] and tuple(r['ok']) for r in perl(*[['name', n] for n in names])]
    assert got == [by_regex(n) for n in names]
