"""nomad_csi_volume on the stack, where democratic-csi makes each volume a dataset under the parent: check mode,
idempotence, updates, a running workload's claim (which a delete must not destroy), registration of existing data,
and bad input."""

from stack_layout import PARENT

from zfsvm_client import wait_until

# A service task, so the claim is held while the test looks at it.
WORKLOAD = """job "workload" {
  datacenters = ["*"]
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "%s"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "write" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo written-by-$NOMAD_ALLOC_ID > /data/proof.txt && sleep 3600"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
"""


def volume_args(**extra):
    args = {'id': 't-vol-a', 'plugin_id': 'zfs', 'capacity_min': '1G', 'capacity_max': '2G'}
    args.update(extra)
    return args


def exists(vm, name):
    return vm.zfs('list', '-H', name, check=False).returncode == 0


def test_create_is_idempotent_and_check_mode_changes_nothing(stack, run_local, vm):
    checked = run_local('nomad_csi_volume', volume_args(), check=True)
    assert checked['changed'] and not exists(vm, PARENT + '/t-vol-a')

    made = run_local('nomad_csi_volume', volume_args(), diff=True)
    assert made['changed'] and made['volume']['plugin_id'] == 'zfs', made
    assert exists(vm, PARENT + '/t-vol-a')  # democratic-csi's CreateVolume ran
    assert made['volume']['capacity'] == 1024**3

    again = run_local('nomad_csi_volume', volume_args())
    assert again['changed'] is False and again['changed_fields'] == []

    wider = volume_args(
        capabilities=[
            {'access_mode': 'single-node-writer', 'attachment_mode': 'file-system'},
            {'access_mode': 'single-node-reader-only', 'attachment_mode': 'file-system'},
        ]
    )
    assert run_local('nomad_csi_volume', wider, check=True)['changed_fields'] == ['capabilities']
    updated = run_local('nomad_csi_volume', wider)
    assert updated['changed'] and len(updated['volume']['capabilities']) == 2, updated
    assert run_local('nomad_csi_volume', wider)['changed'] is False


def test_a_running_workload_holds_the_claim_and_sees_its_file(stack, run_local, vm):
    assert not run_local('nomad_csi_volume', volume_args(id='t-vol-w')).failed
    job = run_local('nomad_job', {'content': WORKLOAD % 't-vol-w', 'wait_timeout': 300})
    assert not job.failed, job
    alloc = job['allocations'][0]['id']
    try:
        wait_until(
            lambda: vm.sh('cat /%s/t-vol-w/proof.txt' % PARENT, check=False).stdout,
            lambda proof: proof.strip() == 'written-by-' + alloc,
            timeout=60,
            why='the task wrote nothing onto the dataset',
        )
        assert list(stack.get('/v1/volume/csi/t-vol-w')['WriteAllocs']) == [alloc]
        info = run_local('nomad_csi_volume_info', {'id': 't-vol-w', 'claims': True})
        [volume] = info['volumes']
        assert volume['writers'] == 1 and volume['capacity'] == 1024**3, volume
        assert [(c['allocation'], c['job'], c['access']) for c in volume['claims']] == [(alloc, 'workload', 'write')]
        # Deleting it now would have Nomad's plugin destroy the dataset under the task before Nomad refused
        # ("volume in use"), as seen on this VM before the module refused it: in check mode and for real.
        for check in (True, False):
            refused = run_local('nomad_csi_volume', volume_args(id='t-vol-w', state='deleted'), check=check)
            assert refused.failed and 'claimed by allocation %s of job workload (running)' % alloc[:8] in refused['msg']
        seen = stack.nomad('alloc', 'exec', alloc, 'cat', '/data/proof.txt')
        assert seen.stdout.strip() == 'written-by-' + alloc  # read back through the task's mount
        # The pack's node_mount_flags: the staging mount and the task's bind mount of it are nosuid and nodev, so
        # a setuid file or a device node the task writes there gives nothing to whoever runs it on the client.
        task_mount = stack.nomad('alloc', 'exec', alloc, 'grep', ' /data ', '/proc/mounts').stdout.splitlines()
        client_mounts = vm.sh('grep t-vol-w /proc/mounts').stdout.splitlines()
        assert len(task_mount) == 1 and len(client_mounts) >= 2, (task_mount, client_mounts)
        for line in task_mount + client_mounts:
            assert {'nosuid', 'nodev'} <= set(line.split()[3].split(',')), line
    finally:
        stack.nomad('job', 'stop', '-purge', 'workload', check=False)
    # Stopped, its claim is freed within seconds; the delete waits for that instead of failing.
    deleted = run_local('nomad_csi_volume', volume_args(id='t-vol-w', state='deleted'))
    assert deleted['changed'] and not exists(vm, PARENT + '/t-vol-w'), deleted


def test_register_then_absent_keeps_the_data(stack, run_local, vm):
    """An existing dataset under the parent is registered as a volume; deregistering leaves it and its file."""
    vm.zfs('create', '-o', 'refquota=1G', PARENT + '/t-pre-made')
    vm.sh('echo data > /%s/t-pre-made/keep.txt' % PARENT)
    reg = {
        'id': 't-vol-r',
        'plugin_id': 'zfs',
        'mode': 'register',
        'external_id': 't-pre-made',
        'context': {'origin': 'test'},
    }
    made = run_local('nomad_csi_volume', reg)
    assert made['changed'] and made['volume']['external_id'] == 't-pre-made', made
    assert run_local('nomad_csi_volume', reg)['changed'] is False

    moved = run_local('nomad_csi_volume', dict(reg, external_id='elsewhere'))
    assert moved.failed and 'deregister it first' in moved['msg']

    gone = run_local('nomad_csi_volume', {'id': 't-vol-r', 'state': 'absent'})
    assert gone['changed'] and 't-vol-r' not in [v['ID'] for v in stack.get('/v1/volumes?type=csi')]
    assert vm.sh('cat /%s/t-pre-made/keep.txt' % PARENT).stdout.strip() == 'data'
    assert run_local('nomad_csi_volume', {'id': 't-vol-r', 'state': 'absent'})['changed'] is False


def test_bad_input_names_the_field_and_changes_nothing(stack, run_local, vm):
    assert not run_local('nomad_csi_volume', volume_args(id='t-vol-b')).failed
    before = stack.get('/v1/volumes?type=csi'), vm.state(PARENT)
    cases = {
        'capacity_min': (volume_args(id='t-vol-x', capacity_min='12XB'), "capacity_min: '12XB' is not a size"),
        'id': (volume_args(id='no/slash'), "id 'no/slash' is not a Nomad volume ID"),
        'order': (volume_args(id='t-vol-x', capacity_min='2G', capacity_max='1G'), 'capacity_min (2G) is above'),
        'plugin': (volume_args(id='t-vol-b', plugin_id='other'), 'belongs to plugin zfs, not other'),
    }
    for field, (args, message) in cases.items():
        result = run_local('nomad_csi_volume', args)
        assert result.failed and message in result['msg'], (field, result)
    assert (stack.get('/v1/volumes?type=csi'), vm.state(PARENT)) == before


def test_a_stuck_claim_is_released_with_force(stack, run_local, vm):
    """With the node plugin gone, a stopped allocation's claim cannot be released: Nomad refuses to deregister the
    volume until force drops the claims of terminal allocations."""
    assert not run_local('nomad_csi_volume', volume_args(id='t-vol-stuck')).failed
    job = run_local('nomad_job', {'content': WORKLOAD % 't-vol-stuck', 'wait_timeout': 300})
    assert not job.failed, job
    node_job = stack.get('/v1/job/zfs-node')
    try:
        stack.nomad('job', 'stop', 'zfs-node')
        # Gone, not going: `job stop` returns before the task exits, and a node plugin still there unpublishes the
        # workload's volume after all (seen in CI: the claim went away at once).
        wait_until(
            lambda: (
                stack.get('/v1/plugin/csi/zfs')['NodesHealthy'] == 0
                and not [a for a in stack.get('/v1/job/zfs-node/allocations') if a['ClientStatus'] == 'running']
            ),
            why='the node plugin stopped',
        )
        stack.nomad('job', 'stop', '-purge', 'workload')
        wait_until(
            lambda: stack.get('/v1/volume/csi/t-vol-stuck')['WriteAllocs'],
            why='the claim went away without the node plugin',
        )
        held = run_local('nomad_csi_volume', {'id': 't-vol-stuck', 'state': 'absent'})
        assert held.failed and 'in use' in held['msg'], held
        assert 't-vol-stuck' in [v['ID'] for v in stack.get('/v1/volumes?type=csi')]
        forced = run_local('nomad_csi_volume', {'id': 't-vol-stuck', 'state': 'absent', 'force': True})
        assert forced['changed'] and not forced.failed, forced
        assert 't-vol-stuck' not in [v['ID'] for v in stack.get('/v1/volumes?type=csi')]
        assert exists(vm, PARENT + '/t-vol-stuck')  # deregistered, the data kept
    finally:
        stack.nomad('job', 'stop', '-purge', 'workload', check=False)
        stack.api('POST', '/v1/jobs', {'Job': dict(node_job, Stop=False)})
        stack.wait_healthy()
        # The mount the missing node plugin could not take down, so the dataset can go later.
        vm.sh("awk '$1 ~ /t-vol-stuck/ {print $2}' /proc/mounts | xargs -r umount -l", check=False)
