"""The nomad_access role against a Nomad agent that serves HTTPS only and asks every client for a certificate of its
CA (mutual TLS). With NOMAD_CACERT, NOMAD_CLIENT_CERT and NOMAD_CLIENT_KEY its modules make the namespace, policies
and tokens and read the secrets back, and a second run changes nothing; without the client certificate the role
stops at its first call to Nomad, naming the address, and changes nothing."""

import tempfile
from pathlib import Path

import pytest

from acl_agent import AclAgent, access_play
from nomad_agent import Tls, start_agent
from zfsvm_client import changed

PLAY = access_play([{'name': 'nzc-tls'}], nomad_access_operator_name='nzc-tls-operator')


@pytest.fixture(scope='module')
def acl():
    workdir = Path(tempfile.mkdtemp(prefix='nzc-tls-'))
    (workdir / 'tls').mkdir()
    tls = Tls(workdir / 'tls')
    agent = start_agent(workdir, extra_config='acl {\n  enabled = true\n}\n', tls=tls)
    try:
        yield AclAgent(agent)
    finally:
        agent.destroy()


def test_the_role_over_mutual_tls_then_nothing_to_do(acl):
    assert acl.address.startswith('https://')
    assert changed(acl.playbook(PLAY)) == {'localhost': 5}
    assert 'nzc-tls' in [n['Name'] for n in acl.api('GET', '/v1/namespaces')]
    tokens = sorted(t['Name'] for t in acl.api('GET', '/v1/acl/tokens'))
    assert tokens == ['Bootstrap Token', 'nzc-tls-operator', 'nzc-tls-submitter'], tokens
    assert changed(acl.playbook(PLAY)) == {'localhost': 0}


def test_without_a_client_certificate_the_role_stops_and_changes_nothing(acl):
    before = acl.api('GET', '/v1/namespaces'), acl.api('GET', '/v1/acl/policies')
    play = access_play([{'name': 'nzc-tls-other'}])
    refused = acl.playbook(play, env={'NOMAD_CACERT': acl.agent.tls_env['NOMAD_CACERT']})
    assert refused.returncode == 2 and 'Cannot reach Nomad at %s' % acl.address in refused.stdout, refused.stdout[
        -3000:
    ]
    assert (acl.api('GET', '/v1/namespaces'), acl.api('GET', '/v1/acl/policies')) == before
