"""Verify the Nomad half after site.yml: through the agent's HTTP API, and on the storage host, the
dataset democratic-csi made for the volume."""

import json
import os
import urllib.error
from pathlib import Path

import pytest
import testinfra

KEY = Path(os.environ['ZFSVM_KEY'])
DATASET = 'tank/nomad/csi/demo'


@pytest.fixture(scope='module')
def zfsvm():
    return testinfra.get_host('ansible://zfsvm', ansible_inventory=os.environ['MOLECULE_INVENTORY_FILE'])


def test_plugin_is_healthy(nomad_api):
    plugin = nomad_api('/v1/plugin/csi/zfs')
    assert plugin['ControllerRequired'] is True
    assert (plugin['ControllersHealthy'], plugin['ControllersExpected']) == (1, 1)
    assert (plugin['NodesHealthy'], plugin['NodesExpected']) == (1, 1)


def test_volume_has_the_declared_capabilities(nomad_api):
    volume = nomad_api('/v1/volume/csi/demo?namespace=demo')
    assert volume['PluginID'] == 'zfs' and volume['Schedulable'] is True
    assert volume['RequestedCapabilities'] == [{'AccessMode': 'single-node-writer', 'AttachmentMode': 'file-system'}]
    assert volume['Capacity'] == 1024**3


def test_the_key_is_the_controllers_own_nomad_variable_and_the_node_job_has_none(nomad_api):
    variable = nomad_api('/v1/var/nomad/jobs/zfs-controller')
    assert variable['Items'] == {'ssh_private_key': KEY.read_text().rstrip('\n')}
    with pytest.raises(urllib.error.HTTPError) as missing:
        nomad_api('/v1/var/nomad/jobs/zfs-node')
    assert missing.value.code == 404


@pytest.mark.parametrize('job', ['zfs-controller', 'zfs-node'])
def test_secret_is_absent_from_every_job_version(nomad_api, job):
    secret_line = KEY.read_text().splitlines()[1]  # a line of the key's base64 body
    versions = nomad_api('/v1/job/%s/versions' % job)['Versions']
    assert versions
    for version in versions:
        assert secret_line not in json.dumps(version)
        templates = [
            t['EmbeddedTmpl']
            for group in version['TaskGroups']
            for task in group['Tasks']
            for t in task['Templates'] or []
        ]
        # The controller reads the key at run time instead; the node job reads none.
        reads = any('nomadVar "nomad/jobs/%s"' % job in t for t in templates)
        assert reads == (job == 'zfs-controller'), templates


def test_democratic_csi_made_the_volume_a_quotad_shared_dataset(zfsvm):
    props = zfsvm.check_output('/usr/sbin/zfs get -Hp -o property,value refquota,mounted,sharenfs %s', DATASET)
    assert props.splitlines() == ['refquota\t%d' % 1024**3, 'mounted\tyes', 'sharenfs\trw=@127.0.0.1/32,no_root_squash']
    assert '/tank/nomad/csi/demo' in zfsvm.check_output('exportfs -s')
    # Created by csi through the delegation and the wrapper, and marked as democratic-csi's.
    assert zfsvm.check_output('/usr/sbin/zfs get -H -o value democratic-csi:csi_volume_name %s', DATASET) == 'demo'


def test_the_plugin_runs_from_source_in_the_vm(zfsvm):
    procs = zfsvm.check_output('ps -eo args')
    assert '/opt/nzc/bin/node /opt/nzc/democratic-csi/bin/democratic-csi' in procs
    assert '--csi-mode=controller' in procs and '--csi-mode=node' in procs


def test_tenant_demo_reaches_its_own_volume_and_nothing_in_the_plugins_namespace(nomad_api):
    """site.yml's nomad_access play made the token; the volume is in the tenant's namespace."""
    submitter = nomad_api('/v1/var/nomad-access/tokens/demo-submitter')['Items']['secret']
    assert nomad_api('/v1/volume/csi/demo?namespace=demo', token=submitter)['Namespace'] == 'demo'
    for path in ('/v1/jobs?namespace=default', '/v1/var/nomad/jobs/zfs-controller'):
        with pytest.raises(urllib.error.HTTPError) as refused:
            nomad_api(path, token=submitter)
        assert refused.value.code == 403, path
