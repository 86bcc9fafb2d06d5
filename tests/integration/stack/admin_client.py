"""A Nomad client on this host, in node pool `admin`, joined to the stack's server through the VM's forwarded RPC
port: where the follow controller's job runs, as the issue asks (the emulated VM makes every controller-side step
slow). It runs raw_exec tasks only. Its HTTP API is HTTPS with a certificate of the stack's CA, and asks for no
client certificate: a task reaches it with its workload identity alone."""

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from stack_layout import CACHE_BIN

from node_b import server_rpc_port
from zfsvm_client import terminate, wait_until

NAME = 'nzc-admin'
POOL = 'admin'
CONFIG = """
name      = "%(name)s"
data_dir  = "%(data)s"
bind_addr = "127.0.0.1"
ports {
  http = %(http)d
  rpc  = %(rpc)d
  serf = %(serf)d
}
advertise {
  http = "127.0.0.1:%(http)d"
  rpc  = "127.0.0.1:%(rpc)d"
  serf = "127.0.0.1:%(serf)d"
}
acl {
  enabled = true
}
client {
  enabled   = true
  servers   = ["127.0.0.1:%(server)d"]
  node_pool = "%(pool)s"
  options = {
    "driver.allowlist"     = "raw_exec"
    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"
  }
}
plugin "raw_exec" {
  config {
    enabled = true
  }
}
tls {
  http                = true
  verify_https_client = false
  ca_file             = "%(ca)s"
  cert_file           = "%(cert)s"
  key_file            = "%(key)s"
}
"""


class AdminClient:
    def __init__(self, address, ca, data_dir, node):
        self.address, self.ca, self.data_dir, self.node = address, ca, data_dir, node

    def task_output(self, alloc_id, task):
        """What a task of an allocation on this client printed so far (stdout and stderr, every rotated file)."""
        logs = self.data_dir / 'alloc' / alloc_id / 'alloc' / 'logs'
        return ''.join(p.read_text(errors='replace') for p in sorted(logs.glob('%s.std*' % task)))

    def task_process(self, alloc_id, task):
        """The /proc directory of a running task's process on this client (raw_exec: a process of this host whose
        working directory is the task's, with the allocation's environment), or None."""
        task_dir = str(self.data_dir / 'alloc' / alloc_id / task)
        for proc in Path('/proc').iterdir():
            try:
                if proc.name.isdigit() and os.readlink(proc / 'cwd') == task_dir:
                    if b'\0NOMAD_ALLOC_ID=' in b'\0' + (proc / 'environ').read_bytes():
                        return proc
            except OSError:  # gone meanwhile
                continue
        return None

    def task_environ(self, alloc_id, task):
        proc = self.task_process(alloc_id, task)
        text = (proc / 'environ').read_text() if proc else ''
        return dict(v.split('=', 1) for v in text.split('\0') if '=' in v)

    def crash_task(self, alloc_id, task):
        """Every process of a task killed at once, as a crash of its node would: its process and all it started
        (ansible-runner starts the playbooks in sessions of their own), each stopped first so that none forks past
        the kill. Nomad then restarts the task."""
        proc = self.task_process(alloc_id, task)
        assert proc, 'no process of task %s of %s' % (task, alloc_id)
        stopped = set()
        while True:
            tree = descendants(int(proc.name)) - stopped
            if not tree:
                break
            for pid in tree:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
            stopped |= tree
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def descendants(root):
    """root and every process below it, as /proc has them now."""
    parents = {}
    for proc in Path('/proc').iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            if proc.name.isdigit():
                parents[int(proc.name)] = int((proc / 'stat').read_text().rsplit(')', 1)[1].split()[1])
    tree, grown = {root}, True
    while grown:
        below = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= below
        grown = bool(below)
    return tree


@contextlib.contextmanager
def admin_client(stack, workdir):
    """The admin client, ready; stopped afterwards with what its tasks left running, and purged from the server."""
    tls = stack.vm.run_dir / 'nomad-tls'
    server = server_rpc_port(stack.vm)
    http = urlsplit(stack.vm.nomad_addr).port + 3
    # Its own certificate, of the stack's CA (for localhost and 127.0.0.1).
    subprocess.run(
        [
            str(CACHE_BIN / 'nomad'),
            'tls',
            'cert',
            'create',
            '-client',
            '-ca',
            str(tls / 'nomad-agent-ca.pem'),
            '-key',
            str(tls / 'nomad-agent-ca-key.pem'),
        ],
        cwd=workdir,
        check=True,
        capture_output=True,
    )
    # A short path: a task's API socket (secrets/api.sock, NOMAD_UNIX_ADDR) must fit in a socket address.
    data = Path(tempfile.mkdtemp(prefix='nzc-admin-'))
    config = workdir / 'admin.hcl'
    config.write_text(
        CONFIG
        % {
            'name': NAME,
            'data': data,
            'http': http,
            'rpc': http + 1,
            'serf': http + 2,
            'server': server,
            'pool': POOL,
            'ca': tls / 'nomad-agent-ca.pem',
            'cert': workdir / 'global-client-nomad.pem',
            'key': workdir / 'global-client-nomad-key.pem',
        }
    )
    with open(workdir / 'agent.log', 'w') as log:
        agent = subprocess.Popen(
            [str(CACHE_BIN / 'nomad'), 'agent', '-config', str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    try:

        def ready():
            assert agent.poll() is None, 'the admin client exited: %s' % (workdir / 'agent.log').read_text()[-3000:]
            return [n for n in stack.get('/v1/nodes') if n['Name'] == NAME and n['Status'] == 'ready']

        [node] = wait_until(ready, timeout=120, why='the admin client ready')
        assert node['NodePool'] == POOL, node
        yield AdminClient('https://127.0.0.1:%d' % http, str(tls / 'nomad-agent-ca.pem'), data, node)
    finally:
        terminate(agent)
        # Its task executors outlive it, as a client's do: each names its log file in the data dir.
        subprocess.run(['pkill', '-f', str(data)], check=False)
        # And the secrets directories' tmpfs mounts.
        with open('/proc/mounts') as mounts:
            below = [line.split()[1] for line in mounts if line.split()[1].startswith('%s/' % data)]
        for mountpoint in sorted(below, reverse=True):
            subprocess.run(['umount', mountpoint], check=False)
        shutil.rmtree(data, ignore_errors=True)
        for node in stack.get('/v1/nodes'):
            if node['Name'] == NAME:
                stack.api('PUT', '/v1/node/%s/purge' % node['ID'])
