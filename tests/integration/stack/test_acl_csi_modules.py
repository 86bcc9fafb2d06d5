"""The CSI write modules on an ACL-enabled Nomad, with tokens holding exactly docs/collection.md's capabilities and then
one fewer: the first run works on the real plugin, the second fails with a 403 that names what is missing.

The stack's agent has no ACLs, so a second agent with ACLs on runs on this host. The nomad_access role makes two
tenant namespaces and the operator's token with the management token; the csi_plugin role then deploys
democratic-csi under raw_exec, from the cached source, with the operator's token only. Its controller reaches the
VM's csi user over the forwarded SSH port (as csi-sanity's controller suite does) and makes real datasets under the
stack's parent; it mounts nothing, which is why it can run on this host.
"""

import tempfile
from pathlib import Path

import pytest
from stack_layout import PARENT

from acl_agent import PLUGIN_READ, AclAgent, access_play, namespace_caps
from nomad_agent import CACHE, start_agent
from zfsvm_client import playbook_said

SOURCE = 'democratic-csi/v1.9.4-f80d2daf097e'  # scripts/setup.sh's install of the vendored tarball
NS = 'default'


def caps(*names):
    return namespace_caps(NS, *names)


def volume(name):
    return {'id': name, 'plugin_id': 'zfs', 'capacity_min': '64M', 'capacity_max': '64M'}


WRITE = caps('csi-read-volume', 'csi-write-volume') + PLUGIN_READ

# module, its arguments, docs/collection.md's policy for it, the same minus one capability, what the 403 then names,
# and the arguments for the run with one fewer.
CASES = [
    (
        'nomad_csi_volume',
        volume('t-acl-a'),
        WRITE,
        caps('csi-read-volume', 'csi-write-volume'),
        'plugin read',
        volume('t-acl-b'),
    ),
    (
        'nomad_csi_volume',
        volume('t-acl-a'),
        WRITE,
        caps('csi-read-volume') + PLUGIN_READ,
        'csi-write-volume in namespace ' + NS,
        volume('t-acl-b'),
    ),
    (
        'nomad_csi_volume',
        volume('t-acl-a'),
        WRITE,
        caps('csi-write-volume') + PLUGIN_READ,
        'csi-read-volume (or csi-mount-volume, read-job) in namespace ' + NS,
        volume('t-acl-b'),
    ),
    (
        'nomad_csi_snapshot',
        {'plugin_id': 'zfs', 'source_volume_id': 't-acl-a', 'name': 'one'},
        WRITE,
        caps('csi-read-volume') + PLUGIN_READ,
        'csi-write-volume in namespace ' + NS,
        {'plugin_id': 'zfs', 'source_volume_id': 't-acl-a', 'name': 'two'},
    ),
    (
        'nomad_csi_snapshot_info',
        {'plugin_id': 'zfs', 'source_volume_id': 't-acl-a'},
        caps('csi-list-volume', 'csi-read-volume'),
        caps('csi-list-volume'),
        'csi-read-volume (or csi-mount-volume, read-job) in namespace ' + NS,
    ),
    (
        'nomad_csi_snapshot_info',
        {'plugin_id': 'zfs'},
        caps('csi-list-volume'),
        caps('read-job'),
        'csi-list-volume',
    ),
]


ACCESS = access_play([{'name': 'nzc-a'}, {'name': 'nzc-b'}])


def deploy(acl, stack, token):
    """The csi_plugin role against the ACL agent with token, on this host's paths; no volumes of its own."""
    pack_vars = {
        'node_path': '/usr/bin/node',
        'democratic_csi_dir': str(CACHE / SOURCE),
        'ssh_port': int(stack.vm.port),
        'stage_publish_base_dir': str(acl.agent.data_dir / 'client' / 'csi' / 'node' / 'zfs'),
    }
    extra = {
        'csi_plugin_nomad_addr': acl.address,
        'csi_plugin_nomad_token': token,
        'csi_plugin_pack_vars': pack_vars,
        'csi_plugin_volumes': [],
    }
    return stack.csi_plugin_role(extra)


@pytest.fixture(scope='module')
def acl(stack):
    # A short path: the plugin's socket under the data dir must fit the 108-byte unix socket limit.
    agent = start_agent(Path(tempfile.mkdtemp(prefix='nzc-acl-')), extra_config='acl {\n  enabled = true\n}\n')
    acl = AclAgent(agent)
    try:
        access = acl.playbook(ACCESS)
        assert access.returncode == 0, playbook_said(access)
        acl.tokens = {
            name: acl.api('GET', '/v1/var/nomad-access/tokens/' + name)['Items']['secret']
            for name in ('csi-operator', 'nzc-a-submitter', 'nzc-b-submitter')
        }
        ran = deploy(acl, stack, acl.tokens['csi-operator'])
        assert ran.returncode == 0, playbook_said(ran)
        assert acl.tokens['csi-operator'] not in ran.stdout + ran.stderr
        yield acl
    finally:
        acl.api('DELETE', '/v1/job/t-acl-thief?purge=true&namespace=nzc-b')
        acl.module('nomad_csi_volume', {'id': 't-acl-ns', 'namespace': 'nzc-a', 'state': 'deleted'})
        for name in ('t-acl-b', 't-acl-a'):
            for snap in ('one', 'two'):
                acl.module(
                    'nomad_csi_snapshot',
                    {'plugin_id': 'zfs', 'source_volume_id': name, 'name': snap, 'state': 'absent'},
                )
            acl.module('nomad_csi_volume', {'id': name, 'state': 'deleted'})
        for job in ('zfs-controller', 'zfs-node'):
            acl.api('DELETE', '/v1/job/%s?purge=true' % job)
        agent.destroy()


@pytest.mark.parametrize('index', range(len(CASES)), ids=['%s-%d' % (case[0], i) for i, case in enumerate(CASES)])
def test_exactly_the_tables_capabilities_and_one_fewer(acl, vm, index):
    module, args, exact, fewer, named = CASES[index][:5]
    second = CASES[index][5] if len(CASES[index]) > 5 else args
    acl.exactly_then_one_fewer('csi-%d' % index, module, args, exact, second, fewer, named)
    if module == 'nomad_csi_volume':
        assert vm.zfs('list', '-H', PARENT + '/t-acl-a', check=False).returncode == 0, 'democratic-csi made it'
        assert vm.zfs('list', '-H', PARENT + '/t-acl-b', check=False).returncode != 0, 'nothing made it'


THIEF = """job "t-acl-thief" {
  namespace   = "nzc-b"
  type        = "batch"
  datacenters = ["*"]
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "t-acl-ns"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
"""


def test_a_tenant_reaches_no_volume_of_another_namespace(acl, vm):
    """Volumes are bound to their namespace: B's submitter can neither read A's volume and snapshots nor claim it
    from a job of B's, and Nomad says why."""
    made = acl.module('nomad_csi_volume', dict(volume('t-acl-ns'), namespace='nzc-a'), token=acl.tokens['csi-operator'])
    assert made['rc'] == 0, made
    assert vm.zfs('list', '-H', PARENT + '/t-acl-ns', check=False).returncode == 0
    a, b = acl.tokens['nzc-a-submitter'], acl.tokens['nzc-b-submitter']
    assert acl.api('GET', '/v1/volume/csi/t-acl-ns?namespace=nzc-a', token=a)['ID'] == 't-acl-ns'
    assert acl.api('GET', '/v1/volume/csi/t-acl-ns?namespace=nzc-a', token=b)[0] == 403
    assert acl.api('GET', '/v1/volumes/snapshot?plugin_id=zfs&namespace=nzc-a', token=b)[0] == 403
    info = acl.module('nomad_csi_volume_info', {'plugin_id': 'zfs', 'namespace': 'nzc-a'}, token=b)
    assert info.failed and 'answered 403' in info['msg'], info

    # B's job names the volume: Nomad looks it up in B's namespace only, so nothing is placed.
    parsed = acl.api('POST', '/v1/jobs/parse?namespace=nzc-b', {'JobHCL': THIEF, 'Canonicalize': True}, token=b)
    registered = acl.api('PUT', '/v1/jobs?namespace=nzc-b', {'Job': parsed}, token=b)
    assert 'EvalID' in registered, registered
    evaluation = acl.wait_for_eval(registered['EvalID'], 'nzc-b', token=b)
    filtered = evaluation['FailedTGAllocs']['g']['ConstraintFiltered']
    assert filtered == {'missing CSI Volume t-acl-ns': 1}, evaluation
    volume_now = acl.api('GET', '/v1/volume/csi/t-acl-ns?namespace=nzc-a')
    assert volume_now['WriteAllocs'] == {} and volume_now['ReadAllocs'] == {}, volume_now
