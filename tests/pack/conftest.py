"""Real nomad-pack and a real Nomad dev agent for the pack's checks."""

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACK = REPO / 'packs' / 'zfs_csi'
CACHE = Path(os.environ.get('NOMAD_ZFS_CSI_CACHE', Path.home() / '.cache' / 'nomad-zfs-csi'))
BIN = CACHE / 'bin'


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@pytest.fixture(scope='session')
def tools():
    build = subprocess.run(['bash', str(REPO / 'tests' / 'tools' / 'build-go-tools.sh')],
                           capture_output=True, text=True, check=False)
    if build.returncode != 0:
        pytest.fail('building nomad and nomad-pack failed:\n' + build.stderr[-3000:])
    return {'nomad': str(BIN / 'nomad'), 'nomad-pack': str(BIN / 'nomad-pack')}


class Agent:
    def __init__(self, address, nomad):
        self.address, self.nomad = address, nomad
        self.env = dict(os.environ, NOMAD_ADDR=address)
        self.env.pop('NOMAD_TOKEN', None)

    def get(self, path):
        with urllib.request.urlopen(self.address + path, timeout=10) as resp:
            return json.loads(resp.read())


@pytest.fixture(scope='session')
def agent(tools, tmp_path_factory):
    """`nomad agent -dev` on free loopback ports, stopped by its own pid."""
    workdir = tmp_path_factory.mktemp('nomad')
    http, rpc, serf = free_port(), free_port(), free_port()
    (workdir / 'agent.hcl').write_text(
        'bind_addr = "127.0.0.1"\ndata_dir = "%s"\nports {\n  http = %d\n  rpc = %d\n  serf = %d\n}\n'
        # Cloud fingerprinters in this build abort the agent ("failed to setup IMDS client:
        # unable to add custom RootCAs HTTPClient"); there is no cloud here anyway.
        'client {\n  options = {\n    "fingerprint.denylist" = "env_aws,env_gce,env_azure,env_digitalocean"\n  }\n}\n'
        % (workdir / 'data', http, rpc, serf))
    log = open(workdir / 'agent.log', 'w')
    proc = subprocess.Popen([tools['nomad'], 'agent', '-dev', '-config', str(workdir / 'agent.hcl')],
                            stdout=log, stderr=subprocess.STDOUT)
    agent = Agent('http://127.0.0.1:%d' % http, tools['nomad'])
    deadline = time.monotonic() + 60
    while True:
        try:
            if agent.get('/v1/status/leader'):
                break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail('nomad agent -dev did not come up:\n' + (workdir / 'agent.log').read_text()[-3000:])
        time.sleep(0.5)
    # The node pool and namespace the .ci vars files place jobs in.
    (workdir / 'pool.hcl').write_text('node_pool "storage" {\n  description = "ZFS storage clients"\n}\n')
    for argv in (['node', 'pool', 'apply', str(workdir / 'pool.hcl')], ['namespace', 'apply', 'storage']):
        subprocess.run([tools['nomad']] + argv, env=agent.env, check=True, capture_output=True)
    yield agent
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
    shutil.rmtree(workdir / 'data', ignore_errors=True)
