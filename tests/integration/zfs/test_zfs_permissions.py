"""zfs_permissions and real delegation on OpenZFS in the VM."""

import pytest


@pytest.fixture(scope='module')
def csi_user(vm):
    vm.sh('id csi >/dev/null 2>&1 || useradd -m -s /bin/sh csi; getent group csiops >/dev/null || groupadd csiops')
    vm.sh('mkdir -p ~csi/.ssh && cp /root/.ssh/authorized_keys ~csi/.ssh/ && chown -R csi: ~csi/.ssh')
    return 'csi'


def own_section(vm, name):
    """The dataset's own part of `zfs allow` output, without its header line."""
    out = vm.zfs('allow', name).stdout
    header = '---- Permissions on %s' % name
    if header not in out:
        return ''
    return out.split(header, 1)[1].split('\n', 1)[1].split('---- Permissions on')[0]


def test_present_is_idempotent_and_diffs(vm, run_module, base, csi_user):
    args = {'name': base, 'users': [csi_user], 'permissions': ['create', 'mount', 'snapshot']}
    first = run_module('zfs_permissions', args, diff=True)
    assert first['changed']
    assert '--- before' in first.output and '+        "user csi": {' in first.output
    assert first['permissions']['principals']['user csi'] == {
        'local': ['create', 'mount', 'snapshot'],
        'descendent': ['create', 'mount', 'snapshot'],
    }
    assert 'user csi create,mount,snapshot' in own_section(vm, base)
    second = run_module('zfs_permissions', args, diff=True)
    assert not second['changed'] and '--- before' not in second.output
    assert second.zfs_calls == ['allow ' + base]


def test_scopes_create_time_and_sets(vm, run_module, base, csi_user):
    result = run_module(
        'zfs_permissions',
        {
            'name': base,
            'users': [csi_user],
            'groups': ['csiops'],
            'permissions': ['@csi', 'create'],
            'scope': 'descendents',
            'create_time': ['destroy', 'snapshot'],
            'sets': {'@csi': ['clone', 'promote']},
        },
    )
    assert result['changed']
    section = own_section(vm, base)
    assert '@csi clone,promote' in section
    assert 'Create time permissions:\n\tdestroy,snapshot' in section
    descendent = section.split('Descendent permissions:\n')[1].split('Local')[0].splitlines()
    assert sorted(descendent) == ['\tgroup csiops @csi,create', '\tuser csi @csi,create']
    local = run_module(
        'zfs_permissions', {'name': base, 'users': [csi_user], 'permissions': ['@csi', 'create'], 'scope': 'local'}
    )
    assert local['changed'] and local['commands'] == [['allow', '-u', 'csi', '-l', '@csi,create', base]]
    assert 'Local+Descendent permissions:\n\tuser csi @csi,create' in own_section(vm, base)


def test_absent_removes_only_what_is_listed(vm, run_module, base, csi_user):
    vm.zfs('allow', '-u', csi_user, 'create,mount,snapshot', base)
    result = run_module(
        'zfs_permissions', {'name': base, 'users': [csi_user], 'permissions': ['snapshot'], 'state': 'absent'}
    )
    assert result['changed']
    assert 'user csi create,mount\n' in own_section(vm, base)
    everything = run_module('zfs_permissions', {'name': base, 'users': [csi_user], 'state': 'absent'})
    assert everything['changed'] and own_section(vm, base).strip() == ''
    again = run_module('zfs_permissions', {'name': base, 'users': [csi_user], 'state': 'absent'})
    assert not again['changed']


def test_exact_removes_unlisted_grants(vm, run_module, base, csi_user):
    vm.zfs('allow', '-u', csi_user, 'create,destroy,rename', base)
    vm.zfs('allow', '-g', 'csiops', 'snapshot', base)
    vm.zfs('allow', '-c', 'destroy', base)
    named = run_module(
        'zfs_permissions', {'name': base, 'users': [csi_user], 'permissions': ['create', 'mount'], 'state': 'exact'}
    )
    assert named['changed']
    section = own_section(vm, base)
    assert 'user csi create,mount\n' in section
    assert 'group csiops snapshot' in section, 'exact_for=named leaves other principals alone'
    assert 'destroy' in section.split('Create time permissions:')[1]
    vm.zfs('allow', '-u', 'nobody', 'send', base)  # another role's user, which keep_users leaves alone
    section = own_section(vm, base)

    everything = run_module(
        'zfs_permissions',
        {'name': base, 'users': [csi_user], 'permissions': ['create', 'mount'], 'state': 'exact', 'exact_for': 'all'},
        check=True,
    )
    assert everything['changed'] and own_section(vm, base) == section, 'check mode changed grants'
    assert list(everything['permissions']['principals']) == ['user csi']
    exact_all = {'name': base, 'users': [csi_user], 'permissions': ['create', 'mount'], 'state': 'exact'}
    exact_all.update(exact_for='all', keep_users=['nobody'])
    done = run_module('zfs_permissions', exact_all)
    assert done['changed']
    header, *grants = [line.strip() for line in own_section(vm, base).strip().splitlines()]
    # zfs allow prints principals in its own order (seen both ways in the VM), so compare them as a set
    assert (header, sorted(grants)) == ('Local+Descendent permissions:', ['user csi create,mount', 'user nobody send'])
    assert not run_module('zfs_permissions', exact_all)['changed']


def test_ancestor_grants_are_reported_not_merged(vm, run_module, base, csi_user):
    vm.zfs('create', base + '/child')
    vm.zfs('allow', '-u', csi_user, 'snapshot', base)
    result = run_module('zfs_permissions', {'name': base + '/child', 'users': [csi_user], 'permissions': ['create']})
    assert result['permissions']['principals'] == {'user csi': {'local': ['create'], 'descendent': ['create']}}
    assert result['inherited'][base]['principals']['user csi']['local'] == ['snapshot']


def test_delegated_user_creates_under_parent_only(vm, run_module, base, csi_user):
    run_module(
        'zfs_permissions',
        {'name': base, 'users': [csi_user], 'permissions': ['create', 'destroy', 'mount', 'snapshot']},
    )
    made = vm.sh('/usr/sbin/zfs create %s/by-csi' % base, user=csi_user, check=False)
    assert made.returncode in (0, 1), made.stderr
    assert vm.zfs('list', '-H', '-o', 'name', base + '/by-csi').stdout.strip() == base + '/by-csi'
    assert vm.sh('/usr/sbin/zfs snapshot %s/by-csi@s1' % base, user=csi_user, check=False).returncode == 0
    outside = vm.sh('/usr/sbin/zfs create %s/outside-%s' % (vm.pool, csi_user), user=csi_user, check=False)
    assert outside.returncode != 0 and 'permission denied' in outside.stderr
    assert vm.zfs('list', '%s/outside-%s' % (vm.pool, csi_user), check=False).returncode != 0
