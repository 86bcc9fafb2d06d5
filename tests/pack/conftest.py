"""Real nomad-pack and a real Nomad dev agent for the pack's checks."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'integration'))
from nomad_agent import REPO, build_tools, start_agent  # noqa: E402

PACK = REPO / 'packs' / 'zfs_csi'


@pytest.fixture(scope='session')
def tools():
    try:
        return build_tools()
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope='session')
def agent(tools, tmp_path_factory):
    workdir = tmp_path_factory.mktemp('nomad')
    try:
        agent = start_agent(workdir)
    except RuntimeError as e:
        pytest.fail(str(e))
    # The node pool and namespace that examples/zfs-local-dataset.hcl and zfs-local-zvol.hcl place jobs in.
    (workdir / 'pool.hcl').write_text('node_pool "storage" {\n  description = "ZFS storage clients"\n}\n')
    agent.nomad('node', 'pool', 'apply', str(workdir / 'pool.hcl'))
    agent.nomad('namespace', 'apply', 'storage')
    yield agent
    agent.destroy()
