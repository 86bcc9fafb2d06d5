"""Verify the host_volume_plugin role after site.yml: the plugin as installed in the VM, and the node reporting it."""

import json
import os
import re
from pathlib import Path

import pytest
import testinfra

# The collection's one version (galaxy.yml), which the plugin's fingerprint reports.
VERSION = re.search(r'^version: (\S+)$', (Path(__file__).parents[4] / 'galaxy.yml').read_text(), re.M).group(1)
PLUGIN = '/usr/local/libexec/nomad-host-volume-plugins/zfs-dataset'  # scripts/nomad-dev.sh's host_volume_plugin_dir


@pytest.fixture(scope='module')
def zfsvm():
    return testinfra.get_host('ansible://zfsvm', ansible_inventory=os.environ['MOLECULE_INVENTORY_FILE'])


def test_the_plugin_is_root_owned_and_executable(zfsvm):
    plugin = zfsvm.file(PLUGIN)
    assert plugin.user == 'root' and plugin.mode == 0o755
    conf = zfsvm.file(PLUGIN + '.conf')
    assert conf.user == 'root' and conf.mode == 0o644
    # inventories/local's host_volume_clients variables.
    assert conf.content_string.splitlines() == [
        'parent=tank/nomad/volumes',
        'volume_quota_percent=200',
        'volume_uid=65534',
        'volume_gid=65534',
    ]
    assert not zfsvm.file('/etc/nomad-zfs-csi/host-volume.conf').exists, 'where release 0.1.0 kept it'


def test_the_plugin_answers_a_fingerprint_with_no_environment(zfsvm):
    assert json.loads(zfsvm.check_output('env -i %s fingerprint', PLUGIN)) == {'version': VERSION}


def test_the_plugin_refuses_a_name_outside_one_dataset_component_and_runs_no_zfs(zfsvm):
    run = zfsvm.run(
        'env -i DHV_NAMESPACE=default DHV_VOLUME_NAME=../../etc DHV_VOLUME_ID=%s %s create',
        '00000000-0000-4000-8000-000000000000',
        PLUGIN,
    )
    assert run.rc == 1 and "volume name '../../etc' cannot name a dataset" in json.loads(run.stdout)['error']


def test_the_node_reports_the_plugin(nomad_api):
    [node] = nomad_api('/v1/nodes')
    attributes = nomad_api('/v1/node/' + node['ID'])['Attributes']
    assert attributes['plugins.host_volume.zfs-dataset.version'] == VERSION


def test_the_parent_keeps_setuid_and_devices_off(zfsvm):
    out = zfsvm.check_output('/usr/sbin/zfs get -H -o value setuid,devices tank/nomad/volumes')
    assert out.split() == ['off', 'off']
