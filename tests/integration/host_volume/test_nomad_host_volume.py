"""nomad_host_volume against a real `nomad agent -dev` on this host with Nomad's built-in mkdir plugin: the module's
Nomad flows (find by name, create, update by ID, check mode, delete) need no ZFS. The zfs-dataset plugin's datasets
are tested on the VM (tests/integration/stack/test_host_volume_plugin.py)."""

import json
import os
import tempfile
import urllib.request
from pathlib import Path

import pytest

from nomad_agent import start_agent
from zfsvm_client import ansible_env, run_local_module

SCRATCH = {'name': 'scratch', 'plugin_id': 'mkdir', 'capacity_max': '1M', 'parameters': {'mode': '0750'}}


class HostAgent(object):
    def __init__(self, agent):
        self.agent = agent

    def api(self, path):
        with urllib.request.urlopen(self.agent.address + path, timeout=30) as resp:
            return json.loads(resp.read())

    def volumes(self):
        return self.api('/v1/volumes?type=host')

    def module(self, args, check=False, diff=False):
        env = ansible_env(NOMAD_ADDR=self.agent.address)
        result = run_local_module(env, 'nomad_host_volume', args, check=check, diff=diff)
        result['rc'] = result.rc
        return result


@pytest.fixture(scope='module')
def nomad():
    agent = start_agent(Path(tempfile.mkdtemp(prefix='nzc-hostvol-')))
    try:
        yield HostAgent(agent)
    finally:
        agent.destroy()


def test_create_rerun_update_and_delete(nomad):
    made = nomad.module(SCRATCH)
    assert made['changed'] and made['volume']['state'] == 'ready', made
    path = made['volume']['host_path']
    assert os.path.isdir(path) and oct(os.stat(path).st_mode & 0o777) == '0o750', 'the plugin made the directory'

    again = nomad.module(SCRATCH)
    assert again['changed'] is False and again['volume'] == made['volume']

    index = nomad.api('/v1/volume/host/' + made['volume']['id'])['ModifyIndex']
    raised = dict(SCRATCH, capacity_max='2M')
    checked = nomad.module(raised, check=True, diff=True)
    assert checked['changed'] and checked['changed_fields'] == ['capacity_max']
    assert nomad.api('/v1/volume/host/' + made['volume']['id'])['ModifyIndex'] == index, 'check mode wrote'
    updated = nomad.module(raised)
    assert updated['volume']['id'] == made['volume']['id'] and updated['volume']['capacity_max'] == 2 << 20
    assert updated['volume'] == dict(checked['volume'], state='ready')
    assert nomad.module(raised)['changed'] is False

    gone = nomad.module({'name': 'scratch', 'state': 'deleted'})
    assert gone['changed'] and nomad.volumes() == [] and not os.path.exists(path)
    assert nomad.module({'name': 'scratch', 'state': 'deleted'})['changed'] is False


def test_an_unknown_plugin_says_what_a_node_needs_and_nothing_is_made(nomad):
    failed = nomad.module(dict(SCRATCH, name='other', plugin_id='zfs-dataset'))
    assert failed.failed and 'no node meets constraints' in failed['msg']
    assert 'plugins.host_volume.zfs-dataset.version' in failed['msg'] and 'host_volume_plugin role' in failed['msg']
    assert nomad.volumes() == []


def test_another_plugin_for_a_volume_is_refused_before_any_write(nomad):
    made = nomad.module(dict(SCRATCH, name='kept'))
    index = nomad.api('/v1/volume/host/' + made['volume']['id'])['ModifyIndex']
    failed = nomad.module(dict(SCRATCH, name='kept', plugin_id='zfs-dataset'))
    assert failed.failed and "plugin_id of volume kept is 'mkdir' and cannot change" in failed['msg']
    assert nomad.api('/v1/volume/host/' + made['volume']['id'])['ModifyIndex'] == index
    assert nomad.module({'name': 'kept', 'state': 'deleted'})['changed']


def test_register_records_an_existing_directory_on_its_node(nomad, tmp_path):
    [node] = nomad.api('/v1/nodes')
    args = {'name': 'registered', 'mode': 'register', 'host_path': str(tmp_path), 'node_id': node['ID']}
    made = nomad.module(args)
    assert made['changed'] and made['volume']['host_path'] == str(tmp_path) and made['volume']['state'] == 'ready'
    assert made['volume']['plugin_id'] == ''
    assert nomad.module(args)['changed'] is False
    missing = nomad.module(dict(args, name='nowhere', host_path=str(tmp_path / 'nowhere')))
    assert missing.failed and 'could not verify host path' in missing['msg'], missing
    gone = nomad.module({'name': 'registered', 'state': 'deleted'})
    assert gone['changed'] and tmp_path.is_dir(), 'a registered volume is deleted from Nomad only'


def test_many_volumes_in_one_task(nomad):
    items = [dict(SCRATCH, name='many-a'), dict(SCRATCH, name='many-b', capacity_max='2M')]
    made = nomad.module({'volumes': items})
    assert made['changed'] and [v['volume']['state'] for v in made['volumes']] == ['ready', 'ready'], made
    assert nomad.module({'volumes': items})['changed'] is False
    bad = nomad.module({'volumes': items + [dict(SCRATCH, name='many-c', capacity_max='12XB')]})
    assert bad.failed and "volumes[2].capacity_max: '12XB' is not a size" in bad['msg']
    assert sorted(v['Name'] for v in nomad.volumes()) == ['many-a', 'many-b'], 'a bad item changes nothing'
    gone = nomad.module({'volumes': [{'name': 'many-a', 'state': 'deleted'}, {'name': 'many-b', 'state': 'deleted'}]})
    assert gone['changed'] and nomad.volumes() == []
