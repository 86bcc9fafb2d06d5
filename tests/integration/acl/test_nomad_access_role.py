"""The nomad_access role against a real bootstrapped ACL agent: each tenant's token reaches its own namespace
only, the operator's token writes volumes but runs no tenant job, and a second run changes nothing."""

import pytest

from acl_agent import access_play

PLAY = access_play([{'name': 'nzc-a', 'description': 'Team A'}, {'name': 'nzc-b', 'enabled_task_drivers': ['exec']}])
VOLUME = {
    'Volumes': [
        {
            'ID': 'v',
            'Name': 'v',
            'PluginID': 'zfs',
            'ExternalID': 'v',
            'RequestedCapabilities': [{'AccessMode': 'single-node-writer', 'AttachmentMode': 'file-system'}],
        }
    ]
}


@pytest.fixture(scope='module')
def secrets(acl):
    first = acl.playbook(PLAY)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    found = {}
    for name in ('csi-operator', 'nzc-a-submitter', 'nzc-b-submitter'):
        found[name] = acl.api('GET', '/v1/var/nomad-access/tokens/' + name)['Items']['secret']
        assert found[name] not in first.stdout + first.stderr
    return found


def test_a_second_run_changes_nothing(acl, secrets):
    again = acl.playbook(PLAY)
    assert again.returncode == 0 and 'changed=0' in again.stdout, again.stdout[-3000:]
    assert all(secret not in again.stdout for secret in secrets.values())


def test_a_submitter_reaches_its_namespace_only(acl, secrets):
    a = secrets['nzc-a-submitter']
    assert acl.api('GET', '/v1/jobs?namespace=nzc-a', token=a) == []
    assert acl.api('GET', '/v1/volumes?type=csi&namespace=nzc-a', token=a) == []
    for path in (
        '/v1/volumes?type=csi&namespace=nzc-b',
        '/v1/jobs?namespace=nzc-b',
        '/v1/volumes/snapshot?plugin_id=zfs&namespace=nzc-b',
    ):
        denied = acl.api('GET', path, token=a)
        assert denied[0] == 403, (path, denied)
    assert acl.api('PUT', '/v1/volume/csi/v?namespace=nzc-a', VOLUME, token=a)[0] == 403  # mounts, never writes


def test_the_operator_writes_volumes_but_runs_no_tenant_job(acl, secrets):
    op = secrets['csi-operator']
    # Nomad gets past its ACL check and stops at the missing plugin: the write is allowed.
    allowed = acl.api('PUT', '/v1/volume/csi/v?namespace=nzc-a', VOLUME, token=op)
    assert allowed[0] != 403 and 'plugin' in allowed[1], allowed
    assert acl.api('GET', '/v1/jobs?namespace=nzc-a', token=op)[0] == 403
    assert acl.api('GET', '/v1/jobs?namespace=default', token=op) == []
    assert acl.api('GET', '/v1/var/nomad-access/tokens/nzc-a-submitter', token=op)[0] == 403


def test_a_policy_file_with_an_unknown_key_stops_the_role_before_anything_changes(acl, tmp_path):
    (tmp_path / 'auditor.hcl').write_text('namespace "nzc-c" {\n  capabilites = ["read-job"]\n}\n')
    text = access_play(
        [{'name': 'nzc-c'}, {'name': 'nzc-d'}],
        nomad_access_operator_name='nzc-c-operator',
        nomad_access_policies=[{'name': 'nzc-auditor', 'file': str(tmp_path / 'auditor.hcl')}],
    )
    before = [acl.api('GET', path) for path in ('/v1/namespaces', '/v1/acl/policies', '/v1/acl/tokens')]
    failed = acl.playbook(text)
    assert failed.returncode != 0
    assert 'unknown key \'capabilites\' in namespace \\"nzc-c\\"' in failed.stdout, failed.stdout[-3000:]
    assert [acl.api('GET', path) for path in ('/v1/namespaces', '/v1/acl/policies', '/v1/acl/tokens')] == before

    (tmp_path / 'auditor.hcl').write_text('namespace "nzc-c" {\n  capabilities = ["read-job"]\n}\n')
    fixed = acl.playbook(text)
    assert fixed.returncode == 0, fixed.stdout[-3000:]
    # The file lookup drops the last newline.
    assert acl.api('GET', '/v1/acl/policy/nzc-auditor')['Rules'] == (tmp_path / 'auditor.hcl').read_text().rstrip()
