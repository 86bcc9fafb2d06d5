"""NomadClient's errors for calls that never complete."""

import json
import socket

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import (
    NomadClient,
    NomadError,
    _unverified_certificate,
)
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES
from ansible_collections.nomad_zfs.csi.tests.unit.tls_server import connect_proxy, https_server_named

PARAMS = dict(
    namespace='default',
    ca_cert=None,
    validate_certs=True,
    client_cert=None,
    client_key=None,
    nomad_token=None,
    region=None,
)


def test_a_call_nomad_accepts_but_does_not_answer_in_time_says_so_not_unreachable():
    # A listening socket that never answers: the TCP connection succeeds, the HTTP reply never comes.
    with socket.socket() as silent:
        silent.bind(('127.0.0.1', 0))
        silent.listen(1)
        addr = 'http://127.0.0.1:%d' % silent.getsockname()[1]
        client = NomadClient(dict(PARAMS, nomad_addr=addr, timeout=1))
        with pytest.raises(NomadError) as raised:
            client.put('volume/csi/pgdata/create', {'Volumes': []})
    msg = str(raised.value)
    assert 'did not answer PUT volume/csi/pgdata/create within 1s' in msg and 'Raise timeout' in msg
    assert 'Cannot reach' not in msg


def test_nothing_listening_is_unreachable():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    client = NomadClient(dict(PARAMS, nomad_addr='http://127.0.0.1:%d' % port, timeout=1))
    with pytest.raises(NomadError, match='Cannot reach Nomad'):
        client.get('jobs')


CERTIFICATE_ERRORS = json.loads((FIXTURES / 'requests_certificate_errors_2.34.2.json').read_text())


@pytest.mark.parametrize(
    'case, reason',
    [
        ('unknown_ca', 'unable to get local issuer certificate'),
        ('name_not_in_certificate', "IP address mismatch, certificate is not valid for '127.0.0.2'."),
    ],
)
def test_a_certificate_that_failed_verification_is_told_by_openssls_reason(case, reason):
    """What requests said of Nomad's own certificate without its CA, and at an address it does not name (captured);
    tests/integration/acl/test_tls.py sees the module's whole message against a real agent."""
    assert _unverified_certificate(Exception(CERTIFICATE_ERRORS[case])) == reason


def test_an_error_of_another_kind_is_no_certificate_failure():
    refused = "HTTPConnectionPool(host='127.0.0.1', port=1): Max retries exceeded (Caused by NewConnectionError)"
    assert _unverified_certificate(Exception(refused)) is None


@pytest.mark.parametrize(
    'validate_certs, ca_cert, verify',
    [
        (True, None, True),
        (True, '/etc/nomad/ca.pem', '/etc/nomad/ca.pem'),
        (False, None, False),
        (False, '/etc/nomad/ca.pem', False),  # was the CA path, so validate_certs=false was ignored
    ],
)
def test_validate_certs_false_wins_over_a_ca(validate_certs, ca_cert, verify):
    client = NomadClient(
        dict(PARAMS, nomad_addr='https://nomad.example:4646', timeout=1, validate_certs=validate_certs, ca_cert=ca_cert)
    )
    assert client._requester.verify == verify


def test_errors_keep_the_status_and_nomads_own_text():
    error = NomadError('Nomad at x refused PUT y (500): plugin has no controller', 500, 'plugin has no controller')
    assert (error.status, error.nomad_error) == (500, 'plugin has no controller')


def test_a_name_others_chose_stays_one_segment_of_the_path_in_its_own_namespace():
    """A tenant's job named `db?namespace=victim` must not reach the victim's job: the request line as sent."""
    import http.server
    import threading

    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_DELETE(self):
            seen.append(self.path)
            self.send_response(200)
            self.send_header('Content-Type', 'application/json')
            self.end_headers()
            self.wfile.write(b'{}')

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(('127.0.0.1', 0), Handler)
    threading.Thread(target=server.handle_request, daemon=True).start()
    addr = 'http://127.0.0.1:%d' % server.server_port
    client = NomadClient(dict(PARAMS, namespace='tenant', nomad_addr=addr, timeout=5))
    client.delete('job/db?namespace=victim#x%2e', params={'purge': 'false'})
    server.server_close()
    assert seen == ['/v1/job/db%3Fnamespace%3Dvictim%23x%252e?namespace=tenant&purge=false']
    for dotted in ('job/..', 'var/nomad-zfs-csi/moves/../../job/x', 'job/.'):
        with pytest.raises(NomadError, match='a . or .. segment'):
            client.delete(dotted)


@pytest.fixture(scope='module')
def agent_named_only_by_its_role(tmp_path_factory):
    with https_server_named('server.global.nomad', tmp_path_factory.mktemp('tls')) as served:
        yield served


def test_tls_server_name_verifies_the_name_it_gives_in_place_of_the_addresss_host(agent_named_only_by_its_role):
    """A certificate that names server.global.nomad alone, reached at 127.0.0.1: refused as the address, accepted as
    tls_server_name says, and refused as another name, which the error gives."""
    addr, ca = agent_named_only_by_its_role

    def client(**params):
        return NomadClient(dict(PARAMS, nomad_addr=addr, ca_cert=ca, timeout=5, **params))

    with pytest.raises(NomadError) as by_address:
        client().get('jobs')
    assert 'IP address mismatch' in str(by_address.value) and 'tls_server_name' in str(by_address.value)
    assert client(tls_server_name='server.global.nomad').get('jobs') == []
    with pytest.raises(NomadError) as other:
        client(tls_server_name='client.global.nomad').get('jobs')
    said = str(other.value)
    assert 'not verified as client.global.nomad, the name tls_server_name (or NOMAD_TLS_SERVER_NAME) gives' in said
    assert "(Hostname mismatch, certificate is not valid for 'client.global.nomad'.)" in said, said


def test_tls_server_name_holds_through_a_proxy_too(agent_named_only_by_its_role, monkeypatch):
    """deploy.md reaches Nomad through a bastion's proxy (HTTPS_PROXY), for which requests makes pools of its own."""
    addr, ca = agent_named_only_by_its_role
    for name in ('NO_PROXY', 'no_proxy'):
        monkeypatch.delenv(name, raising=False)
    with connect_proxy() as (proxy, asked):
        monkeypatch.setenv('HTTPS_PROXY', proxy)
        params = dict(PARAMS, nomad_addr=addr, ca_cert=ca, timeout=5)
        assert NomadClient(dict(params, tls_server_name='server.global.nomad')).get('jobs') == []
        with pytest.raises(NomadError, match='not verified as client.global.nomad'):
            NomadClient(dict(params, tls_server_name='client.global.nomad')).get('jobs')
    assert asked and set(asked) == {addr[len('https://') :]}, asked
