"""A real `nomad agent -dev` on this host, on free loopback ports, and the Go tools it needs.

For what mounts nothing: the pack checks, the 403 test and the benchmarks. Anything that mounts a volume
uses the agent in the ZFS VM (scripts/nomad-dev.sh). It needs no pytest.
"""

import json
import os
import shutil
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from zfsvm_client import wait_until

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get('NOMAD_ZFS_CSI_CACHE', Path.home() / '.cache' / 'nomad-zfs-csi'))
BIN = CACHE / 'bin'
TOOLS = {name: str(BIN / name) for name in ('nomad', 'nomad-pack')}


def build_tools():
    """Build (or find cached) nomad and nomad-pack; returns their paths."""
    build = subprocess.run(
        ['bash', str(REPO / 'tests' / 'tools' / 'build-go-tools.sh')], capture_output=True, text=True, check=False
    )
    if build.returncode != 0:
        raise RuntimeError('building the Go tools failed:\n' + build.stderr[-3000:])
    return dict(TOOLS)


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Agent:
    """The running agent: its address, data dir and an environment for the nomad CLI."""

    def __init__(self, address, workdir, proc, log):
        self.address, self.workdir, self.proc, self.log = address, workdir, proc, log
        self.data_dir = workdir / 'data'
        self.env = dict(os.environ, NOMAD_ADDR=address)
        self.env.pop('NOMAD_TOKEN', None)

    def get(self, path):
        with urllib.request.urlopen(self.address + path, timeout=10) as resp:
            return json.loads(resp.read())

    def nomad(self, *argv, check=True):
        return subprocess.run(
            [TOOLS['nomad']] + list(argv),
            env=self.env,
            capture_output=True,
            text=True,
            check=check,
            stdin=subprocess.DEVNULL,
            timeout=300,
        )

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()

    def destroy(self):
        """Stop the agent and remove what outlives it: raw_exec tasks (Nomad leaves tasks running
        across agent restarts by design), allocations' tmpfs mounts, and the work directory."""
        if self.proc.poll() is None:
            self.stop()
        subprocess.run(['pkill', '-f', str(self.workdir)], check=False)
        mounts = [
            line.split()[1]
            for line in Path('/proc/mounts').read_text().splitlines()
            if line.split()[1].startswith(str(self.workdir) + '/')
        ]
        for mount in sorted(mounts, reverse=True):
            subprocess.run(['umount', '-l', mount], check=False)
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_agent(workdir, port=None, extra_config=''):
    """Start the agent in workdir (data under workdir/data); port pins the HTTP port for restarts."""
    workdir = Path(workdir)
    http, rpc, serf = port or free_port(), free_port(), free_port()
    data_dir = workdir / 'data'
    (workdir / 'agent.hcl').write_text(
        'bind_addr = "127.0.0.1"\ndata_dir = "%s"\nports {\n  http = %d\n  rpc = %d\n  serf = %d\n}\n'
        # Cloud fingerprinters in this build abort the agent ("failed to setup IMDS client:
        # unable to add custom RootCAs HTTPClient"); there is no cloud here anyway.
        'client {\n  options = {\n    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"\n  }\n}\n'
        'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n' % (data_dir, http, rpc, serf) + extra_config
    )
    log = open(workdir / 'agent.log', 'a')
    proc = subprocess.Popen(
        [TOOLS['nomad'], 'agent', '-dev', '-config', str(workdir / 'agent.hcl')], stdout=log, stderr=subprocess.STDOUT
    )
    agent = Agent('http://127.0.0.1:%d' % http, workdir, proc, log)

    def state():
        if proc.poll() is not None:
            return 'exited'
        try:
            return 'up' if agent.get('/v1/status/leader') and agent.get('/v1/nodes') else None
        except urllib.error.HTTPError as e:
            return 'up' if e.code == 403 else None  # up, with ACLs on
        except OSError:
            return None

    try:
        if wait_until(state, timeout=60, why='nomad agent -dev', pause=0.5) == 'up':
            return agent
    except AssertionError:
        pass
    agent.stop()
    raise RuntimeError('nomad agent -dev did not come up:\n' + (workdir / 'agent.log').read_text()[-3000:])
