"""The zfs_replication role's scheduled snapshots: the real sanoid, run by its own systemd units in the VM, on a
parent with two volumes, one of them created with com.sun:auto-snapshot=false."""

import pytest

from zfsvm_client import changed

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

POLICY = {'frequently': 0, 'hourly': 2, 'daily': 1, 'monthly': 1}
CONF = '/etc/sanoid/sanoid.conf'


@pytest.fixture
def parent(vm):
    """tank/it-snap with volume a and volume b (com.sun:auto-snapshot=false); afterwards no policy, no timer and
    no datasets, so that sanoid takes nothing during later tests."""
    name = vm.pool + '/it-snap'

    def clean():
        vm.sh('systemctl disable --now sanoid.timer; rm -f %s' % CONF)
        vm.zfs('destroy', '-r', name, check=False)

    clean()
    vm.zfs('create', '-p', name + '/a')
    vm.zfs('create', '-o', 'com.sun:auto-snapshot=false', name + '/b')
    yield name
    clean()


def snapshots(vm, name):
    listed = vm.zfs('list', '-H', '-r', '-t', 'snapshot', '-o', 'name', name).stdout.split()
    return sorted(s.split('@')[0] + '@' + s.split('_')[-1] for s in listed)


def test_check_mode_then_snapshots_by_sanoids_own_units_then_nothing_to_do(vm, parent, play):
    variables = {'zfs_replication_snapshots': [dict(POLICY, parent=parent)]}
    checked = play(variables, '--check', '--diff')
    assert changed(checked)['zfsvm'] > 0, checked.stdout[-3000:]
    assert vm.sh('test -e %s' % CONF, check=False).returncode != 0  # check mode wrote nothing
    # A parent that a play before this one would make (site.yml's on a fresh host) is named, not fatal, in check mode.
    later = {'zfs_replication_snapshots': [dict(POLICY, parent=parent), {'parent': parent + '/later'}]}
    checked = play(later, '--check')
    assert changed(checked)['zfsvm'] > 0 and '%s/later does not exist yet on zfsvm' % parent in checked.stdout

    assert changed(play(variables))['zfsvm'] > 0
    assert vm.sh('systemctl is-enabled sanoid.timer; systemctl is-active sanoid.timer').stdout.split() == [
        'enabled',
        'active',
    ]
    # What the timer starts: sanoid takes what is due, then sanoid-prune.service prunes.
    vm.sh('systemctl start sanoid.service')
    # One of each kind the policy keeps, on volume a only: not b, not the parent, and no frequent ones.
    assert snapshots(vm, parent) == [parent + '/a@' + kind for kind in ('daily', 'hourly', 'monthly')]
    assert 'pre_snapshot_script failed' in vm.sh('journalctl -u sanoid.service -b --no-pager').stdout

    assert changed(play(variables)) == {'zfsvm': 0}
    # A volume made after the role ran is found at the next run.
    vm.zfs('create', parent + '/c')
    vm.sh('systemctl start sanoid.service')
    assert [s for s in snapshots(vm, parent) if '/c@' in s] == [
        parent + '/c@' + k for k in ('daily', 'hourly', 'monthly')
    ]


@pytest.mark.parametrize(
    ('snapshots_var', 'message'),
    [
        ([{'parent': 'tank/it-snap/missing'}], 'tank/it-snap/missing does not exist on zfsvm'),
        ([{'parent': 'tank/it-snap', 'hourly': -1}], 'zfs_replication_snapshots has a negative hourly'),
        ([{'hourly': 3}], 'parent'),
    ],
    ids=['missing-parent', 'negative-count', 'no-parent'],
)
def test_bad_input_names_the_field_and_changes_nothing(vm, parent, play, snapshots_var, message):
    ran = play({'zfs_replication_snapshots': snapshots_var})
    assert ran.returncode != 0 and message in ran.stdout, ran.stdout[-3000:]
    assert 'changed=0' in ran.stdout
    assert vm.sh('test -e %s' % CONF, check=False).returncode != 0
