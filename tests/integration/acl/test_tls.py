"""The nomad_access role against a Nomad agent that serves HTTPS only and asks every client for a certificate of its
CA (mutual TLS). Given the CA, the client certificate and its key as the role's variables (the names every role that
talks to Nomad shares: <role>_nomad_ca_cert, _client_cert, _client_key), with no NOMAD_* TLS variable in the
environment, its modules make the namespace, policies and tokens and read the secrets back, and a second run changes
nothing; without the client certificate the role stops at its first call to Nomad, naming the address, and changes
nothing."""

import pytest

from acl_agent import access_play, tls_acl_agent
from zfsvm_client import ansible_env, changed, run_local_module


def play(tls, tenant, **role_vars):
    return access_play([{'name': tenant}], nomad_access_nomad_ca_cert=str(tls.ca), **role_vars)


@pytest.fixture(scope='module')
def acl():
    with tls_acl_agent('nzc-tls-') as agent:
        yield agent


def test_the_role_over_mutual_tls_then_nothing_to_do(acl):
    acl, tls = acl
    assert acl.address.startswith('https://')
    mutual = play(
        tls,
        'nzc-tls',
        nomad_access_operator_name='nzc-tls-operator',
        nomad_access_nomad_client_cert=str(tls.cert),
        nomad_access_nomad_client_key=str(tls.key),
    )
    assert changed(acl.playbook(mutual, env={})) == {'localhost': 5}
    assert 'nzc-tls' in [n['Name'] for n in acl.api('GET', '/v1/namespaces')]
    tokens = sorted(t['Name'] for t in acl.api('GET', '/v1/acl/tokens'))
    assert tokens == ['Bootstrap Token', 'nzc-tls-operator', 'nzc-tls-submitter'], tokens
    assert changed(acl.playbook(mutual, env={})) == {'localhost': 0}


def test_without_a_client_certificate_the_role_stops_and_changes_nothing(acl):
    acl, tls = acl
    before = acl.api('GET', '/v1/namespaces'), acl.api('GET', '/v1/acl/policies')
    refused = acl.playbook(play(tls, 'nzc-tls-other'), env={})
    assert refused.returncode == 2 and 'Cannot reach Nomad at %s' % acl.address in refused.stdout, refused.stdout[
        -3000:
    ]
    assert (acl.api('GET', '/v1/namespaces'), acl.api('GET', '/v1/acl/policies')) == before


def test_a_certificate_of_a_ca_not_given_is_named_as_such_with_the_fix_not_as_unreachable(acl):
    """Nomad's own certificates, without their CA (no nomad_ca_cert, no NOMAD_CACERT): the module says that the
    certificate was not verified and how to fix it, instead of "Cannot reach Nomad"."""
    acl, tls = acl
    env = ansible_env(NOMAD_ADDR=acl.address, NOMAD_TOKEN=acl.management)
    env.pop('NOMAD_CACERT', None)
    env.update((k, v) for k, v in acl.agent.tls_env.items() if k != 'NOMAD_CACERT')
    refused = run_local_module(env, 'nomad_namespace', {'name': 'nzc-tls-unverified'})
    assert refused.rc != 0
    said = refused['msg']
    assert said.startswith('Nomad at %s: its TLS certificate was not verified (' % acl.address), said
    assert 'self-signed certificate' in said or 'unable to get local issuer certificate' in said, said
    assert 'nomad_ca_cert (or NOMAD_CACERT)' in said and '-additional-dnsname' in said, said
    assert 'Cannot reach' not in said
    assert 'nzc-tls-unverified' not in [n['Name'] for n in acl.api('GET', '/v1/namespaces')]


def test_tls_server_name_is_the_name_checked_in_the_agents_certificate_by_modules_and_roles(acl):
    """Nomad's own server certificate names server.global.nomad: a module given that name reaches the agent, and the
    nomad_access role given a name the certificate lacks (client.global.nomad, though the address is one it names)
    stops at its first call, naming the name, and changes nothing."""
    acl, tls = acl
    env = ansible_env(NOMAD_ADDR=acl.address, NOMAD_TOKEN=acl.management, **acl.agent.tls_env)
    named = run_local_module(
        env, 'nomad_namespace', {'name': 'nzc-tls-named', 'tls_server_name': 'server.global.nomad'}
    )
    assert named.rc == 0 and named['changed'], named.output[-2000:]
    before = acl.api('GET', '/v1/namespaces'), acl.api('GET', '/v1/acl/policies')
    refused = acl.playbook(
        play(
            tls,
            'nzc-tls-misnamed',
            nomad_access_nomad_client_cert=str(tls.cert),
            nomad_access_nomad_client_key=str(tls.key),
            nomad_access_nomad_tls_server_name='client.global.nomad',
        ),
        env={},
    )
    assert refused.returncode == 2, refused.stdout[-3000:]
    assert 'not verified as client.global.nomad, the name tls_server_name' in refused.stdout, refused.stdout[-3000:]
    assert (acl.api('GET', '/v1/namespaces'), acl.api('GET', '/v1/acl/policies')) == before
