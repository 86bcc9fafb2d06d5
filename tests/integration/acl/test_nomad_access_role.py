"""The nomad_access role against a real bootstrapped ACL agent: each tenant's token reaches its own namespace
only, the operator's token writes volumes but runs no tenant job, and a second run changes nothing."""

import json

import pytest

from acl_agent import access_play
from zfsvm_client import playbook_said

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
    assert first.returncode == 0, playbook_said(first)
    found = {}
    for name in ('csi-operator', 'nzc-a-submitter', 'nzc-b-submitter'):
        found[name] = acl.api('GET', '/v1/var/nomad-access/tokens/' + name)['Items']['secret']
        assert found[name] not in first.stdout + first.stderr
    return found


def state(acl):
    """Namespaces, policies and tokens: any write of the role shows here."""
    return [acl.api('GET', path) for path in ('/v1/namespaces', '/v1/acl/policies', '/v1/acl/tokens')]


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


def root_job(namespace, driver):
    """A job whose task would be root on the client: raw_exec's command, or docker's privileged container with the
    host's disk and /var/tmp (what tenant demo's token did on the VM before tenants lost docker)."""
    config = {
        'raw_exec': {'command': '/bin/id'},
        'docker': {
            'image': 'busybox:1.36',
            'privileged': True,
            'devices': [{'host_path': '/dev/vda'}],
            'volumes': ['/var/tmp:/host-tmp'],
            'command': 'touch',
            'args': ['/host-tmp/root-was-here'],
        },
    }[driver]
    task = {'Name': 't', 'Driver': driver, 'Config': config}
    group = {'Name': 'g', 'Count': 1, 'Tasks': [task]}
    return {'Job': {'ID': 'root-on-the-node', 'Namespace': namespace, 'Type': 'batch', 'TaskGroups': [group]}}


def test_a_tenant_uses_only_the_named_task_drivers(acl, secrets):
    """raw_exec runs a task as root on the node, past every volume's boundary, and so does docker (devices,
    pid_mode = "host", privileged, volumes), and java runs a task as any account of the client but root: tenants get
    exec only (nzc-b names it itself); a tenant given java or docker stops the role before anything changes."""
    drivers = {
        ns['Name']: (ns['Capabilities'] or {}).get('EnabledTaskDrivers') for ns in acl.api('GET', '/v1/namespaces')
    }
    assert drivers['nzc-a'] == ['exec'] and drivers['nzc-b'] == ['exec'], drivers
    for driver in ('raw_exec', 'docker'):
        refused = acl.api('PUT', '/v1/jobs', root_job('nzc-a', driver), token=secrets['nzc-a-submitter'])
        assert refused[0] == 500 and driver in refused[1] and 'not allowed' in refused[1], refused
    assert acl.api('GET', '/v1/jobs?namespace=nzc-a') == []

    before = state(acl)
    given = acl.playbook(
        access_play([{'name': 'nzc-a', 'enabled_task_drivers': ['exec', 'java', 'docker']}, {'name': 'nzc-b'}])
    )
    assert given.returncode != 0, given.stdout[-3000:]
    assert 'tenant nzc-a would get task driver(s) docker, java;' in given.stdout, given.stdout[-3000:]
    assert 'nothing was changed' in given.stdout and 'changed=0' in given.stdout, given.stdout[-3000:]
    assert state(acl) == before


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
    before = state(acl)
    failed = acl.playbook(text)
    assert failed.returncode != 0
    assert 'unknown key \'capabilites\' in namespace \\"nzc-c\\"' in failed.stdout, failed.stdout[-3000:]
    assert state(acl) == before

    (tmp_path / 'auditor.hcl').write_text('namespace "nzc-c" {\n  capabilities = ["read-job"]\n}\n')
    fixed = acl.playbook(text)
    assert fixed.returncode == 0, playbook_said(fixed)
    # The file lookup drops the last newline.
    assert acl.api('GET', '/v1/acl/policy/nzc-auditor')['Rules'] == (tmp_path / 'auditor.hcl').read_text().rstrip()


@pytest.mark.parametrize(
    'tenants, extra, message',
    [
        ([{'name': 'nzc-f'}, {'name': 'default'}], {}, "has a tenant named default, the plugin's namespace"),
        # The mover submits jobs, and default allows raw_exec.
        (
            [{'name': 'nzc-f'}],
            {'nomad_access_mover_name': 'nzc-f-mover', 'nomad_access_mover_namespaces': ['nzc-f', 'default']},
            'nomad_access_mover_namespaces names default, which is no tenant',
        ),
        # A job of the follow's ID there would get the mover's policy and read the follow's SSH key.
        (
            [{'name': 'nzc-f'}],
            {'nomad_access_mover_name': 'nzc-f-mover', 'nomad_access_follow_namespace': 'nzc-f'},
            "nomad_access_follow_namespace nzc-f is a tenant's namespace",
        ),
        # One name twice: the second policy would rewrite the first, the watchdog's token get node write.
        (
            [{'name': 'nzc-f'}],
            {'nomad_access_host_volume_operator_name': 'nzc-hv', 'nomad_access_fence_watchdog_name': 'nzc-hv'},
            'more than one policy or token named nzc-hv.',
        ),
    ],
)
def test_a_tenant_or_mover_in_a_namespace_with_every_driver_is_refused_before_anything_changes(
    acl, tenants, extra, message
):
    before = state(acl)
    failed = acl.playbook(access_play(tenants, **extra))
    assert failed.returncode != 0
    assert message in failed.stdout, failed.stdout[-3000:]
    assert state(acl) == before


def host_volume_job(source):
    """A job of tenant nzc-e that mounts a host volume; Nomad checks the mount when the job is registered."""
    group = {
        'Name': 'g',
        'Volumes': {'data': {'Name': 'data', 'Type': 'host', 'Source': source}},
        'Tasks': [{'Name': 't', 'Driver': 'exec', 'Config': {'command': '/bin/true'}}],
    }
    job = {'ID': 't-hv', 'Namespace': 'nzc-e', 'Type': 'batch', 'Datacenters': ['*'], 'TaskGroups': [group]}
    return {'Job': job}


def host_volume(namespace):
    caps = [{'AccessMode': 'single-node-writer', 'AttachmentMode': 'file-system'}]
    return {'Volume': {'Name': 'e-x', 'Namespace': namespace, 'PluginID': 'zfs-dataset', 'RequestedCapabilities': caps}}


def test_the_host_volume_operator_and_a_tenants_host_volumes(acl):
    play = access_play(
        [{'name': 'nzc-e', 'host_volumes': ['e-*']}],
        nomad_access_operator_name='nzc-e-operator',
        nomad_access_host_volume_operator_name='nzc-e-hv-operator',
        nomad_access_fence_watchdog_name='nzc-e-fence',
        nomad_access_mover_name='nzc-e-mover',
        nomad_access_follow_namespace='nzc-e-follow',
    )
    ran = acl.playbook(play)
    assert ran.returncode == 0, playbook_said(ran)
    hv, fence, submitter, mover = (
        acl.api('GET', '/v1/var/nomad-access/tokens/' + name)['Items']['secret']
        for name in ('nzc-e-hv-operator', 'nzc-e-fence', 'nzc-e-submitter', 'nzc-e-mover')
    )
    # The host_volume_plugin role's checks, and host volumes in the tenant's namespace only.
    assert acl.api('GET', '/v1/agent/self', token=hv)['config']['ACL']['Enabled'] is True
    assert len(acl.api('GET', '/v1/nodes', token=hv)) == 1
    assert acl.api('GET', '/v1/volumes?type=host&namespace=nzc-e', token=hv) == []
    # Nomad passes its ACL check for a create in nzc-e and stops at placement: no node has the plugin.
    allowed = acl.api('PUT', '/v1/volume/host/create', host_volume('nzc-e'), token=hv)
    assert allowed[0] != 403 and 'could not place volume' in allowed[1], allowed
    assert acl.api('PUT', '/v1/volume/host/create', host_volume('default'), token=hv)[0] == 403
    assert acl.api('GET', '/v1/jobs?namespace=nzc-e', token=hv)[0] == 403
    # The fence watchdog's node metadata, which the role writes (host_volume_plugin_fence_after); not a tenant.
    meta = {'Meta': {'nomad_zfs_csi.fence_after': '30'}}
    assert acl.api('POST', '/v1/client/metadata', meta, token=hv)['Dynamic']['nomad_zfs_csi.fence_after'] == '30'
    assert acl.api('POST', '/v1/client/metadata', meta, token=submitter)[0] == 403
    acl.api('POST', '/v1/client/metadata', {'Meta': {'nomad_zfs_csi.fence_after': None}}, token=hv)
    # The fence watchdog's token, which every client with a watchdog keeps in a file: its node, read, and no write
    # of any node's metadata (it would advertise a watchdog a node does not run), nor anything else.
    node = acl.api('GET', '/v1/nodes', token=fence)[0]['ID']
    assert acl.api('GET', '/v1/node/' + node, token=fence)['Status'] == 'ready'
    for method, path, body in (
        ('POST', '/v1/client/metadata', meta),
        ('GET', '/v1/agent/self', None),
        ('GET', '/v1/jobs?namespace=nzc-e', None),
        ('GET', '/v1/var/nomad-access/tokens/nzc-e-fence', None),
    ):
        denied = acl.api(method, path, body, token=fence)
        assert isinstance(denied, tuple) and denied[0] == 403, (method, path, denied)
    # The tenant's job may mount a host volume its policy names, and no other.
    assert 'EvalID' in acl.api('PUT', '/v1/jobs', host_volume_job('e-data'), token=submitter)
    refused = acl.api('PUT', '/v1/jobs', host_volume_job('other-data'), token=submitter)
    assert refused[0] == 403, refused
    acl.api('DELETE', '/v1/job/t-hv?namespace=nzc-e&purge=true')

    # The mover: what host_volume_move reads and writes in the tenant's namespace, and nothing of other namespaces'.
    assert acl.api('GET', '/v1/agent/self', token=mover)['config']['ACL']['Enabled'] is True
    node = acl.api('GET', '/v1/nodes', token=mover)[0]['ID']
    assert acl.api('GET', '/v1/node/%s/allocations' % node, token=mover) == []
    assert acl.api('GET', '/v1/volumes?type=host&namespace=nzc-e', token=mover) == []
    allowed = acl.api('PUT', '/v1/volume/host/create', host_volume('nzc-e'), token=mover)
    assert allowed[0] != 403 and 'could not place volume' in allowed[1], allowed
    journal = {'Namespace': 'nzc-e', 'Path': 'nomad-zfs-csi/moves/e-x', 'Items': {'step': 'stopped'}}
    assert acl.api('PUT', '/v1/var/nomad-zfs-csi/moves/e-x?namespace=nzc-e', journal, token=mover)['Path']
    assert acl.api('DELETE', '/v1/var/nomad-zfs-csi/moves/e-x?namespace=nzc-e', token=mover) in (None, '', {})
    # The jobs it stopped, run again: they mount the tenant's host volumes, and nothing else.
    assert 'EvalID' in acl.api('PUT', '/v1/jobs', host_volume_job('e-data'), token=mover)
    assert acl.api('PUT', '/v1/jobs', host_volume_job('other-data'), token=mover)[0] == 403
    acl.api('DELETE', '/v1/job/t-hv?namespace=nzc-e&purge=true')
    other = {'Namespace': 'nzc-e', 'Path': 'nomad-zfs-csi/other', 'Items': {'x': 'y'}}
    for method, path, body in (
        ('PUT', '/v1/var/nomad-zfs-csi/other?namespace=nzc-e', other),
        ('GET', '/v1/var/nomad-access/tokens/nzc-e-submitter', None),
        ('GET', '/v1/jobs?namespace=default', None),
        ('PUT', '/v1/volume/host/create', host_volume('default')),
        ('GET', '/v1/acl/tokens', None),
    ):
        denied = acl.api(method, path, body, token=mover)
        assert isinstance(denied, tuple) and denied[0] == 403, (method, path, denied)

    # The follow controller's: the mover's rules and its lock, bound to its job in a namespace of raw_exec alone.
    follow = acl.api('GET', '/v1/acl/policy/nzc-e-mover-follow')
    assert follow['JobACL'] == {'Namespace': 'nzc-e-follow', 'JobID': 'nomad-zfs-csi-follow', 'Group': '', 'Task': ''}
    assert acl.api('GET', '/v1/acl/policy/nzc-e-mover')['Rules'] in follow['Rules']
    assert 'path "nomad-zfs-csi/follow/lock/*"' in follow['Rules'], follow['Rules']
    drivers = acl.api('GET', '/v1/namespace/nzc-e-follow')['Capabilities']['EnabledTaskDrivers']
    assert drivers == ['raw_exec']

    again = acl.playbook(play)
    assert again.returncode == 0 and 'changed=0' in again.stdout, again.stdout[-3000:]


FOLLOW = {
    'host_volume_follow_ssh_private_key': 'not read before the checks',
    'host_volume_follow_known_hosts': 'storage-1 ssh-ed25519 AAAA',
    'host_volume_follow_inventory': {'nomad': {'hosts': {'runner': {'ansible_connection': 'local'}}}},
    'host_volume_follow_node_ids': ['4f1c6a52-0b2e-93d3-1e0c-7d5b2f0e9a11'],
}


@pytest.mark.parametrize(
    'given, message',
    [
        # Any client may join the admin pool: the job is pinned to named clients.
        ({'host_volume_follow_node_ids': []}, 'host_volume_follow_node_ids is empty. Any client may join node pool'),
        # The job's own token, SSH options and home are its own; a name that is none would break its env file.
        (
            {'host_volume_follow_environment': {'NOMAD_TOKEN': 'x', 'A B': 'y', 'PATH': '/usr/bin'}},
            'host_volume_follow_environment names A B, NOMAD_TOKEN: give names of letters, digits and _',
        ),
    ],
    ids=['no-node-ids', 'reserved-environment'],
)
def test_the_follow_controllers_role_refuses_an_unpinned_job_or_its_own_settings_before_anything_changes(
    acl, given, message
):
    role = {'role': 'nomad_zfs.csi.host_volume_follow', 'vars': dict(FOLLOW, **given)}
    play = [{'name': 'Follow', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'roles': [role]}]
    before = state(acl) + [acl.api('GET', path) for path in ('/v1/jobs?namespace=*', '/v1/vars?namespace=*')]
    failed = acl.playbook(json.dumps(play))
    assert failed.returncode != 0 and message in failed.stdout, failed.stdout[-3000:]
    assert 'Nothing was changed.' in failed.stdout
    assert state(acl) + [acl.api('GET', path) for path in ('/v1/jobs?namespace=*', '/v1/vars?namespace=*')] == before
