"""The zfs-generic-iscsi driver beside the stack's NFS one, as test_iscsi_target.py and the fio benchmark set it up:
the storage_host role's second instance (service user csi-iscsi, parent tank/nomad/iscsi) and the iscsi_initiator
role on the same VM (iscsi_host.yml), then the pack's plugin under docker with its own plugin id."""

import contextlib

import yaml
from stack_layout import REPO, STACK

from zfsvm_client import playbook_said

# The storage_host role's variables for the instance, which Molecule's storage_host converge plays too.
STORAGE = yaml.safe_load((STACK / 'iscsi_storage.yml').read_text())
USER = STORAGE['storage_host_user']
PARENT = STORAGE['nomad_zfs_csi_storage']['parent']
BASENAME = STORAGE['nomad_zfs_csi_storage']['iscsi_basename']
SECRET = 'chap-S3cret.4242'
# The node's half of CHAP, which the iscsi_initiator role sets on each node: the defaults of every node record that
# iscsiadm makes. (democratic-csi v1.9.4 prints each iscsiadm command it runs, so a pair in a volume's secrets
# (node-db.node.session.auth.*) would be in the node plugin's log at every stage.)
ISCSID_CONF = '/etc/iscsi/iscsid.conf'
INITIATOR = {'iscsi_initiator_chap_username': 'nomad', 'iscsi_initiator_chap_password': SECRET}
PLAYBOOK = STACK / 'iscsi_host.yml'
CONFIGFS = '/sys/kernel/config/target'
PLUGIN = 'zfs-iscsi'
JOBS = (PLUGIN + '-controller', PLUGIN + '-node')
VARS = REPO / 'packs' / 'zfs_csi' / '.ci' / 'vars-zfs-generic-iscsi-docker-local-stack.hcl'

# democratic-csi v1.9.4's createShare and deleteShare scripts (controller-zfs-generic), with the tpg attributes
# and CHAP a production configuration sets, as targetCliCommand sends them.
CREATE = """# create target
cd /iscsi
create {iqn}

# setup tpg
cd /iscsi/{iqn}/tpg1

set attribute authentication=1
set attribute generate_node_acls=1
set attribute cache_dynamic_acls=1
set attribute demo_mode_write_protect=0
set auth userid=nomad
set auth password={secret}


# create extent
cd /backstores/block
create {name} /dev/zvol/{parent}/{volume}
cd /backstores/block/{name}


# add extent to target/tpg
cd /iscsi/{iqn}/tpg1/luns
create /backstores/block/{name}"""
DELETE = """# delete target
cd /iscsi
delete {iqn}

# delete extent
cd /backstores/block
delete {name}"""


def script(template, volume, **names):
    """One of them for a zvol of the parent (names: other values, for a forged one)."""
    name = volume.lower()
    fields = dict(iqn=BASENAME + ':' + name, name=name, parent=PARENT, volume=volume, secret=SECRET)
    return template.format(**dict(fields, **names))


def targetcli_pipe(text):
    """What democratic-csi's targetCliCommand runs (sudoEnabled) inside sh -c's single quotes: the script in double
    quotes, piped into sudo targetcli."""
    return 'echo "%s" | sudo targetcli' % text


def democratic_csi(vm, text):
    """democratic-csi's targetcli call over SSH as the service user."""
    return vm.sh("sh -c '%s'" % targetcli_pipe(text), user=USER, check=False)


@contextlib.contextmanager
def host_undone_after(vm):
    """The VM's own iscsid.conf kept aside; afterwards what the iSCSI instance made goes (the stack's NFS storage
    keeps running) and iscsid.conf is put back."""
    vm.sh('cp -p {0} {0}.orig'.format(ISCSID_CONF))
    try:
        yield
    finally:
        vm.sh('targetcli clearconfig confirm=True >/dev/null; targetcli saveconfig >/dev/null', check=False)
        vm.zfs('destroy', '-r', PARENT, check=False)
        vm.zfs('destroy', '-r', PARENT + '-snapshots', check=False)
        vm.sh(
            'pkill -KILL -u {0}; sleep 1; userdel -r {0}; '
            'rm -f /etc/sudoers.d/nomad-zfs-csi-{0} /etc/nomad-zfs-csi/storage/{0}.conf; '
            'rm -rf /usr/local/libexec/nomad-zfs-csi/sudo-bin; mv {1}.orig {1}'.format(USER, ISCSID_CONF),
            check=False,
        )


@contextlib.contextmanager
def driver(stack, vm):
    """The storage instance and initiator as iscsi_host.yml makes them (whose checks are test_iscsi_target.py's),
    then the plugin; all gone afterwards."""
    with host_undone_after(vm):
        prepared = stack.playbook(PLAYBOOK, extra=dict(STORAGE, **INITIATOR))
        assert prepared.returncode == 0, playbook_said(prepared)
        with plugin(stack):
            yield


def plugin(stack):
    """The pack's plugin under docker (stack.pack_plugin), the key and the CHAP pair in the controller's variable
    only: the node plugin logs in with the client's iscsid.conf and reaches the storage host by no key."""
    key = open(stack.env['ZFSVM_KEY']).read()
    chap = {'iscsi_chap_userid': 'nomad', 'iscsi_chap_password': SECRET}
    secrets = {JOBS[0]: dict(chap, ssh_private_key=key)}
    return stack.pack_plugin(VARS, PLUGIN, JOBS, secrets=secrets)


def targets(vm):
    """The kernel's iSCSI targets and block backstores, as configfs holds them."""
    return vm.sh(
        'cd %s 2>/dev/null && ls -d iscsi/iqn.* core/iblock_*/*/ 2>/dev/null | sort; '
        'cat core/iblock_*/*/udev_path 2>/dev/null || true' % CONFIGFS
    ).stdout


def sessions(vm):
    """The node's iSCSI sessions (iscsiadm exits 21 when there are none)."""
    return vm.sh('iscsiadm -m session 2>/dev/null || true').stdout.strip()


def logs_with_the_secret(stack, vm):
    """The VM's journal of the last quarter hour and the plugin's logs, those in which the CHAP secret is."""
    logs = {'journal': vm.sh('journalctl --since -15min -o cat').stdout}
    for job in JOBS:
        alloc = stack.running_alloc(job)
        logs[job] = stack.nomad('alloc', 'logs', '-stderr', alloc).stdout + stack.nomad('alloc', 'logs', alloc).stdout
    return [name for name, log in logs.items() if SECRET in log]
