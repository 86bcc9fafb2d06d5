"""_acl_needs: a 403 names what Nomad v1.11.3 checks for the call (read from its source)."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._acl_needs import needed


@pytest.mark.parametrize(
    'method, path, needs',
    [
        ('put', 'volume/csi/v/create', 'csi-write-volume in namespace ns and plugin read'),
        ('delete', 'volume/csi/v', 'csi-write-volume in namespace ns'),
        ('delete', 'volume/csi/v/delete', 'csi-write-volume in namespace ns and plugin read'),
        ('get', 'volumes/snapshot', 'csi-list-volume'),
        ('put', 'jobs', 'submit-job (or register-job) in namespace ns; a job claiming a CSI volume'),
        ('delete', 'acl/token/x', 'a management token'),
        ('get', 'nodes', 'node read'),
        ('get', 'node/n1/allocations', 'node read'),
        ('get', 'volumes', 'csi-list-volume'),
        ('get', 'volumes?type=host', 'host-volume-read in namespace ns'),
        ('get', 'volumes/claims', 'host-volume-read in namespace ns'),
        ('delete', 'volumes/claim/c1', 'host-volume-delete in namespace ns'),
    ],
)
def test_a_403_names_what_nomad_checks_for_the_call(method, path, needs):
    path, _sep, query = path.partition('?')
    params = dict([query.split('=')]) if query else None
    assert needed(method, path, 'ns', params).startswith(needs)
    assert needed('get', 'operator/raft', 'ns') is None
