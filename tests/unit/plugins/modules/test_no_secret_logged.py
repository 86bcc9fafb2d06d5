"""No secret reaches syslog or the result, in either form of a module: each module that takes one runs through
AnsibleModule's real exit path with a recognisable secret, and neither what it printed (its result and
invocation.module_args) nor what it sent to /dev/log holds it."""

import json
import syslog

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import (
    nomad_acl_token,
    nomad_csi_snapshot,
    nomad_csi_snapshot_info,
    nomad_csi_volume,
    nomad_host_volume,
    nomad_job,
    nomad_variable,
)
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

CANARY = 'canary-7f3e9d1c'
TOKEN = {'nomad_token': 'token-' + CANARY}
CASES = {
    'csi volume': (nomad_csi_volume, {'id': 'a', 'plugin_id': 'zfs', 'secrets': {'foo': CANARY}}),
    'csi volumes': (nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': [{'id': 'b', 'secrets': {'foo': CANARY}}]}),
    'csi volumes, nested in a list': (
        nomad_csi_volume,
        {'plugin_id': 'zfs', 'volumes': [{'id': 'b'}, {'id': 'c', 'secrets': {'k': 'second-secret', 'foo': CANARY}}]},
    ),
    'csi snapshot': (
        nomad_csi_snapshot,
        {'plugin_id': 'zfs', 'name': 's', 'source_volume_id': 'a', 'secrets': {'foo': CANARY}},
    ),
    'csi snapshot info': (nomad_csi_snapshot_info, {'plugin_id': 'zfs', 'secrets': {'foo': CANARY}}),
    'variable': (nomad_variable, {'path': 'nomad/jobs/x', 'items': {'key': CANARY}}),
    'host volumes': (nomad_host_volume, {'volumes': [{'name': 'hv'}]}),
    'job variables': (nomad_job, {'content': 'job "x" {}', 'variables': {'password': CANARY}}),
    'acl token': (nomad_acl_token, {'name': 't', 'policies': ['p']}),
}


@pytest.fixture
def nomad(monkeypatch):
    # An empty Nomad that refuses every write: enough for each module to validate, log its invocation, read and fail
    # or plan, which is all that can leak.
    return FakeNomad().install(monkeypatch)


@pytest.mark.parametrize('check', [True, False], ids=['check', 'run'])
@pytest.mark.parametrize('case', sorted(CASES))
def test_no_secret_in_the_result_or_syslog(run_main, nomad, syslog_capture, case, check):
    module, args = CASES[case]
    result = run_main(module, dict(args, **TOKEN), check=check, diff=True)
    logged = syslog_capture()
    # This module did log its arguments (ansible-test units may run other tests' modules beside it).
    assert any('Invoked with' in m and '%s=' % sorted(args)[0] in m for m in logged), logged
    assert CANARY not in json.dumps(result)
    assert [m for m in logged if CANARY in m] == []
    assert 'module_args' in result['invocation']


def test_the_invocation_shows_each_items_secrets_masked(run_main, nomad):
    _module, args = CASES['csi volumes, nested in a list']
    result = run_main(nomad_csi_volume, args, check=True)
    items = result['invocation']['module_args']['volumes']
    assert [i['id'] for i in items] == ['b', 'c']
    assert items[1]['secrets'] == {
        'k': 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER',
        'foo': 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER',
    }


def test_the_sink_takes_more_messages_than_a_socket_queues(syslog_capture):
    # A sender blocks once net.unix.max_dgram_qlen (10 here) datagrams wait unread; an -vvv play sends many more.
    for i in range(50):
        syslog.syslog(syslog.LOG_INFO, 'nzc sink %d' % i)
    assert [m for m in syslog_capture() if 'nzc sink' in m][-1].endswith('nzc sink 49')
