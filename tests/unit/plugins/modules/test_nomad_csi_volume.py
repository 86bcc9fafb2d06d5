"""The fields nomad_csi_volume compares: a request and Nomad's read of the same volume must agree."""

from ansible_collections.nomad_zfs.csi.plugins.modules.nomad_csi_volume import comparable, requested

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
