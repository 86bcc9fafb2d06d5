"""NomadClient's errors for calls that never complete."""

import socket

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils.nomad_client import NomadClient, NomadError

PARAMS = dict(namespace='default', ca_cert=None, validate_certs=True, client_cert=None, client_key=None,
              nomad_token=None, region=None)


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
