"""zfs_permissions: its desired grants (descendent_permissions adds to the descendents only), and main() with a
fake zfs that answers real `zfs allow` output."""

import json

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_allow import empty_grants, parse_allow, plan
from ansible_collections.nomad_zfs.csi.plugins.modules import zfs_permissions
from ansible_collections.nomad_zfs.csi.plugins.modules.zfs_permissions import desired_grants
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_zfs import CAPTURED_ALLOW, FakeZfs

# A parent delegated before destroy moved below it: everything at local+descendent.
BEFORE = """---- Permissions on tank/nomad/csi -----------------------------------
Local+Descendent permissions:
\tuser csi create,destroy,mount,snapshot
"""


class _Module(object):
    def __init__(self, **params):
        self.params = dict(
            users=['csi'],
            groups=[],
            everyone=False,
            permissions=[],
            descendent_permissions=[],
            scope='both',
            create_time=[],
            sets={},
            state='exact',
        )
        self.params.update(params)


def test_descendent_permissions_are_granted_below_the_dataset_only():
    module = _Module(permissions=['create', 'mount', 'snapshot'], descendent_permissions=['destroy'])
    held = desired_grants(module, empty_grants())['principals'][('user', 'csi')]
    assert held == {'local': {'create', 'mount', 'snapshot'}, 'descendent': {'create', 'destroy', 'mount', 'snapshot'}}


def test_moving_destroy_below_the_parent_takes_it_off_the_parent_alone():
    current = parse_allow(BEFORE)['tank/nomad/csi']
    module = _Module(permissions=['create', 'mount', 'snapshot'], descendent_permissions=['destroy'])
    assert plan(current, desired_grants(module, current), 'exact', True) == [['unallow', '-u', 'csi', '-l', 'destroy']]


NAME = 'tank/fixture/csi'


@pytest.fixture
def zfs(monkeypatch):
    fake = FakeZfs('tank', 'tank/fixture', NAME).install(monkeypatch)
    fake.grants[NAME] = CAPTURED_ALLOW
    return fake


def test_check_mode_predicts_what_a_run_does_and_writes_nothing(run_main, zfs):
    args = {'name': NAME, 'users': ['root'], 'permissions': ['create', 'destroy', 'mount', 'snapshot']}
    checked = run_main(zfs_permissions, args, check=True, diff=True)
    assert checked['changed'] and zfs.writes() == []
    assert checked['commands'] == [['allow', '-u', 'root', 'snapshot', NAME]]
    assert checked['diff']['after']['principals']['user root']['local'] == [
        'create',
        'destroy',
        'mount',
        'refquota',
        'snapshot',
    ]
    assert checked['inherited'][NAME.rsplit('/', 1)[0]]['principals'] == {
        'user root': {'local': ['snapshot'], 'descendent': ['snapshot']}
    }
    applied = run_main(zfs_permissions, args)
    assert zfs.writes() == checked['commands'] == applied['commands']


def test_what_is_held_already_costs_one_zfs_process(run_main, zfs):
    result = run_main(zfs_permissions, {'name': NAME, 'users': ['root'], 'permissions': ['create', 'mount']})
    assert result['changed'] is False and zfs.commands == [['allow', NAME]]


@pytest.mark.parametrize(
    'args, message',
    [
        (
            {'name': NAME, 'users': ['no-such-user-4242'], 'permissions': ['create']},
            "users: 'no-such-user-4242' does not exist on this host",
        ),
        ({'name': 'tank', 'users': ['root'], 'permissions': ['create']}, 'is a pool root'),
        ({'name': NAME, 'users': ['root'], 'permissions': ['create;rm']}, 'permissions: '),
        ({'name': NAME, 'permissions': ['create']}, 'need users, groups or everyone'),
        (
            {'name': NAME, 'users': ['root'], 'permissions': ['create'], 'keep_users': ['root']},
            'keep_users: root is also in users',
        ),
    ],
)
def test_bad_input_fails_before_any_zfs_process(run_main, zfs, args, message):
    result = run_main(zfs_permissions, args)
    assert result['failed'] and message in result['msg'], result
    assert zfs.commands == []


def test_a_missing_dataset_or_set_is_named_and_nothing_is_written(run_main, zfs):
    missing = run_main(zfs_permissions, {'name': 'tank/nope', 'users': ['root'], 'permissions': ['create']})
    assert missing['failed'] and "dataset 'tank/nope' does not exist; create it first" in missing['msg']
    unknown = run_main(zfs_permissions, {'name': NAME, 'users': ['root'], 'permissions': ['@nope']})
    assert unknown['failed'] and 'set @nope is not defined on %s' % NAME in unknown['msg']
    assert zfs.writes() == []


def test_check_mode_predicts_for_a_user_and_dataset_that_earlier_tasks_would_make(run_main, zfs):
    args = {'name': 'tank/new', 'users': ['no-such-user-4242'], 'permissions': ['create', 'mount']}
    checked = run_main(zfs_permissions, args, check=True)
    assert checked['changed'] and checked['commands'] == [
        ['allow', '-u', 'no-such-user-4242', 'create,mount', 'tank/new']
    ]
    warned = json.dumps(checked['warnings'])
    assert "'no-such-user-4242' does not exist" in warned and "dataset 'tank/new' does not exist" in warned
    assert zfs.writes() == []


def test_exact_for_all_leaves_a_kept_user_as_it_is(run_main, zfs):
    """The csi user's grants made exact on the parent, everything else pruned, root's (another role's) kept."""
    args = {'name': NAME, 'users': ['nobody'], 'permissions': ['create'], 'state': 'exact', 'exact_for': 'all'}
    result = run_main(zfs_permissions, dict(args, keep_users=['root']), check=True)
    assert result['changed'] and not [cmd for cmd in result['commands'] if cmd[1:3] == ['-u', 'root']], result
    assert result['permissions']['principals']['user root'] == {
        'local': ['create', 'destroy', 'mount', 'refquota'],
        'descendent': ['create', 'destroy', 'mount'],
    }
