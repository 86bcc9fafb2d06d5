"""Verify the Nomad half after site.yml, through the agent's HTTP API."""

import json
import os
import urllib.request
from pathlib import Path

import pytest

NOMAD = 'http://127.0.0.1:4646'
KEY = Path(os.environ['MOLECULE_EPHEMERAL_DIRECTORY']) / 'id_ed25519'


def api(path):
    with urllib.request.urlopen(NOMAD + path, timeout=10) as resp:
        return json.loads(resp.read())


def test_plugin_is_healthy():
    plugin = api('/v1/plugin/csi/zfs')
    assert plugin['ControllerRequired'] is True
    assert (plugin['ControllersHealthy'], plugin['ControllersExpected']) == (1, 1)
    assert (plugin['NodesHealthy'], plugin['NodesExpected']) == (1, 1)


def test_volume_has_the_declared_capabilities():
    volume = api('/v1/volume/csi/demo')
    assert volume['PluginID'] == 'zfs' and volume['Schedulable'] is True
    assert volume['RequestedCapabilities'] == [{'AccessMode': 'single-node-writer', 'AttachmentMode': 'file-system'}]
    assert volume['Capacity'] == 1024 ** 3


def test_secret_is_a_nomad_variable():
    variable = api('/v1/var/nomad/jobs/zfs-csi')
    assert variable['Items'] == {'ssh_private_key': KEY.read_text().rstrip('\n')}


@pytest.mark.parametrize('job', ['zfs-controller', 'zfs-node'])
def test_secret_is_absent_from_every_job_version(job):
    secret_line = KEY.read_text().splitlines()[1]  # a line of the key's base64 body
    versions = api('/v1/job/%s/versions' % job)['Versions']
    assert versions
    for version in versions:
        assert secret_line not in json.dumps(version)
        templates = [t['EmbeddedTmpl'] for group in version['TaskGroups'] for task in group['Tasks']
                     for t in task['Templates'] or []]
        # The job reads the key at run time instead.
        assert any('nomadVar "nomad/jobs/zfs-csi"' in t for t in templates)
