"""nomad_csi_volume with the CSI test plugin on the real dev agent, up to a workload writing into a volume."""

import time

from nomad_agent import PLUGIN_ID

# exec, not raw_exec: Nomad refuses CSI volumes for drivers that cannot mount
# ("csi_hook failed: no task supports CSI").
WORKLOAD = '''job "workload" {
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
'''


def volume_args(**extra):
    args = {'id': 'vol-a', 'plugin_id': PLUGIN_ID, 'capacity_min': '1G', 'capacity_max': '2G'}
    args.update(extra)
    return args


def test_create_is_idempotent_and_check_mode_changes_nothing(plugin, run_local, agent):
    checked = run_local('nomad_csi_volume', volume_args(), check=True)
    assert checked['changed'] and not (agent.workdir / 'volumes' / 'vol-a').exists()

    made = run_local('nomad_csi_volume', volume_args(), diff=True)
    assert made['changed'] and made['volume']['plugin_id'] == PLUGIN_ID, made
    assert (agent.workdir / 'volumes' / 'vol-a').is_dir()  # the plugin's CreateVolume ran
    assert made['volume']['capacity'] == 1024 ** 3

    again = run_local('nomad_csi_volume', volume_args())
    assert again['changed'] is False and again['changed_fields'] == []

    wider = volume_args(capabilities=[{'access_mode': 'single-node-writer', 'attachment_mode': 'file-system'},
                                      {'access_mode': 'single-node-reader-only', 'attachment_mode': 'file-system'}])
    assert run_local('nomad_csi_volume', wider, check=True)['changed_fields'] == ['capabilities']
    updated = run_local('nomad_csi_volume', wider)
    assert updated['changed'] and len(updated['volume']['capabilities']) == 2, updated
    assert run_local('nomad_csi_volume', wider)['changed'] is False


def test_a_workload_writes_into_the_volume_and_the_file_is_read_back(plugin, run_local, agent):
    assert not run_local('nomad_csi_volume', volume_args(id='vol-w')).failed
    job = run_local('nomad_job', {'content': WORKLOAD % 'vol-w', 'wait_timeout': 180})
    assert not job.failed, job
    alloc = job['allocations'][0]['id']
    proof = agent.workdir / 'volumes' / 'vol-w' / 'proof.txt'
    deadline = time.monotonic() + 30
    while not proof.exists() and time.monotonic() < deadline:
        time.sleep(1)
    assert proof.read_text().strip() == 'written-by-' + alloc
    claims = agent.get('/v1/volume/csi/vol-w')['WriteAllocs']
    assert list(claims) == [alloc]
    seen = agent.nomad('alloc', 'exec', alloc, 'cat', '/data/proof.txt')
    assert seen.stdout.strip() == 'written-by-' + alloc  # read back through the task's mount
    agent.nomad('job', 'stop', '-purge', 'workload')


def test_register_absent_keeps_data_and_deleted_destroys_it(plugin, run_local, agent):
    existing = agent.workdir / 'volumes' / 'pre-made'
    existing.mkdir(parents=True, exist_ok=True)
    (existing / 'keep.txt').write_text('data')
    reg = {'id': 'vol-r', 'plugin_id': PLUGIN_ID, 'mode': 'register', 'external_id': 'pre-made',
           'context': {'origin': 'test'}}
    made = run_local('nomad_csi_volume', reg)
    assert made['changed'] and made['volume']['external_id'] == 'pre-made'
    assert run_local('nomad_csi_volume', reg)['changed'] is False

    moved = run_local('nomad_csi_volume', dict(reg, external_id='elsewhere'))
    assert moved.failed and 'deregister it first' in moved['msg']

    gone = run_local('nomad_csi_volume', {'id': 'vol-r', 'state': 'absent'})
    assert gone['changed'] and (existing / 'keep.txt').exists()
    assert run_local('nomad_csi_volume', {'id': 'vol-r', 'state': 'absent'})['changed'] is False

    assert not run_local('nomad_csi_volume', volume_args(id='vol-d')).failed
    assert (agent.workdir / 'volumes' / 'vol-d').is_dir()
    checked = run_local('nomad_csi_volume', {'id': 'vol-d', 'state': 'deleted'}, check=True)
    assert checked['changed'] and (agent.workdir / 'volumes' / 'vol-d').is_dir()
    deleted = run_local('nomad_csi_volume', {'id': 'vol-d', 'state': 'deleted'})
    assert deleted['changed'] and not (agent.workdir / 'volumes' / 'vol-d').exists()


def test_bad_input_names_the_field_and_changes_nothing(plugin, run_local, agent):
    before = agent.get('/v1/volumes?type=csi')
    cases = {
        'capacity_min': (volume_args(id='vol-x', capacity_min='12XB'), "capacity_min: '12XB' is not a size"),
        'id': (volume_args(id='no/slash'), "id 'no/slash' is not a Nomad volume ID"),
        'order': (volume_args(id='vol-x', capacity_min='2G', capacity_max='1G'), 'capacity_min (2G) is above'),
        'plugin': (volume_args(id='vol-a', plugin_id='other'), 'belongs to plugin zfs, not other'),
    }
    for field, (args, message) in cases.items():
        result = run_local('nomad_csi_volume', args)
        assert result.failed and message in result['msg'], (field, result)
    assert agent.get('/v1/volumes?type=csi') == before
