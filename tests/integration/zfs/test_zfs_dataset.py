"""zfs_dataset against real OpenZFS in the VM."""


def test_create_then_idempotent_rerun_costs_one_zfs_process(vm, run_module, base):
    args = {'name': base + '/ds', 'properties': {'quota': '10G', 'compress': 'lz4', 'atime': False, 'recsize': '128K'}}
    first = run_module('zfs_dataset', args)
    assert first['changed'], first
    props = first['properties']
    assert props['quota'] == {'value': str(10 * 1024**3), 'source': 'local'}
    assert props['compression']['value'] == 'lz4' and props['atime']['value'] == 'off'

    # The same sizes written differently are the same value: no spurious zfs set.
    args['properties'].update(quota='10GiB', recsize=131072)
    second = run_module('zfs_dataset', args)
    assert not second['changed'], second
    assert len(second.zfs_calls) == 1, second.zfs_calls
    assert second.zfs_calls[0].startswith('get -Hp -o name,property,value,source all ')


def test_changes_are_batched_into_one_zfs_set(vm, run_module, base):
    name = base + '/ds'
    run_module('zfs_dataset', {'name': name, 'properties': {'quota': '1G'}})
    result = run_module(
        'zfs_dataset',
        {'name': name, 'properties': {'quota': '2G', 'compression': 'zstd', 'com.example:team': 'storage'}},
    )
    assert result['changed']
    writes = [c for c in result.zfs_calls if not c.startswith('get ')]
    assert writes == ['set com.example:team=storage compression=zstd quota=%d %s' % (2 * 1024**3, name)]
    assert vm.zfs('get', '-Hp', '-o', 'value,source', 'quota', name).stdout.split() == [str(2 * 1024**3), 'local']


def test_inherited_value_is_not_counted_as_set(vm, run_module, base):
    vm.zfs('set', 'compression=lz4', base)
    vm.zfs('create', base + '/child')
    result = run_module('zfs_dataset', {'name': base + '/child', 'properties': {'compression': 'lz4'}})
    assert result['changed'], 'an inherited lz4 is not a local lz4'
    assert vm.zfs('get', '-H', '-o', 'source', 'compression', base + '/child').stdout.strip() == 'local'


def test_check_mode_changes_nothing(vm, run_module, base):
    before = vm.state()
    create = run_module('zfs_dataset', {'name': base + '/new', 'properties': {'quota': '1G'}}, check=True)
    assert create['changed'] and create['properties']['quota'] == {'value': str(1024**3), 'source': 'local'}
    modify = run_module('zfs_dataset', {'name': base, 'properties': {'quota': '5G', 'atime': 'off'}}, check=True)
    assert modify['changed']
    destroy = run_module('zfs_dataset', {'name': base, 'state': 'absent'}, check=True)
    assert destroy['changed']
    assert vm.state() == before
    assert [
        c for c in create.zfs_calls + modify.zfs_calls + destroy.zfs_calls if c.split()[0] not in ('get', 'list')
    ] == []


def test_diff_shows_before_and_after(vm, run_module, base):
    name = base + '/ds'
    run_module('zfs_dataset', {'name': name, 'properties': {'quota': '1G'}})
    result = run_module('zfs_dataset', {'name': name, 'properties': {'quota': '2G'}}, diff=True)
    assert result['changed']
    assert '--- before' in result.output and '+++ after' in result.output
    assert '-        "quota": "1073741824"' in result.output
    assert '+        "quota": "2147483648"' in result.output


def test_inherit_returns_property_to_inherited(vm, run_module, base):
    name = base + '/ds'
    vm.zfs('set', 'compression=lz4', base)
    run_module('zfs_dataset', {'name': name, 'properties': {'compression': 'zstd', 'atime': 'off'}})
    result = run_module('zfs_dataset', {'name': name, 'inherit': ['compress', 'atime']})
    assert result['changed']
    assert result['properties']['compression'] == {'value': 'lz4', 'source': 'inherited', 'inherited_from': base}
    assert vm.zfs('get', '-H', '-o', 'source', 'atime', name).stdout.strip() == 'default'
    again = run_module('zfs_dataset', {'name': name, 'inherit': ['compress', 'atime']})
    assert not again['changed'] and len(again.zfs_calls) == 1


def test_volume_with_4k_blocks_is_idempotent_and_creation_only_mismatch_fails(vm, run_module, base):
    name = base + '/vol'
    args = {'name': name, 'type': 'volume', 'properties': {'volsize': '64M', 'volblocksize': '4k'}}
    assert run_module('zfs_dataset', args)['changed']
    assert vm.zfs('get', '-Hp', '-o', 'value', 'volblocksize', name).stdout.strip() == '4096'
    assert not run_module('zfs_dataset', args)['changed']

    before = vm.state(base)
    args['properties']['volblocksize'] = '8k'
    result = run_module('zfs_dataset', args)
    assert result.failed
    assert 'volblocksize cannot change after creation' in result['msg']
    assert 'volblocksize is 4096, wanted 8192' in result['msg']
    assert vm.state(base) == before


def test_type_mismatch_fails(vm, run_module, base):
    result = run_module('zfs_dataset', {'name': base, 'type': 'volume', 'properties': {'volsize': '1G'}})
    assert result.failed and 'is a filesystem, not a volume' in result['msg']


def test_absent_refuses_children_and_snapshots_unless_recursive(vm, run_module, base):
    parent = base + '/p'
    vm.zfs('create', parent)
    vm.zfs('create', parent + '/kid')
    vm.zfs('snapshot', parent + '@s1')
    refused = run_module('zfs_dataset', {'name': parent, 'state': 'absent'})
    assert refused.failed
    assert '1 child dataset(s) and 1 snapshot(s)' in refused['msg'] and 'recursive: true' in refused['msg']
    assert vm.zfs('list', '-H', '-o', 'name', parent + '/kid').returncode == 0

    done = run_module('zfs_dataset', {'name': parent, 'state': 'absent', 'recursive': True})
    assert done['changed'] and done['commands'] == [['destroy', '-r', parent]]
    assert vm.zfs('list', parent, check=False).returncode != 0
    assert not any('-R' in c.split() for c in done.zfs_calls)
    again = run_module('zfs_dataset', {'name': parent, 'state': 'absent'})
    assert not again['changed']


def test_absent_never_destroys_clones_outside(vm, run_module, base):
    vm.zfs('create', base + '/src')
    vm.zfs('snapshot', base + '/src@s')
    vm.zfs('clone', base + '/src@s', base + '/outside-clone')
    result = run_module('zfs_dataset', {'name': base + '/src', 'state': 'absent', 'recursive': True})
    assert result.failed and base + '/outside-clone' in result['msg']
    assert vm.zfs('list', base + '/outside-clone', check=False).returncode == 0
    assert vm.zfs('list', base + '/src@s', check=False).returncode == 0


def test_parent_guard(vm, run_module, base):
    guard = base + '/guarded'
    vm.zfs('create', guard)
    inside = run_module('zfs_dataset', {'name': guard + '/ok', 'parent_guard': guard})
    assert inside['changed']
    refused = run_module('zfs_dataset', {'name': guard, 'state': 'absent', 'recursive': True, 'parent_guard': guard})
    assert refused.failed and 'outside parent_guard' in refused['msg']
    assert vm.zfs('list', guard + '/ok', check=False).returncode == 0


def test_shell_metacharacters_are_stored_literally(vm, run_module, base):
    value = 'x; touch /tmp/pwned $(touch /tmp/pwned2) `id` | & >'
    vm.sh('rm -f /tmp/pwned /tmp/pwned2')
    result = run_module('zfs_dataset', {'name': base, 'properties': {'com.example:note': value}})
    assert result['changed']
    assert vm.zfs('get', '-H', '-o', 'value', 'com.example:note', base).stdout.rstrip('\n') == value
    assert vm.sh('ls /tmp/pwned /tmp/pwned2', check=False).returncode != 0
