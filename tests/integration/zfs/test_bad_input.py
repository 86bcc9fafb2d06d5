"""Bad input fails with a message naming the field and the fix, and changes nothing on the host."""

import json
import subprocess

import pytest

from zfsvm_client import BIN, ansible_env, mitogen_env, playbook_said

CASES = [
    ('double_slash', 'zfs_dataset', {'name': '{pool}//x'}, "name 'tank//x' has an empty component"),
    ('space', 'zfs_dataset', {'name': '{base}/a b'}, 'may only contain letters'),
    ('dotdot', 'zfs_dataset', {'name': '../'}, "must not start or end with '/'"),
    ('dotdot_component', 'zfs_dataset', {'name': '{base}/../x'}, "has a '..' component"),
    ('leading_slash', 'zfs_dataset', {'name': '/{base}/x'}, "must not start or end with '/'"),
    ('outside_guard', 'zfs_dataset', {'name': '{pool}/elsewhere', 'parent_guard': '{base}'}, 'outside parent_guard'),
    (
        'unknown_property',
        'zfs_dataset',
        {'name': '{base}/x', 'properties': {'compresion': 'lz4'}},
        "unknown ZFS property 'compresion'",
    ),
    (
        'size_12XB',
        'zfs_dataset',
        {'name': '{base}/x', 'properties': {'quota': '12XB'}},
        "property 'quota': '12XB' is not a size",
    ),
    (
        'size_negative',
        'zfs_dataset',
        {'name': '{base}/x', 'properties': {'quota': '-1G'}},
        "property 'quota': '-1G' is not a size",
    ),
    (
        'newline_value',
        'zfs_dataset',
        {'name': '{base}', 'properties': {'com.example:x': 'a\nb'}},
        'has a newline or NUL',
    ),
    ('read_only_property', 'zfs_dataset', {'name': '{base}', 'properties': {'used': '1G'}}, 'is read-only'),
    ('missing_pool', 'zfs_dataset', {'name': 'nopool/x'}, "pool 'nopool' does not exist"),
    (
        'missing_parent',
        'zfs_dataset',
        {'name': '{base}/a/b/c'},
        "parent '{base}/a/b' does not exist; create it first or set create_parents: true",
    ),
    ('volume_without_size', 'zfs_dataset', {'name': '{base}/v', 'type': 'volume'}, 'properties.volsize is required'),
    (
        'unknown_user',
        'zfs_permissions',
        {'name': '{base}', 'users': ['nosuchuser'], 'permissions': ['create']},
        "users: 'nosuchuser' does not exist on this host",
    ),
    (
        'unknown_group',
        'zfs_permissions',
        {'name': '{base}', 'groups': ['nosuchgroup'], 'permissions': ['create']},
        "groups: 'nosuchgroup' does not exist",
    ),
    (
        'unknown_permission',
        'zfs_permissions',
        {'name': '{base}', 'users': ['root'], 'permissions': ['crate']},
        "permissions: 'crate' is not a permission",
    ),
    (
        'undefined_set',
        'zfs_permissions',
        {'name': '{base}', 'users': ['root'], 'permissions': ['@nope']},
        'set @nope is not defined',
    ),
    (
        'pool_root',
        'zfs_permissions',
        {'name': '{pool}', 'users': ['root'], 'permissions': ['create']},
        'is a pool root',
    ),
    (
        'missing_dataset',
        'zfs_permissions',
        {'name': '{base}/none', 'users': ['root'], 'permissions': ['create']},
        'does not exist; create it first',
    ),
]


def fill(value, **names):
    if isinstance(value, dict):
        return dict((k, fill(v, **names)) for k, v in value.items())
    if isinstance(value, list):
        return [fill(v, **names) for v in value]
    return value.format(**names) if isinstance(value, str) else value


@pytest.fixture(scope='module')
def bad_input(vm, tmp_path_factory):
    """Every case, each a task of one play under mitogen (one Python in the guest, where a run per case paid a
    Python start and Ansible's imports, 16 s, each time), on a fresh dataset. Each task runs with NZC_CASE, which
    prefixes its zfs calls in the wrapper's log. The pool's state is read before and after the play."""
    names = {'pool': vm.pool, 'base': '%s/it/bad_input' % vm.pool}
    vm.zfs('destroy', '-r', names['base'], check=False)
    vm.zfs('create', '-p', names['base'])
    tree = tmp_path_factory.mktemp('bad_input')
    tasks = [
        {
            'name': case,
            'nomad_zfs.csi.' + module: fill(args, **names),
            'environment': {'NZC_CASE': case},
            'register': 'case_' + case,
            'ignore_errors': True,
        }
        for case, module, args, _message in CASES
    ]
    results = '{{ %s | to_json }}' % json.dumps(dict((c[0], '@@%s@@' % c[0]) for c in CASES)).replace(
        '"@@', 'case_'
    ).replace('@@"', '')
    tasks.append(
        {
            'name': 'Keep the results',
            'delegate_to': 'localhost',
            'ansible.builtin.copy': {'content': results, 'dest': str(tree / 'results.json'), 'mode': '0600'},
        }
    )
    (tree / 'play.yml').write_text(json.dumps([{'hosts': 'zfsvm', 'gather_facts': False, 'tasks': tasks}]))
    before, calls = vm.state(), len(vm.zfs_calls())
    try:
        run = subprocess.run(
            [str(BIN / 'ansible-playbook'), '-i', str(vm.inventory), str(tree / 'play.yml')],
            env=ansible_env(**mitogen_env()),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert run.returncode == 0, playbook_said(run)
        yield dict(
            names=names,
            results=json.loads((tree / 'results.json').read_text()),
            calls=vm.zfs_calls()[calls:],
            changed=vm.state() != before,
        )
    finally:
        vm.zfs('destroy', '-r', names['base'], check=False)


@pytest.mark.parametrize('case,module,args,message', CASES, ids=[c[0] for c in CASES])
def test_bad_input_changes_nothing(bad_input, case, module, args, message):
    result = bad_input['results'][case]
    assert result['failed'], result
    assert fill(message, **bad_input['names']) in result['msg']
    assert not bad_input['changed'], 'a case of the play changed the pool'
    prefix = case + ': '
    calls = [c[len(prefix) :] for c in bad_input['calls'] if c.startswith(prefix)]
    assert [c for c in calls if c.split()[0] not in ('get', 'list', 'allow')] == []
    # Pure argument errors are caught before any zfs process runs.
    if 'name' in message[:6] or 'is not a size' in message or 'newline' in message:
        assert calls == []


def test_each_cases_zfs_calls_are_told_apart(bad_input):
    """What makes the checks above able to fail: the calls of the cases that read are found under their prefix."""
    cases = set(c.split(': ', 1)[0] for c in bad_input['calls'] if ': ' in c)
    assert {'missing_parent', 'missing_dataset', 'undefined_set'} <= cases, bad_input['calls']


def test_zfs_not_installed(vm, run_module, base):
    vm.sh('mv /usr/sbin/zfs /usr/sbin/zfs.off && mv /usr/local/sbin/zfs /usr/local/sbin/zfs.off')
    try:
        result = run_module('zfs_dataset', {'name': base})
    finally:
        vm.sh('mv /usr/sbin/zfs.off /usr/sbin/zfs && mv /usr/local/sbin/zfs.off /usr/local/sbin/zfs')
    assert result.failed and 'zfs was not found on the target host: install zfsutils-linux' in result['msg']
