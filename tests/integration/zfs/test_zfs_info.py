"""zfs_info on real datasets."""


def test_reports_sources_snapshots_and_permissions(vm, run_module, base):
    vm.zfs('set', 'compression=lz4', base)
    vm.zfs('create', '-o', 'refquota=1G', base + '/a')
    vm.zfs('create', base + '/a/deep')
    vm.zfs('snapshot', base + '/a@s1')
    vm.zfs('allow', '-u', 'root', 'snapshot', base + '/a')
    result = run_module('zfs_info', {'name': base, 'permissions': True})
    names = [d['name'] for d in result['datasets']]
    assert names == [base, base + '/a', base + '/a/deep']
    a = result['datasets'][1]
    assert a['properties']['refquota'] == {'value': 1024**3, 'source': 'local'}
    assert a['properties']['compression'] == {'value': 'lz4', 'source': 'inherited', 'inherited_from': base}
    assert [s['name'] for s in a['snapshots']] == [base + '/a@s1']
    assert a['permissions']['principals']['user root']['local'] == ['snapshot']
    # One process for all properties, one `zfs allow` per dataset.
    assert len(result.zfs_calls) == 1 + 3 and result.zfs_calls[0].startswith('get ')


def test_depth_types_and_property_filter(vm, run_module, base):
    vm.zfs('create', '-p', base + '/a/deep')
    result = run_module(
        'zfs_info', {'name': base, 'depth': 1, 'types': ['filesystem'], 'properties': ['used', 'refquota']}
    )
    assert [d['name'] for d in result['datasets']] == [base, base + '/a']
    assert set(result['datasets'][0]['properties']) == {'used', 'refquota'}
    assert isinstance(result['datasets'][0]['properties']['used']['value'], int)
    assert result.zfs_calls == ['get -Hp -o name,property,value,source -t filesystem -d 1 refquota,type,used ' + base]


def test_missing_root(vm, run_module, base):
    result = run_module('zfs_info', {'name': base + '/none'})
    assert not result.failed and result['exists'] is False and result['datasets'] == []
