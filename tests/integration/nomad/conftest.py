"""A real Nomad dev agent, the CSI test plugin deployed through the pack, and modules run on localhost."""

import subprocess
import tempfile
from pathlib import Path

import pytest

from nomad_agent import PLUGIN_ID, REPO, SECRETS_PATH, build_tools, plugin_vars, start_agent
from zfsvm_client import ansible_env, run_local_module


@pytest.fixture(scope='session')
def tools():
    try:
        return build_tools()
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope='session')
def agent(tools):
    # A short path: the plugin's socket, data/client/csi/plugins/<alloc id>/csi.sock, must fit
    # the 108-byte limit of a unix socket address, which pytest's tmp paths overrun.
    workdir = Path(tempfile.mkdtemp(prefix='nzc-'))
    try:
        agent = start_agent(workdir)
    except RuntimeError as e:
        pytest.fail(str(e))
    yield agent
    # Stop jobs first so the plugin unmounts what it published.
    for job in ('workload', 'zfs-node', 'zfs-controller'):
        agent.nomad('job', 'stop', '-purge', job, check=False)
    agent.destroy()


@pytest.fixture(scope='session')
def run_local(agent):
    """Run one collection module on localhost against the agent; returns its result."""
    env = ansible_env(NOMAD_ADDR=agent.address)

    def run(module, args, check=False, diff=False, extra_env=None):
        return run_local_module(dict(env, **(extra_env or {})), module, args, check=check, diff=diff)

    return run


@pytest.fixture(scope='session')
def rendered_jobs(agent, tools):
    """The pack's controller and node jobs, rendered for the test plugin."""
    out = agent.workdir / 'render'
    varfile = agent.workdir / 'dirplugin.hcl'
    varfile.write_text(plugin_vars(agent, tools))
    proc = subprocess.run([tools['nomad-pack'], 'render', str(REPO / 'packs' / 'zfs_csi'), '-f', str(varfile),
                           '-o', str(out)], capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return {'controller': out / 'zfs_csi' / 'controller.nomad', 'node': out / 'zfs_csi' / 'node.nomad'}


@pytest.fixture(scope='session')
def plugin(run_local, rendered_jobs):
    """The plugin deployed and healthy: the secret variable first, then both jobs."""
    assert not run_local('nomad_variable', {'path': SECRETS_PATH, 'items': {'ssh_private_key': 'not-a-real-key'}}).failed
    for job in ('controller', 'node'):
        result = run_local('nomad_job', {'src': str(rendered_jobs[job]), 'wait_timeout': 120})
        assert not result.failed, result
    healthy = run_local('nomad_csi_plugin_info', {'plugin_id': PLUGIN_ID, 'wait_timeout': 120})
    assert healthy['healthy'], healthy
    return PLUGIN_ID
