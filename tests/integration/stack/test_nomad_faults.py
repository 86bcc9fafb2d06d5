"""Connection faults: a Nomad that is down, and a real one on this host that answers 403."""

import tempfile
from pathlib import Path

import pytest

from nomad_agent import free_port, start_agent

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended


@pytest.fixture(scope='module')
def acl_agent():
    """A dev agent on this host with ACLs on and never bootstrapped: every call without a token is a real 403.
    It mounts nothing, so it need not run in the VM."""
    workdir = Path(tempfile.mkdtemp(prefix='nzc-'))
    agent = start_agent(workdir, extra_config='acl {\n  enabled = true\n}\n')
    yield agent
    agent.destroy()


@pytest.mark.parametrize(
    'module,args',
    [
        ('nomad_variable', {'path': 'nomad/jobs/x', 'items': {'key': 'a-long-secret'}}),
        ('nomad_job', {'content': 'job "x" {\n}\n'}),
        ('nomad_csi_volume', {'id': 'v', 'plugin_id': 'zfs'}),
        ('nomad_csi_plugin_info', {'plugin_id': 'zfs'}),
    ],
)
def test_nomad_down_is_named_with_the_fix(run_local, module, args):
    addr = 'http://127.0.0.1:%d' % free_port()
    result = run_local(module, dict(args, nomad_addr=addr))
    assert result.failed and 'Cannot reach Nomad at %s' % addr in result['msg'], result
    assert 'nomad_addr' in result['msg']


def test_403_is_named_and_the_token_never_shows(run_local, acl_agent):
    token = '3f8c9a34-5d2b-4c1e-9d7a-000000000042'
    result = run_local(
        'nomad_variable',
        {
            'path': 'nomad/jobs/x',
            'items': {'key': 'a-long-secret'},
            'nomad_addr': acl_agent.address,
            'nomad_token': token,
        },
    )
    assert result.failed and 'answered 403' in result['msg'] and 'nomad_token' in result['msg'], result
    assert token not in result.output
