"""A real Nomad agent on this host with ACLs on and bootstrapped: the ACL and namespace modules need no VM, since
nothing here mounts a volume."""

import tempfile
from pathlib import Path

import pytest

from acl_agent import AclAgent
from nomad_agent import start_agent


# One agent per test module: a directory without __init__.py gives 'package' the whole session's life.
@pytest.fixture(scope='module')
def acl():
    agent = start_agent(Path(tempfile.mkdtemp(prefix='nzc-acl-')), extra_config='acl {\n  enabled = true\n}\n')
    try:
        yield AclAgent(agent)
    finally:
        agent.destroy()
