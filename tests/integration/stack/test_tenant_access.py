"""The local stack with ACLs on, as `make demo` leaves it: site.yml made tenant demo's submitter token, and that
token runs the demo's workload in namespace demo on a CSI volume and a host volume, and nothing elsewhere."""

import pytest

from conftest import HOST_VOLUMES, WORKLOAD

NAMESPACE = 'demo'  # inventories/local/group_vars/nomad.yml's tenant, with host_volumes [demo-hv]


@pytest.fixture(scope='module')
def submitter(stack):
    return stack.secret('demo-submitter')


@pytest.fixture
def demo_hv(stack):
    """Host volume demo-hv in namespace demo, made and deleted on the host volume operator's token."""
    operator = {'NOMAD_TOKEN': stack.secret('host-volume-operator')}
    args = {'name': 'demo-hv', 'namespace': NAMESPACE}
    made = stack.module('nomad_host_volume', dict(args, capacity_max='64MiB'), extra_env=operator)
    assert made['rc'] == 0, made
    yield made
    deleted = stack.module('nomad_host_volume', dict(args, state='deleted'), extra_env=operator)
    assert deleted['rc'] == 0, deleted


def test_the_submitter_runs_its_workload_on_its_csi_volume(stack, submitter):
    written = stack.workload('demo', 'write', token=submitter, namespace=NAMESPACE)
    assert written.startswith('written-by-')
    assert stack.workload('demo', 'read', token=submitter, namespace=NAMESPACE) == written


def test_the_submitter_runs_its_workload_on_its_host_volume(stack, submitter, demo_hv, vm):
    written = stack.workload('demo-hv', 'write', volume_type='host', token=submitter, namespace=NAMESPACE)
    assert stack.workload('demo-hv', 'read', volume_type='host', token=submitter, namespace=NAMESPACE) == written
    assert vm.sh('cat /%s/%s/demo-hv/proof.txt' % (HOST_VOLUMES, NAMESPACE)).stdout.strip() == written


@pytest.mark.parametrize(
    'argv',
    [
        ('job', 'status', '-namespace', 'default'),
        ('volume', 'status', '-namespace', 'default', 'demo'),
        ('var', 'get', 'nomad/jobs/zfs-controller'),
        ('var', 'get', 'nomad-access/tokens/csi-operator'),
        ('job', 'run', '-detach', '-namespace', 'default', str(WORKLOAD)),
    ],
)
def test_the_submitter_gets_403_outside_its_namespace(stack, submitter, argv):
    refused = stack.nomad(*argv, token=submitter, check=False)
    assert refused.returncode != 0 and '403' in refused.stderr, refused.stdout + refused.stderr
