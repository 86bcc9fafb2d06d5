"""A real Nomad agent on this host with ACLs on and bootstrapped, and collection modules run against it
with the management token or a given one. Used by tests/integration/acl and by the stack's ACL tests."""

import contextlib
import json
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from nomad_agent import Tls, start_agent
from zfsvm_client import BIN, ansible_env, run_local_module, wait_until

PLUGIN_READ = 'plugin {\n  policy = "read"\n}\n'


def namespace_caps(namespace, *names):
    """ACL rules granting the capabilities names in namespace."""
    return 'namespace "%s" {\n  capabilities = [%s]\n}\n' % (namespace, ', '.join('"%s"' % n for n in names))


def access_play(tenants, **role_vars):
    """A play of the nomad_access role on localhost with these tenants (JSON is YAML)."""
    role = {'role': 'nomad_zfs.csi.nomad_access', 'vars': dict(role_vars, nomad_access_tenants=tenants)}
    return json.dumps([{'name': 'Nomad access', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False,
                        'roles': [role]}])  # fmt: skip


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
            with self.agent.urlopen(request, timeout=30) as resp:
                raw = resp.read()
                return json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            return (e.code, e.read().decode())

    def module(self, name, args, token='', check=False, diff=False):
        """One collection module on this host against this agent, with the management token unless told."""
        env = ansible_env(NOMAD_ADDR=self.address, NOMAD_TOKEN=self.management if token == '' else token)
        result = run_local_module(dict(env, **self.agent.tls_env), name, args, check=check, diff=diff)
        result['rc'] = result.rc
        return result

    def token_for(self, name, rules):
        """The secret of a client token whose one policy, also called name, holds rules."""
        assert self.module('nomad_acl_policy', {'name': name, 'rules': rules})['rc'] == 0
        made = self.module('nomad_acl_token', {'name': name, 'policies': [name]})
        assert made['rc'] == 0, made
        return made['secret_id']

    def exactly_then_one_fewer(self, label, module, args, exact, second, fewer, named):
        """The module works with a token holding exact, and with fewer fails with a 403 that names what is missing.
        label names the two policies and tokens."""
        works = self.module(module, args, token=self.token_for('nzc-exact-' + label, exact))
        assert works['rc'] == 0, works
        refused = self.module(module, second, token=self.token_for('nzc-fewer-' + label, fewer))
        assert refused.failed and 'answered 403' in refused['msg'] and named in refused['msg'], refused

    def playbook(self, text, token='', env=None):
        """ansible-playbook of text on localhost against this agent, with the management token unless told; env
        defaults to the NOMAD_* variables of the agent's TLS, if any."""
        with tempfile.TemporaryDirectory() as workdir:
            play = Path(workdir) / 'play.yml'
            play.write_text(text)
            tls_env = self.agent.tls_env if env is None else env
            env = ansible_env(NOMAD_ADDR=self.address, NOMAD_TOKEN=self.management if token == '' else token, **tls_env)
            argv = [
                str(BIN / 'ansible-playbook'),
                '-i',
                'localhost,',
                '-e',
                'ansible_python_interpreter=%s' % (BIN / 'python'),
            ]
            return subprocess.run(argv + [str(play)], env=env, capture_output=True, text=True, timeout=600, check=False)

    def wait_for_eval(self, eval_id, namespace, token='', timeout=60):
        """The evaluation once the scheduler is done with it."""
        return wait_until(
            lambda: self.api('GET', '/v1/evaluation/%s?namespace=%s' % (eval_id, namespace), token=token),
            lambda evaluation: evaluation['Status'] in ('complete', 'failed', 'blocked'),
            timeout=timeout,
            why=lambda evaluation: 'evaluation %s is still %s' % (eval_id, evaluation['Status']),
            pause=1,
        )


@contextlib.contextmanager
def tls_acl_agent(prefix):
    """An AclAgent that serves HTTPS only, to clients with a certificate of its CA, and that Tls; gone afterwards."""
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    (workdir / 'tls').mkdir()
    tls = Tls(workdir / 'tls')
    agent = start_agent(workdir, extra_config='acl {\n  enabled = true\n}\n', tls=tls)
    try:
        yield AclAgent(agent), tls
    finally:
        agent.destroy()
