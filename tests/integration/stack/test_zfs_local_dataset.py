"""zfs-local-dataset: democratic-csi as a root monolith on the Nomad client itself (the VM, whose pool holds
the data), deployed from the pack beside the zfs-generic-nfs plugin under its own plugin id and parent."""

import subprocess

import pytest

from conftest import CACHE_BIN, LOCAL_PARENT, REPO

VARS = REPO / 'packs' / 'zfs_csi' / '.ci' / 'vars-zfs-local-dataset-local-stack.hcl'
PLUGIN = 'zfs-local'


@pytest.fixture(scope='module')
def local_plugin(stack):
    """The pack's own path: `nomad-pack run` with the local stack's variables file, as the README gives it."""
    ran = subprocess.run([str(CACHE_BIN / 'nomad-pack'), 'run', str(REPO / 'packs' / 'zfs_csi'), '-f', str(VARS)],
                         capture_output=True, text=True, env=stack.env, stdin=subprocess.DEVNULL, timeout=600,
                         check=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    healthy = stack.module('nomad_csi_plugin_info', {'plugin_id': PLUGIN, 'wait_timeout': 300, 'jobs': ['zfs-local-node']})
    assert healthy['rc'] == 0 and healthy['healthy'], healthy
    yield
    stack.nomad('job', 'stop', '-purge', 'zfs-local-node', check=False)


def test_a_volume_is_a_local_dataset_and_a_second_allocation_reads_the_file(stack, vm, local_plugin):
    made = stack.volume('t-local', plugin_id=PLUGIN)
    assert made['rc'] == 0 and made['changed'], made
    out = vm.zfs('get', '-Hp', '-o', 'property,value', 'refquota,mountpoint', LOCAL_PARENT + '/t-local').stdout
    assert dict(line.split('\t') for line in out.splitlines())['refquota'] == str(1024 ** 3)
    written = stack.workload('t-local', 'write')
    assert written.startswith('written-by-')
    assert stack.workload('t-local', 'read') == written
    gone = stack.volume('t-local', plugin_id=PLUGIN, state='deleted')
    assert gone['rc'] == 0 and gone['changed'], gone
    assert vm.zfs('list', LOCAL_PARENT + '/t-local', check=False).returncode != 0
