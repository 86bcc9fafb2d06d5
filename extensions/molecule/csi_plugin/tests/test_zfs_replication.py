"""Verify the zfs_replication role after site.yml (inventories/local/group_vars/zfs_replication.yml): the VM is a
primary, whose volumes sanoid snapshots and whose key serves only the forced command, and its own standby, whose
pulls land as zfs-replica in an inert replica parent on pool backup."""

import os

import pytest
import testinfra

PARENTS = ('tank/nomad/csi', 'tank/nomad/volumes')
USER = 'zfs-replica'
REPLICA_PARENT = 'backup/replica'
# Bound to the standby's address too: the local inventory's standby host, zfsvm, at its ansible_host.
FORCED = (
    'restrict,from="127.0.0.1",command="/usr/bin/perl -T ' + '/usr/local/libexec/nomad-zfs-csi/zfs-replication-source" '
)
PULLS = ['zfs-replication-pull@backup_replica_127.0.0.1_%s' % parent.replace('/', '_') for parent in PARENTS]
# What the pulls pass to ssh (roles/zfs_replication/templates/zfs-replication-pull@.service.j2).
SSH = (
    'runuser -u zfs-replica -- ssh -i /var/lib/zfs-replica/.ssh/id_ed25519 -o BatchMode=yes'
    ' -o StrictHostKeyChecking=yes -o UserKnownHostsFile=/etc/nomad-zfs-csi/replication-known_hosts'
    ' zfs-replica@127.0.0.1 '
)


@pytest.fixture(scope='module')
def zfsvm():
    return testinfra.get_host('ansible://zfsvm', ansible_inventory=os.environ['MOLECULE_INVENTORY_FILE'])


def local_grants(zfsvm, dataset):
    """The `user` lines of the dataset's own section of zfs allow, as {user: permissions}."""
    own = zfsvm.check_output('/usr/sbin/zfs allow %s', dataset).split('---- Permissions on ')[1]
    return dict(line.split()[1:3] for line in own.splitlines() if line.strip().startswith('user '))


def section(conf, name):
    return conf.split('[%s]' % name, 1)[1].split('\n[', 1)[0]


def test_sanoid_runs_on_its_timer_with_a_section_per_parent_and_per_replica(zfsvm):
    timer = zfsvm.service('sanoid.timer')
    assert timer.is_enabled and timer.is_running
    conf = zfsvm.file('/etc/sanoid/sanoid.conf').content_string
    for parent in PARENTS:
        snapshotted, pruned = section(conf, parent), section(conf, 'backup/replica/127.0.0.1/' + parent)
        assert 'use_template = nomad_zfs_csi\n' in snapshotted and 'process_children_only = yes' in snapshotted, conf
        assert 'use_template = nomad_zfs_csi_replica\n' in pruned and 'hourly = 24' in pruned, conf
    assert 'autosnap = no' in section(conf, 'template_nomad_zfs_csi_replica'), conf


def test_the_standbys_user_holds_only_what_sends_need_on_each_parent(zfsvm):
    for parent in PARENTS:
        grants = local_grants(zfsvm, parent)
        assert grants[USER] == 'bookmark,hold,send', grants
    # storage_host makes the CSI parent's grants exact, and keeps the replication user's (storage_host_keep_users).
    assert 'csi' in local_grants(zfsvm, PARENTS[0])


def test_every_authorised_key_runs_only_the_forced_command(zfsvm):
    keys = zfsvm.file('/var/lib/zfs-replica/.ssh/authorized_keys')
    assert keys.user == 'root' and zfsvm.file('/var/lib/zfs-replica/.ssh').user == 'root'
    lines = [line for line in keys.content_string.splitlines() if line and not line.startswith('#')]
    assert lines and all(line.startswith(FORCED) for line in lines), lines


def test_the_key_lists_a_parent_and_cannot_destroy_in_it(zfsvm):
    assert zfsvm.check_output(SSH + 'zfs list -H -o name %s', PARENTS[0]) == PARENTS[0]
    refused = zfsvm.run(SSH + 'zfs destroy -r %s/demo', PARENTS[0])
    assert refused.rc != 0 and 'zfs-replication-source: refused' in refused.stderr, refused.stderr
    assert zfsvm.run('/usr/sbin/zfs list %s/demo', PARENTS[0]).rc == 0


def test_the_replica_parent_is_inert_and_the_user_may_only_receive_under_it(zfsvm):
    values = zfsvm.check_output(
        '/usr/sbin/zfs get -H -o property,value,source mountpoint,readonly,setuid,devices,exec,volmode %s',
        REPLICA_PARENT,
    )
    assert [line.split('\t') for line in values.splitlines()] == [
        ['mountpoint', 'none', 'local'],
        ['readonly', 'on', 'local'],
        ['setuid', 'off', 'local'],
        ['devices', 'off', 'local'],
        ['exec', 'off', 'local'],
        ['volmode', 'none', 'local'],
    ]
    assert local_grants(zfsvm, REPLICA_PARENT) == {USER: 'create,mount,receive'}


def test_each_pull_runs_as_the_user_on_its_own_timer(zfsvm):
    for unit in PULLS:
        timer = zfsvm.service(unit + '.timer')
        assert timer.is_enabled and timer.is_running, unit
        assert zfsvm.check_output('systemctl show -p User --value %s.service', unit) == USER
    assert zfsvm.file('/var/lib/zfs-replica/.ssh/id_ed25519').mode == 0o600
