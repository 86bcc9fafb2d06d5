"""A real `nomad agent -dev` on this host, on free loopback ports, and the Go tools it needs.

For what mounts nothing: the pack checks, the 403 test and the benchmarks. Anything that mounts a volume
uses the agent in the ZFS VM (scripts/nomad-dev.sh). It needs no pytest.
"""

import json
import os
import shutil
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from zfsvm_client import terminate, wait_until

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
    """The running agent: its address, data dir and an environment for the nomad CLI; with tls, the NOMAD_* variables
    that name its CA and a client certificate, and an SSL context for urllib."""

    def __init__(self, address, workdir, proc, log, tls=None):
        self.address, self.workdir, self.proc, self.log = address, workdir, proc, log
        self.data_dir = workdir / 'data'
        self.tls_env = tls.env() if tls else {}
        self.ssl_context = tls.client_context() if tls else None
        self.env = dict(os.environ, NOMAD_ADDR=address, **self.tls_env)
        self.env.pop('NOMAD_TOKEN', None)

    def urlopen(self, request, timeout=10):
        return urllib.request.urlopen(request, timeout=timeout, context=self.ssl_context)

    def get(self, path):
        with self.urlopen(self.address + path) as resp:
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
        terminate(self.proc)
        self.log.close()

    def destroy(self):
        """Stop the agent and remove what outlives it: raw_exec tasks (Nomad leaves tasks running
        across agent restarts by design), allocations' tmpfs mounts, and the work directory."""
        if self.proc.poll() is None:
            self.stop()
        # The agent leads its own session (start_agent), which its logmon and executor processes share: they
        # outlive it, and name no workdir in their command lines.
        subprocess.run(['pkill', '-KILL', '-s', str(self.proc.pid)], check=False)
        subprocess.run(['pkill', '-f', str(self.workdir)], check=False)
        mounts = [
            line.split()[1]
            for line in Path('/proc/mounts').read_text().splitlines()
            if line.split()[1].startswith(str(self.workdir) + '/')
        ]
        for mount in sorted(mounts, reverse=True):
            subprocess.run(['umount', '-l', mount], check=False)
        shutil.rmtree(self.workdir, ignore_errors=True)


class Tls(object):
    """A CA, a server certificate and a CLI (client) certificate made by `nomad tls` in directory, for an agent that
    serves HTTPS and asks every client for a certificate of its CA (mutual TLS)."""

    def __init__(self, directory):
        self.dir = Path(directory)
        for argv in (['ca', 'create'], ['cert', 'create', '-server'], ['cert', 'create', '-cli']):
            subprocess.run([TOOLS['nomad'], 'tls'] + argv, cwd=self.dir, check=True, capture_output=True)
        self.ca = self.dir / 'nomad-agent-ca.pem'
        self.cert, self.key = self.dir / 'global-cli-nomad.pem', self.dir / 'global-cli-nomad-key.pem'

    def agent_config(self):
        return 'tls {\n  http = true\n  rpc = true\n  verify_https_client = true\n  ca_file = "%s"\n' % self.ca + (
            '  cert_file = "%s"\n  key_file = "%s"\n}\n'
            % (self.dir / 'global-server-nomad.pem', self.dir / 'global-server-nomad-key.pem')
        )

    def env(self):
        return dict(NOMAD_CACERT=str(self.ca), NOMAD_CLIENT_CERT=str(self.cert), NOMAD_CLIENT_KEY=str(self.key))

    def client_context(self):
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.cert), str(self.key))
        return context


def start_agent(workdir, port=None, extra_config='', tls=None):
    """Start the agent in workdir (data under workdir/data); port pins the HTTP port for restarts; with a Tls, it
    serves HTTPS only, to clients with a certificate of that CA."""
    workdir = Path(workdir)
    http, rpc, serf = port or free_port(), free_port(), free_port()
    data_dir = workdir / 'data'
    (workdir / 'agent.hcl').write_text(
        'bind_addr = "127.0.0.1"\ndata_dir = "%s"\nports {\n  http = %d\n  rpc = %d\n  serf = %d\n}\n'
        # Cloud fingerprinters in this build abort the agent ("failed to setup IMDS client:
        # unable to add custom RootCAs HTTPClient"); there is no cloud here anyway.
        'client {\n  options = {\n    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"\n  }\n}\n'
        'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n'
        % (data_dir, http, rpc, serf)
        + extra_config
        + (tls.agent_config() if tls else '')
    )
    log = open(workdir / 'agent.log', 'a')
    proc = subprocess.Popen(
        [TOOLS['nomad'], 'agent', '-dev', '-config', str(workdir / 'agent.hcl')],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    agent = Agent('%s://127.0.0.1:%d' % ('https' if tls else 'http', http), workdir, proc, log, tls)

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
