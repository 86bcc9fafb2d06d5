"""The fields nomad_csi_volume compares: a request and Nomad's read of the same volume must agree."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils.nomad_client import NomadError
from ansible_collections.nomad_zfs.csi.plugins.modules.nomad_csi_volume import comparable, put_retrying_no_controller, requested

PARAMS = dict(id='pgdata', name=None, plugin_id='zfs', mode='create', external_id=None, fs_type='',
              mount_flags=['noatime'], parameters={}, context={}, secrets={'token': 'hush'},
              capabilities=[{'access_mode': 'single-node-writer', 'attachment_mode': 'file-system'}])

# Trimmed from GET /v1/volume/csi/pgdata on Nomad v1.11.3: secrets dropped, mount flags redacted.
READ = {'ID': 'pgdata', 'Name': 'pgdata', 'PluginID': 'zfs', 'ExternalID': 'pgdata',
        'RequestedCapabilities': [{'AccessMode': 'single-node-writer', 'AttachmentMode': 'file-system'}],
        'MountOptions': {'FSType': '', 'MountFlags': ['[REDACTED]']}, 'Parameters': None, 'Context': {},
        'Secrets': None, 'RequestedCapacityMin': 1073741824, 'RequestedCapacityMax': 1073741824}


def test_request_and_read_compare_equal():
    want = requested(PARAMS, (1073741824, 1073741824))
    assert comparable(want, 'create') == comparable(READ, 'create')


def test_secrets_are_sent_but_never_compared():
    want = requested(PARAMS, (0, 0))
    assert want['Secrets'] == {'token': 'hush'}
    assert 'hush' not in repr(comparable(want, 'create'))


def test_capability_order_does_not_matter():
    two = [{'AccessMode': 'single-node-writer', 'AttachmentMode': 'file-system'},
           {'AccessMode': 'single-node-reader-only', 'AttachmentMode': 'file-system'}]
    assert comparable(dict(READ, RequestedCapabilities=two), 'create') == \
        comparable(dict(READ, RequestedCapabilities=list(reversed(two))), 'create')


class _Answers(object):
    """Stands in for NomadClient.put only: replays errors, then succeeds."""

    def __init__(self, *errors):
        self.errors, self.calls = list(errors), 0

    def put(self, endpoint, body):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return {}


def test_create_retries_while_nomad_says_the_plugin_has_no_controller():
    # The message as Nomad v1.11.3 answered it in CI.
    answers = _Answers(NomadError('Nomad at http://127.0.0.1:4646 refused PUT volume/csi/demo/create (500): '
                                  'plugin has no controller'))
    put_retrying_no_controller(answers, 'volume/csi/demo/create', {}, seconds=5, pause=0.01)
    assert answers.calls == 2


def test_create_gives_up_after_the_deadline_and_other_errors_are_not_retried():
    stuck = _Answers(*[NomadError('(500): plugin has no controller')] * 50)
    with pytest.raises(NomadError):
        put_retrying_no_controller(stuck, 'x', {}, seconds=0.05, pause=0.01)
    assert 1 < stuck.calls < 50
    denied = _Answers(NomadError('(403): Permission denied'))
    with pytest.raises(NomadError):
        put_retrying_no_controller(denied, 'x', {}, seconds=5, pause=0.01)
    assert denied.calls == 1
