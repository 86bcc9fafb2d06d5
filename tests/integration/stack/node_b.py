"""A second Nomad client in the VM, node nzc-b, joined to the stack's server: its own ports, data dir, cgroup
parent, plugin directory and ZFS pool `nodeb` (a file), with the host_volume_plugin role run for it. Its plugin's
configuration sits beside its plugin file, so its volumes go under nodeb/nomad/volumes while the stack node's go
under tank/nomad/volumes."""

import contextlib
from urllib.parse import urlsplit

import pytest
from stack_layout import STACK

from zfsvm_client import NOMAD_EMULATED_CPU, changed, playbook_said, wait_until

UNIT = 'nzc-nomad-b'
NAME = 'nzc-b'
DATA_DIR = '/var/lib/nzc-nomad-b'
PLUGIN_DIR = DATA_DIR + '/host_volume_plugins'
POOL = 'nodeb'
HOST_VOLUMES = POOL + '/nomad/volumes'
IMAGE = '/var/tmp/nodeb.img'
CONFIG = """
name      = "%s"
data_dir  = "%s"
bind_addr = "127.0.0.1"
ports {
  http = 5656
  rpc  = 5657
  serf = 5658
}
advertise {
  http = "127.0.0.1:5656"
  rpc  = "127.0.0.1:5657"
  serf = "127.0.0.1:5658"
}
acl {
  enabled = true
}
client {
  enabled                = true
  servers                = ["127.0.0.1:%s"]
  cgroup_parent          = "nzc-b.slice"
  host_volume_plugin_dir = "%s"
  options = {
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
  # The stack agent's exec chroot tree, which its start built (scripts/nomad-dev.sh says why).
  chroot_env = {
    "/var/lib/nzc-chroot/bin"   = "/bin"
    "/var/lib/nzc-chroot/lib"   = "/lib"
    "/var/lib/nzc-chroot/lib64" = "/lib64"
    "/var/lib/nzc-chroot/etc"   = "/etc"
  }
}
"""


def server_rpc_port(vm):
    """The stack server's RPC port: the one after its HTTP port (scripts/nomad-dev.sh)."""
    return urlsplit(vm.nomad_addr).port + 1


def node_ready(stack):
    """Node nzc-b once ready; fails at once, with the agent's log, if the agent exited."""
    if stack.vm.sh('systemctl is-active -q %s' % UNIT, check=False).returncode != 0:
        pytest.fail(
            'the agent of node %s exited:\n%s'
            % (NAME, stack.vm.sh('journalctl -u %s --no-pager | tail -20' % UNIT).stdout)
        )
    return [n for n in stack.get('/v1/nodes') if n['Name'] == NAME and n['Status'] == 'ready']


def plugin_role(stack, **extra):
    """The host_volume_plugin role for node nzc-b: its agent, its unit and its pool."""
    variables = {
        'host_volume_plugin_nomad_token': stack.secret('host-volume-operator'),
        'host_volume_plugin_nomad_addr': 'http://127.0.0.1:5656',
        'host_volume_plugin_nomad_service': UNIT,
        'host_volume_plugin_parent': HOST_VOLUMES,
    }
    return stack.playbook(STACK / 'host_volume_plugin_only.yml', extra=dict(variables, **extra))


# Node B's agent as a unit of its own, from a runtime unit file (gone at the VM's next boot). Not a transient unit: the
# fence watchdog's unit names the agent's (Before=), which keeps a dead transient unit loaded, and systemd-run then
# cannot make it again.
RUNTIME_UNIT = '/run/systemd/system/%s.service' % UNIT
# With /bin in PATH, as scripts/nomad-dev.sh's agent.
AGENT_UNIT = (
    '[Service]\nEnvironment=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n'
    'ExecStart=/opt/nzc/bin/nomad agent -config /etc/nzc/nomad-b.hcl\n'
)


def start(vm):
    vm.sh("printf '%s' > %s && systemctl daemon-reload" % (AGENT_UNIT.replace('\n', '\\n'), RUNTIME_UNIT))
    vm.sh('systemctl reset-failed %s 2>/dev/null' % UNIT, check=False)
    vm.sh('systemctl start %s' % UNIT)


def task_pids(vm, alloc_id='*'):
    """The processes of node B's tasks, or of one allocation's. The exec driver runs each task in a scope of its
    own, <alloc>.<task>.scope under nomad.slice, outside the agent's unit and its cgroup parent; B's allocations are
    the ones in its data dir. A scope that ends while it is read has no processes left: the read of its vanished
    files is not an error."""
    return vm.sh(
        'for a in $(cd %s/alloc 2>/dev/null && ls -d %s); do find /sys/fs/cgroup -path "*/$a.*.scope/cgroup.procs" '
        '-exec cat {} + 2>/dev/null; done; true' % (DATA_DIR, alloc_id)
    ).stdout.split()


def crash(vm):
    """Node B's agent dies (SIGKILL); its tasks go on running, as a crashed client's do."""
    vm.sh('systemctl kill -s KILL %s' % UNIT, check=False)


def lose(vm):
    """Node B as a machine that is powered off leaves it: the agent and its tasks killed. Its pool and mounts stay."""
    crash(vm)
    vm.sh('kill -9 %s' % ' '.join(task_pids(vm)), check=False)
    assert task_pids(vm) == []


# Node B's agent cut off from the server, still running: what it sends to the server's RPC port is dropped. It
# matches the agent's sockets by the cgroup of its unit, so the stack's own agent is not cut off.
CUT_OFF = """table inet nzc_cut_off {
  chain out {
    type filter hook output priority 0;
    socket cgroupv2 level 2 "system.slice/%s.service" tcp dport %d drop
  }
}"""


def cut_off(vm):
    vm.sh('nft -f - <<"EOF"\n%s\nEOF' % (CUT_OFF % (UNIT, server_rpc_port(vm))))


def reconnect(vm):
    vm.sh('nft delete table inet nzc_cut_off', check=False)


def stop(vm):
    reconnect(vm)
    # And its fence watchdog, where a test turned it on (host_volume_plugin_fence_after), with the last contact it
    # kept.
    vm.sh(
        'systemctl stop %s nomad-zfs-csi-fence@%s 2>/dev/null; systemctl reset-failed %s 2>/dev/null; '
        'rm -f /etc/nomad-zfs-csi/fence/%s.* /run/nomad-zfs-csi-fence/%s.* /var/lib/nomad-zfs-csi-fence/%s.* %s; '
        'systemctl daemon-reload' % (UNIT, UNIT, UNIT, UNIT, UNIT, UNIT, RUNTIME_UNIT),
        check=False,
    )
    vm.sh(
        "awk -v d=%s/ 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount -l; "
        'rm -rf %s; zpool destroy -f %s; rm -f %s /etc/nzc/nomad-b.hcl' % (DATA_DIR, DATA_DIR, POOL, IMAGE),
        check=False,
    )


@contextlib.contextmanager
def node_b(stack, before_plugin=None, pool_size='512M', **role_vars):
    """Node nzc-b, ready and reporting the zfs-dataset plugin, with the role's variables role_vars and a pool of
    pool_size (a sparse file); yields its node.
    before_plugin() runs once pool nodeb exists, before the role. Afterwards the agent is stopped, its pool
    destroyed and the node purged from the server."""
    vm = stack.vm
    stop(vm)
    vm.sh('truncate -s %s %s && zpool create %s %s' % (pool_size, IMAGE, POOL, IMAGE))
    config = CONFIG % (NAME, DATA_DIR, server_rpc_port(vm), PLUGIN_DIR) + NOMAD_EMULATED_CPU.read_text()
    vm.sh('cat > /etc/nzc/nomad-b.hcl <<"EOF"\n%s\nEOF' % config)
    start(vm)
    try:
        [node] = wait_until(lambda: node_ready(stack), timeout=180, why='node %s ready' % NAME)
        if before_plugin:
            before_plugin()
        ran = plugin_role(stack, host_volume_plugin_create_parent=True, **role_vars)
        assert changed(ran)['zfsvm'] > 0, playbook_said(ran)
        yield node
    finally:
        stop(vm)
        for node in stack.get('/v1/nodes'):
            if node['Name'] == NAME:
                with contextlib.suppress(AssertionError):
                    stack.api('POST', '/v1/node/%s/purge' % node['ID'])
