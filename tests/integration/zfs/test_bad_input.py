"""Bad input fails with a message naming the field and the fix, and changes nothing on the host."""

import pytest

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


@pytest.mark.parametrize('module,args,message', [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_changes_nothing(vm, run_module, base, module, args, message):
    names = {'pool': vm.pool, 'base': base}
    before = vm.state()
    result = run_module(module, fill(args, **names))
    assert result.failed, result
    assert fill(message, **names) in result['msg']
    assert vm.state() == before
    assert [c for c in result.zfs_calls if c.split()[0] not in ('get', 'list', 'allow')] == []
    # Pure argument errors are caught before any zfs process runs.
    if 'name' in message[:6] or 'is not a size' in message or 'newline' in message:
        assert result.zfs_calls == []


def test_zfs_not_installed(vm, run_module, base):
    vm.sh('mv /usr/sbin/zfs /usr/sbin/zfs.off && mv /usr/local/sbin/zfs /usr/local/sbin/zfs.off')
    try:
        result = run_module('zfs_dataset', {'name': base})
    finally:
        vm.sh('mv /usr/sbin/zfs.off /usr/sbin/zfs && mv /usr/local/sbin/zfs.off /usr/local/sbin/zfs')
    assert result.failed and 'zfs was not found on the target host: install zfsutils-linux' in result['msg']
