"""The csi_plugin role after the agent dies half-way: a re-run converges without clean-up."""

import json
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from nomad_agent import PLUGIN_ID, REPO, SECRETS_PATH, free_port, plugin_vars_dict, start_agent
from zfsvm_client import BIN, ansible_env

PLAY = Path(__file__).parent / 'csi_plugin.yml'


def converge(agent, tools, tmp_path, volumes):
    extra = {
        'ansible_python_interpreter': str(BIN / 'python'),
        'csi_plugin_nomad_addr': agent.address,
        'csi_plugin_nomad_pack': tools['nomad-pack'],
        'csi_plugin_pack': str(REPO / 'packs' / 'zfs_csi'),
        'csi_plugin_pack_vars': plugin_vars_dict(agent, tools),
        'csi_plugin_secrets_path': SECRETS_PATH,
        'csi_plugin_secrets': {'ssh_private_key': 'recovery-test-key'},
        'csi_plugin_wait_timeout': 120,
        'csi_plugin_volumes': volumes,
    }
    varfile = tmp_path / 'vars.json'
    varfile.write_text(json.dumps(extra))
    proc = subprocess.run([str(BIN / 'ansible-playbook'), '-i', 'localhost,', str(PLAY), '-e', '@%s' % varfile],
                          capture_output=True, text=True, env=ansible_env(), check=False, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return int(re.search(r'localhost\s+: ok=\d+\s+changed=(\d+)', proc.stdout).group(1))


@pytest.fixture
def own_agent(tools):
    """An agent of this test's own, which it may kill."""
    workdir = Path(tempfile.mkdtemp(prefix='nzc-'))
    holder = {'port': free_port(), 'workdir': workdir}
    holder['agent'] = start_agent(workdir, port=holder['port'])
    yield holder
    for job in ('zfs-node', 'zfs-controller'):
        holder['agent'].nomad('job', 'stop', '-purge', job, check=False)
    holder['agent'].destroy()


def test_rerun_after_the_agent_was_killed_between_deploy_and_volumes(own_agent, tools, tmp_path):
    agent = own_agent['agent']
    assert converge(agent, tools, tmp_path, volumes=[]) > 0  # plugin deployed, no volume yet
    agent.proc.kill()  # SIGKILL: the agent dies before the volumes are registered
    agent.proc.wait()
    agent.log.close()
    agent = own_agent['agent'] = start_agent(own_agent['workdir'], port=own_agent['port'])

    volumes = [{'id': 'after-restart', 'capacity_min': '1G', 'capacity_max': '1G'}]
    assert converge(agent, tools, tmp_path, volumes) > 0
    assert agent.get('/v1/volume/csi/after-restart')['PluginID'] == PLUGIN_ID
    assert agent.get('/v1/plugin/csi/' + PLUGIN_ID)['NodesHealthy'] == 1
    assert converge(agent, tools, tmp_path, volumes) == 0
