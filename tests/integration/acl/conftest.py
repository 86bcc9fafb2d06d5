"""A real Nomad agent on this host with ACLs on and bootstrapped: the ACL and namespace modules need no VM, since
nothing here mounts a volume."""

import json
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from nomad_agent import start_agent
from zfsvm_client import ansible_env, run_local_module


class AclAgent(object):
    def __init__(self, agent):
        self.agent, self.address = agent, agent.address
        self.management = self.api('PUT', '/v1/acl/bootstrap', token=None)['SecretID']

    def api(self, method, path, body=None, token=''):
        """Nomad's answer as JSON, or (status, text) for an error; token '' means the management token."""
        request = urllib.request.Request(
            self.address + path, data=json.dumps(body).encode() if body is not None else None, method=method
        )
        token = self.management if token == '' else token
        if token:
            request.add_header('X-Nomad-Token', token)
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                raw = resp.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            return (e.code, e.read().decode())

    def module(self, name, args, token='', check=False, diff=False):
        """One collection module on this host against this agent, with the management token unless told."""
        env = ansible_env(NOMAD_ADDR=self.address, NOMAD_TOKEN=self.management if token == '' else token)
        result = run_local_module(env, name, args, check=check, diff=diff)
        result['rc'] = result.rc
        return result


# One agent per test module: a directory without __init__.py gives 'package' the whole session's life.
@pytest.fixture(scope='module')
def acl():
    agent = start_agent(Path(tempfile.mkdtemp(prefix='nzc-acl-')), extra_config='acl {\n  enabled = true\n}\n')
    try:
        yield AclAgent(agent)
    finally:
        agent.destroy()
