"""Nomad re-runs the zfs-dataset plugin's create for every volume when a client restarts: the dataset and
its data stay, and nothing in ZFS changes.

The stack's agent runs with -dev, whose client keeps no state, so it forgets its volumes when it stops.
This test starts a second, persistent agent (server and client, its own ports, data dir and cgroup parent)
in the same VM, with the plugin site.yml installed, and restarts it. It is driven with the nomad CLI
inside the VM, since only the stack's API is forwarded to this host.
"""

import json
import shlex
import time

import pytest

from test_host_volume_plugin import MARK, dataset, props
from zfsvm_client import wait_until, without_backups

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

UNIT = 'nzc-nomad-restart'
DATA_DIR = '/var/lib/nzc-nomad-restart'
ADDR = 'http://127.0.0.1:5646'
PLUGIN_ATTRIBUTE = 'plugins.host_volume.zfs-dataset.version'
CONFIG = (
    """
data_dir  = "%s"
bind_addr = "127.0.0.1"
ports {
  http = 5646
  rpc  = 5647
  serf = 5648
}
advertise {
  http = "127.0.0.1:5646"
  rpc  = "127.0.0.1:5647"
  serf = "127.0.0.1:5648"
}
log_level = "DEBUG"
server {
  enabled          = true
  bootstrap_expect = 1
}
client {
  enabled                = true
  cgroup_parent          = "nzc-restart.slice"
  host_volume_plugin_dir = "/usr/local/libexec/nomad-host-volume-plugins"
  options = {
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
}
"""
    % DATA_DIR
)
SPEC = """
type         = "host"
name         = "t-restart"
plugin_id    = "zfs-dataset"
capacity_max = "64MiB"
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
"""


class Agent(object):
    def __init__(self, vm):
        self.vm = vm

    def nomad(self, command, argument, check=True):
        return self.vm.sh('/opt/nzc/bin/nomad %s -address=%s %s' % (command, ADDR, argument), check=check)

    def api(self, path):
        """GET path (the VM has no curl); None while the agent does not answer."""
        answer = self.vm.sh(
            '/opt/nzc/bin/nomad operator api -X GET -address=%s %s' % (ADDR, shlex.quote(path)), check=False
        )
        return json.loads(answer.stdout) if answer.returncode == 0 else None

    def start(self):
        self.since = self.vm.sh('date +%s').stdout.strip()
        self.vm.sh(
            'systemctl reset-failed %s 2>/dev/null; systemd-run --unit=%s --collect '
            '/opt/nzc/bin/nomad agent -config /etc/nzc/nomad-restart.hcl' % (UNIT, UNIT)
        )
        self.hupped = time.monotonic()  # the agent fingerprints as it starts
        self.wait('node ready with the zfs-dataset plugin', self.node_ready)

    def stop(self):
        self.vm.sh('systemctl stop %s' % UNIT, check=False)

    def node_ready(self):
        ready = [node for node in self.api('/v1/nodes') or [] if node['Status'] == 'ready']
        if not ready:
            return False
        if PLUGIN_ATTRIBUTE in self.api('/v1/node/' + ready[0]['ID'])['Attributes']:
            return True
        # Nomad gives a fingerprint one second and does not retry one that failed (the plugin's sh answers well
        # within it, but the agent itself may be slow to run it): fingerprint again, as the role does, every 10 s.
        if time.monotonic() - self.hupped > 10:
            self.vm.sh('systemctl kill --kill-who=main --signal=HUP %s' % UNIT, check=False)
            self.hupped = time.monotonic()
        return False

    def volume(self):
        listed = self.api('/v1/volumes?type=host')
        return listed[0] if listed else None

    def wait(self, what, ready, timeout=180):
        def state():
            if ready():
                return 'ready'
            return None if self.vm.sh('systemctl is-active -q %s' % UNIT, check=False).returncode == 0 else 'exited'

        if wait_until(state, timeout=timeout, why=lambda _state: self.journal(what)) != 'ready':
            pytest.fail(self.journal('%s: the agent exited' % what))

    def journal(self, what):
        return '%s\n%s' % (what, self.vm.sh('journalctl -u %s --no-pager | tail -30' % UNIT, check=False).stdout)

    def creates_since_start(self):
        """The creates the agent ran since it last started, from its debug log (hclog puts a multi-line value,
        the plugin's stdout, and the fields after it on the lines that follow)."""
        journal = self.vm.sh('journalctl -u %s --no-pager --since @%s' % (UNIT, self.since)).stdout
        return journal.count('plugin ran successfully: operation=create'), journal


@pytest.fixture
def agent(stack):
    vm = stack.vm
    vm.sh('cat > /etc/nzc/nomad-restart.hcl <<"EOF"\n%s\nEOF' % CONFIG)
    vm.sh('cat > /etc/nzc/t-restart.hcl <<"EOF"\n%s\nEOF' % SPEC)
    vm.sh('systemctl stop %s 2>/dev/null; rm -rf %s' % (UNIT, DATA_DIR), check=False)
    agent = Agent(vm)
    agent.start()
    try:
        yield agent
    finally:
        volume = agent.volume()
        if volume:
            agent.nomad('volume delete -type host', volume['ID'], check=False)
        agent.stop()
        vm.sh('rm -rf %s /etc/nzc/nomad-restart.hcl /etc/nzc/t-restart.hcl' % DATA_DIR, check=False)
        vm.zfs('destroy', dataset('t-restart'), check=False)


def history(vm, name):
    """The pool's history lines that name the dataset: every change made to it, but the backups' on their timers."""
    return [line for line in without_backups(vm.sh('zpool history -il tank').stdout).splitlines() if name in line]


def test_an_agent_restart_reruns_create_and_changes_nothing(agent):
    vm, name = agent.vm, dataset('t-restart')
    agent.nomad('volume create', '/etc/nzc/t-restart.hcl')
    agent.wait('volume ready', lambda: (agent.volume() or {}).get('State') == 'ready')
    volume_id = agent.volume()['ID']
    before = props(vm, name, 'guid', 'refquota', MARK)
    assert before[MARK] == volume_id and before['refquota'] == str(64 << 20)
    vm.sh('echo kept > %s' % shlex.quote('/%s/kept.txt' % name))
    changes = history(vm, name)

    agent.stop()
    agent.start()
    agent.wait('volume ready after the restart', lambda: (agent.volume() or {}).get('State') == 'ready')

    creates, journal = agent.creates_since_start()
    assert creates == 1 and 'volume_id=' + volume_id in journal, 'the restarted client ran create for the volume'
    assert history(vm, name) == changes, 'the repeated create changed nothing in ZFS'
    assert props(vm, name, 'guid', 'refquota', MARK) == before
    assert vm.sh('cat /%s/kept.txt' % name).stdout == 'kept\n'


def test_a_restart_mounts_a_volume_that_was_unmounted_meanwhile(agent):
    """As after a reboot where the dataset was not mounted: create mounts it again before the node is ready."""
    vm, name = agent.vm, dataset('t-restart')
    agent.nomad('volume create', '/etc/nzc/t-restart.hcl')
    agent.wait('volume ready', lambda: (agent.volume() or {}).get('State') == 'ready')
    vm.sh('echo kept > /%s/kept.txt' % name)

    agent.stop()
    vm.zfs('unmount', name)
    agent.start()
    agent.wait('volume ready after the restart', lambda: (agent.volume() or {}).get('State') == 'ready')

    assert props(vm, name, 'mounted')['mounted'] == 'yes'
    assert vm.sh('cat /%s/kept.txt' % name).stdout == 'kept\n'
