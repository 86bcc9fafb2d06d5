"""Hosts of their own inside the ZFS VM (tests/zfsvm/hosts.sh makes them): each with its own address, host name,
sshd and host key, /etc and systemd, reached from this host by SSH through the VM, as an inventory reaches its
hosts through a bastion. They share the VM's kernel and so its pools: each host works under a parent of its own.
A dataset that a host mounted is mounted in that host alone, and only that host can unmount or destroy it.

The names are the example inventory's (inventories/example/hosts.yml), each with an address on a bridge that exists
only in the VM."""

import json
import shlex
import subprocess

from zfsvm_client import REPO

HOSTS_SH = REPO / 'tests' / 'zfsvm' / 'hosts.sh'
ADDRESSES = {
    'nomad.example.internal': '10.99.0.2',
    'storage-1.example.internal': '10.99.0.11',
    'backup-1.example.internal': '10.99.0.12',
    'client-1.example.internal': '10.99.0.21',
    'client-2.example.internal': '10.99.0.22',
}
STORAGE_1, BACKUP_1 = 'storage-1.example.internal', 'backup-1.example.internal'
CLIENT_1, CLIENT_2 = 'client-1.example.internal', 'client-2.example.internal'
# The VM on the hosts' bridge: what they see of this host's SSH, which comes through it.
JUMP = '10.99.0.1'
SCRIPT = '/run/nzc-hosts.sh'


def ssh_reuse(vm):
    """One SSH connection per host for the whole run, as the VM's commands share theirs; the path names the VM's
    port, since every VM's hosts have the same names (two test runs side by side would share masters)."""
    return ['-o', 'ControlMaster=auto', '-o', 'ControlPersist=300s', '-o', 'ControlPath=/tmp/nzc-ssh-%s-%%C' % vm.port]


def proxy_command(vm):
    """ssh's ProxyCommand to a host: through the VM's sshd (-W), over the connection to it that the VM's commands
    share. Its ControlPath's %C is the VM's, kept from the outer ssh's expansion."""
    argv = vm.ssh_argv()[:-1] + ['-W', '%h:%p', 'root@127.0.0.1']
    return ' '.join(shlex.quote(a) for a in argv).replace('%C', '%%C')


class Host:
    """One separate host: commands as root (or another user) over its own sshd."""

    def __init__(self, vm, name):
        self.vm, self.name, self.address = vm, name, ADDRESSES[name]

    def ssh_argv(self, user='root'):
        return (
            ['ssh', '-q', '-i', self.vm.key, '-o', 'BatchMode=yes', '-o', 'ProxyCommand=' + proxy_command(self.vm)]
            + ssh_reuse(self.vm)
            + ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '%s@%s' % (user, self.name)]
        )

    def sh(self, command, check=True, user='root', timeout=300, stdin=None):
        """command on the host, with stdin (text) as its standard input."""
        proc = subprocess.run(
            self.ssh_argv(user) + [command], input=stdin, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and proc.returncode != 0:
            raise AssertionError('%s: command failed (%s): %s\n%s' % (self.name, proc.returncode, command, proc.stderr))
        return proc

    def zfs(self, *args, check=True):
        return self.sh(' '.join(['/usr/sbin/zfs'] + [shlex.quote(a) for a in args]), check=check)

    def host_key(self):
        """Its SSH host key, as a primary's is pinned in a standby's known_hosts."""
        return self.sh('cat /etc/ssh/ssh_host_ed25519_key.pub').stdout.strip()


class SeparateHosts:
    """The VM's separate hosts: brought up on demand, and gone at the end."""

    def __init__(self, vm):
        self.vm = vm
        vm.sh("cat > %s <<'EOF'\n%s\nEOF" % (SCRIPT, HOSTS_SH.read_text()))

    def _script(self, *argv):
        return self.vm.sh(' '.join(['bash', SCRIPT] + [shlex.quote(a) for a in argv]), timeout=300)

    def up(self, *names):
        """The hosts named, booted if they are not up; each a Host."""
        self._script('up', *('%s=%s' % (name, ADDRESSES[name]) for name in names))
        return [Host(self.vm, name) for name in names]

    def down(self, *names):
        self._script('down', *(names or ADDRESSES))

    def cut(self, host):
        """The host's link to the others and to the VM down: nothing it sends arrives, and nothing reaches it."""
        self._script('cut', host.name)

    def mend(self, host):
        self._script('mend', host.name)

    def power_off(self, host):
        """The host's power cut: every process of it killed at once. Its root (/etc, its agent's state) stays."""
        self._script('off', host.name)

    def power_on(self, host):
        """The host booted again on the root it kept, until its sshd answers."""
        self._script('on', host.name)

    def connection_vars(self):
        """How Ansible reaches the hosts as the example inventory's are reached (user admin, who becomes root),
        through the VM as a bastion."""
        return {
            'ansible_user': 'admin',
            'ansible_become': True,
            'ansible_ssh_private_key_file': self.vm.key,
            'ansible_python_interpreter': '/usr/bin/python3',
            # Two handshakes on the emulated CPU, one of them with a host's sshd: more than the default 10 s when
            # other VMs share the cores (seen with three).
            'ansible_ssh_timeout': 60,
            'ansible_ssh_common_args': '-o ProxyCommand="%s"' % proxy_command(self.vm),
            # In place of ANSIBLE_SSH_ARGS (ansible_env), whose ControlPath would be the same for every VM's hosts.
            'ansible_ssh_args': ' '.join(
                ssh_reuse(self.vm) + ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null']
            ),
        }

    def inventory(self, path, groups):
        """An inventory of the hosts (connection_vars), as JSON, which Ansible's YAML inventory reads; groups maps
        each group to its hosts."""
        inventory = {'all': {'vars': self.connection_vars(), 'children': {}}}
        for group, hosts in groups.items():
            inventory['all']['children'][group] = {'hosts': {host.name: {} for host in hosts}}
        path.write_text(json.dumps(inventory, indent=1))
        return path
