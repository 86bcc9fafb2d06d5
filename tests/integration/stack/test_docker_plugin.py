"""The pack's production path: democratic-csi's image under Nomad's docker driver, privileged on the node, from
`nomad-pack run` with the zfs-generic-nfs variables a production user sets (and the image built here in place of
the pinned upstream one), beside the stack's raw_exec plugin under its own plugin id. An operator's workloads
(namespace default: no tenant gets docker) use a volume of it under docker and under exec, and csi-sanity, the CSI
conformance suite, runs against it, and its controller suite against the zfs-generic-iscsi driver's plugin beside
it (test_iscsi_target.py's set-up)."""

import re

import pytest
from stack_layout import PARENT, REPO, STACK

import iscsi_stack
from csi_sanity import CONTROLLER, CONTROLLER_PARTS, PARTS, Sanity, run_suites, storage_state
from zfsvm_client import STOP_BACKUPS, without_backups

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

PLUGIN = 'zfs-docker'
JOBS = (PLUGIN + '-controller', PLUGIN + '-node')
VARS = REPO / 'packs' / 'zfs_csi' / '.ci' / 'vars-zfs-generic-nfs-docker-local-stack.hcl'
# The image the vars file names, which tests/zfsvm/zfsvm.sh imported (DCSI_IMAGE).
IMAGE = re.search(r'^image\s*=\s*"([^"]+)"', VARS.read_text(), re.M).group(1)
NAMESPACE = 'default'
VOLUME = 't-docker'
GIB = 1024**3


@pytest.fixture(scope='module')
def docker_plugin(stack, vm):
    """The controller job's own variable holds the key the storage host authorised for csi, as the pack's
    printed steps put it (the node job holds none); then the pack, and the plugin healthy on both jobs."""
    key = open(stack.env['ZFSVM_KEY']).read()
    with stack.pack_plugin(VARS, PLUGIN, JOBS, secrets={JOBS[0]: {'ssh_private_key': key}}):
        yield


def test_the_plugin_runs_its_image_under_docker_privileged_on_the_node(stack, vm, docker_plugin):
    for job in JOBS:
        task = stack.get('/v1/allocation/' + stack.running_alloc(job))['Job']['TaskGroups'][0]['Tasks'][0]
        assert (task['Driver'], task['Config']['image']) == ('docker', IMAGE), task
        assert task['Config']['privileged'] is True
    running = vm.sh("docker ps --format '{{.Image}} {{.Names}}'").stdout.splitlines()
    assert sum(line.startswith(IMAGE + ' plugin-') for line in running) == 2, running


def test_a_volume_of_it_is_written_under_docker_read_under_exec_expanded_and_snapshotted(stack, vm, docker_plugin):
    args = {'id': VOLUME, 'namespace': NAMESPACE, 'plugin_id': PLUGIN}
    made = stack.volume(VOLUME, **args)
    assert made['rc'] == 0 and made['changed'], made
    try:
        job = {'src': str(STACK / 'docker-workload.nomad'), 'variables': {'volume': VOLUME}, 'namespace': NAMESPACE}
        ran = stack.module('nomad_job', dict(job, wait_timeout=300))
        assert ran['rc'] == 0, ran
        alloc = ran['allocations'][0]['id']
        written = stack.nomad('alloc', 'logs', alloc, namespace=NAMESPACE).stdout.strip()
        stack.module('nomad_job', dict(job, state='absent', purge=True))
        assert written.startswith('written-under-docker-by-' + alloc)
        assert stack.workload(VOLUME, 'read', namespace=NAMESPACE) == written
        # On the dataset itself, as the storage host sees it. (test_tenant_access.py writes and reads a volume of
        # the raw_exec plugin.)
        assert vm.sh('cat /%s/%s/proof.txt' % (PARENT, VOLUME)).stdout.strip() == written

        grown = stack.volume(VOLUME, **dict(args, capacity_min='2G', capacity_max='2G'))
        assert grown['rc'] == 0 and grown['changed'], grown
        refquota = vm.zfs('get', '-Hp', '-o', 'value', 'refquota', PARENT + '/' + VOLUME).stdout.strip()
        assert refquota == str(2 * GIB)

        snapshot = {'plugin_id': PLUGIN, 'source_volume_id': VOLUME, 'name': 's1', 'namespace': NAMESPACE}
        taken = stack.module('nomad_csi_snapshot', snapshot)
        assert taken['rc'] == 0 and taken['changed'], taken
        # Beside sanoid's, whose timer may have fired since the create (seen in CI: autosnap_..._hourly and others).
        listed = without_backups(vm.zfs('list', '-H', '-t', 'snapshot', '-o', 'name', PARENT + '/' + VOLUME).stdout)
        assert listed.split() == [PARENT + '/' + VOLUME + '@s1'], listed
        gone = stack.module('nomad_csi_snapshot', dict(snapshot, state='absent'))
        assert gone['rc'] == 0 and gone['changed'], gone
    finally:
        deleted = stack.volume(VOLUME, **dict(args, state='deleted'))
    assert deleted['rc'] == 0 and deleted['changed'], deleted
    assert vm.zfs('list', PARENT + '/' + VOLUME, check=False).returncode != 0


@pytest.fixture
def no_backups(vm):
    """The backups' timers stopped for the run: an hourly pull bookmarks the newest snapshot it sent, whatever its
    name (seen in CI: tank/nomad/csi/t-role-src#r1 appeared mid-run), and they go back on afterwards."""
    vm.sh(STOP_BACKUPS)
    yield
    vm.sh("systemctl start sanoid.timer 'zfs-replication-pull@*.timer'", check=False)


@pytest.fixture
def iscsi_plugin(stack, vm):
    """The zfs-generic-iscsi driver's storage instance, initiator and plugin under docker; all gone afterwards."""
    with iscsi_stack.driver(stack, vm):
        yield


def test_csi_sanity_passes_against_it_and_touches_nothing_else(stack, vm, docker_plugin, iscsi_plugin, no_backups):
    """The whole suite against the NFS driver's plugin and the controller's suite against the iSCSI driver's
    beside it (each deployment's specs wait on SSH to the emulated guest and on democratic-csi's own
    sleeps): the NFS plugin's parts beside the iSCSI plugin's list specs, then the other way round. What they make
    they take back, and nothing else changes; no CHAP secret in a log."""
    suites = {
        'nfs': (Sanity(stack, vm, *JOBS), PARTS, []),
        'iscsi': (Sanity(stack, vm, *iscsi_stack.JOBS), CONTROLLER_PARTS, [CONTROLLER]),
    }

    def state():
        return storage_state(vm), vm.zfs('allow', iscsi_stack.PARENT).stdout, iscsi_stack.targets(vm)

    before = state()
    run_suites(vm, suites)
    assert state() == before
    assert suites['nfs'][0].leftovers() == []
    assert not iscsi_stack.logs_with_the_secret(stack, vm)
