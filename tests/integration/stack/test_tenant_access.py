"""The local stack with ACLs on, as `make demo` leaves it: site.yml made tenant demo's submitter token, and that
token runs the demo's workload in namespace demo on a CSI volume and a host volume, and nothing elsewhere."""

import pytest
from stack_layout import HOST_VOLUMES, PARENT, WORKLOAD

from zfsvm_client import wait_until

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


def as_nobody(vm, command):
    """A local user of the host, with no part in Nomad or the storage."""
    return vm.sh('runuser -u nobody -- ' + command + ' 2>&1', check=False)


def test_the_submitter_runs_its_workload_on_its_csi_volume(stack, submitter, vm):
    """Over NFS, through the parent's directory, which no local user but root and the service user's group
    passes: the volume's root is 0777 so that any workload writes, and nobody wrote a file there before."""
    written = stack.workload('demo', 'write', token=submitter, namespace=NAMESPACE)
    assert written.startswith('written-by-')
    assert stack.workload('demo', 'read', token=submitter, namespace=NAMESPACE) == written
    assert vm.sh('stat -c "%a %U %G" /' + PARENT).stdout == '710 root csi\n'
    for command in ('touch /%s/demo/by-nobody' % PARENT, 'cat /%s/demo/proof.txt' % PARENT):
        refused = as_nobody(vm, command)
        assert refused.returncode != 0 and 'Permission denied' in refused.stdout, (command, refused)


def test_the_submitter_runs_its_workload_on_its_host_volume(stack, submitter, demo_hv, vm):
    written = stack.workload('demo-hv', 'write', volume_type='host', token=submitter, namespace=NAMESPACE)
    assert stack.workload('demo-hv', 'read', volume_type='host', token=submitter, namespace=NAMESPACE) == written
    assert vm.sh('cat /%s/%s/demo-hv/proof.txt' % (HOST_VOLUMES, NAMESPACE)).stdout.strip() == written
    # All of the tenant's volumes and their snapshots together (inventories/local: host_volume_plugin_namespace_quotas).
    assert vm.zfs('get', '-Hp', '-o', 'value', 'quota', '%s/%s' % (HOST_VOLUMES, NAMESPACE)).stdout == '%d\n' % (
        1 << 30
    )
    # Nomad (root) mounts it from the parent's directory, root's alone: nobody read a tenant's file there before.
    assert vm.sh('stat -c "%a %U" /' + HOST_VOLUMES).stdout == '700 root\n'
    refused = as_nobody(vm, 'cat /%s/%s/demo-hv/proof.txt' % (HOST_VOLUMES, NAMESPACE))
    assert refused.returncode != 0 and 'Permission denied' in refused.stdout, refused


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


ROOT_BY_DOCKER = """
job "root-by-docker" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "docker"
      config {
        image      = "busybox:1.36"
        privileged = true
        devices    = [{ host_path = "/dev/vda" }]
        volumes    = ["/var/tmp:/host-tmp"]
        command    = "touch"
        args       = ["/host-tmp/root-by-docker"]
      }
    }
  }
}
"""


def test_the_submitter_cannot_run_a_docker_task_which_would_be_root_on_the_client(stack, submitter, vm, tmp_path):
    """Before tenants lost docker, this token's privileged job mounted the VM's root disk and one with a host volume
    wrote into /var/tmp: the node plugin needs privileged, so the client allows it for every docker task, and no
    namespace limits devices or volumes either."""
    job = tmp_path / 'root-by-docker.nomad'
    job.write_text(ROOT_BY_DOCKER)
    refused = stack.nomad('job', 'run', '-detach', str(job), token=submitter, namespace=NAMESPACE, check=False)
    assert refused.returncode != 0 and 'docker' in refused.stderr and 'not allowed' in refused.stderr, refused
    assert stack.get('/v1/jobs?namespace=' + NAMESPACE + '&prefix=root-by-docker') == []
    assert vm.sh('test -e /var/tmp/root-by-docker', check=False).returncode != 0


# Three groups: a task as nobody, one that names another account of the client, and one whose template's
# change_script runs when service nzc-trigger appears (TRIGGER, submitted once that task runs).
WRITES_THE_CLIENT = """
locals {
  script = join("; ", [
    "id -u", "stat -c %h /etc/passwd", "echo by-change-script >> /etc/passwd", "tail -n 1 /etc/passwd",
    "for f in /etc/shadow /etc/ssh /etc/nzc /etc/sudoers; do test -e $f && echo has $f; done", "echo done",
  ])
}
job "writes-the-client" {
  type = "batch"
  group "as-nobody" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "id -u; grep CapEff /proc/self/status; stat -c %h /etc/passwd; echo x >> /etc/passwd; exit 0"]
      }
    }
  }
  group "as-daemon" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "t" {
      driver = "exec"
      user   = "daemon"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo ran as $(id -un)"]
      }
    }
  }
  group "by-script" {
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      template {
        data        = "{{ range nomadService \\"nzc-trigger\\" }}{{ .ID }}{{ end }}\\n"
        destination = "local/watched"
        change_mode = "script"
        change_script {
          command = "/bin/sh"
          args    = ["-c", "{ ${local.script}; } > /local/script 2>&1"]
        }
      }
    }
  }
}
"""
TRIGGER = """
job "nzc-trigger" {
  group "g" {
    service {
      name     = "nzc-trigger"
      provider = "nomad"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
    }
  }
}
"""


def test_the_submitters_exec_task_runs_as_nobody_with_no_capability_and_its_scripts_root_stays_in_its_chroot(
    stack, submitter, vm, tmp_path
):
    """exec gave a task that runs as nobody the driver's default capabilities as ambient ones, and its chroot's /etc
    and /lib were hard links to the client's own files: this job appended to the VM's /etc/adduser.conf. The stack's
    client, as a production one (scripts/nomad-dev.sh, the pack's README), gives tenants' exec tasks no capability,
    refuses a task that names another account of the client (daemon here; a service user such as csi alike), and
    builds the chroot from a tree of its own on a file system of its own (scripts/exec-chroot.sh). Nomad v1.11.3 runs
    a template's change_script as root whatever the task's user: that root wrote the client's /etc/adduser.conf too,
    and now writes only its allocation's copy, and finds none of the client's secrets there. This is the hard-link
    path only: Nomad's root processes that follow a task's symlinks are open (docs/security.md)."""
    before = vm.sh('cat /etc/passwd /var/lib/nzc-chroot/etc/passwd').stdout
    job, trigger = tmp_path / 'writes-the-client.nomad', tmp_path / 'nzc-trigger.nomad'
    job.write_text(WRITES_THE_CLIENT)
    trigger.write_text(TRIGGER)
    path = '/v1/job/writes-the-client/allocations?namespace=' + NAMESPACE

    def groups():
        return dict((a['TaskGroup'], a) for a in stack.get(path))

    def started():
        g = groups()
        ended = [g.get(name, {}).get('ClientStatus') in ('complete', 'failed') for name in ('as-nobody', 'as-daemon')]
        return g if ended == [True, True] and g.get('by-script', {}).get('ClientStatus') == 'running' else None

    def script():
        # The management token reads it: a submitter has no read-fs.
        read = stack.nomad(
            'alloc', 'fs', groups()['by-script']['ID'], 't/local/script', namespace=NAMESPACE, check=False
        )
        return read.stdout if read.stdout.endswith('done\n') else None

    stack.nomad('job', 'run', '-detach', str(job), token=submitter, namespace=NAMESPACE)
    try:
        allocs = wait_until(started, timeout=300, why="two groups ended and the script's task runs")
        stack.nomad('job', 'run', '-detach', str(trigger), token=submitter, namespace=NAMESPACE)
        by_script = wait_until(script, timeout=300, why='the change_script ran on the service it watches')
        statuses = dict((group, alloc['ClientStatus']) for group, alloc in allocs.items())
        nobody = allocs['as-nobody']['ID']
        out = stack.nomad('alloc', 'logs', nobody, token=submitter, namespace=NAMESPACE).stdout.split()
        err = stack.nomad('alloc', 'logs', '-stderr', nobody, token=submitter, namespace=NAMESPACE).stdout
        events = [e.get('DisplayMessage', '') for e in allocs['as-daemon']['TaskStates']['t']['Events']]
    finally:
        for name in ('nzc-trigger', 'writes-the-client'):
            stack.nomad('job', 'stop', '-purge', name, token=submitter, namespace=NAMESPACE, check=False)
    assert statuses == {'as-nobody': 'complete', 'as-daemon': 'failed', 'by-script': 'running'}, (statuses, allocs)
    # nobody, no capability, a file of its own (one link) that it may not write. The group is 0: Nomad v1.11.3 sets
    # the task's user ID only (docs/security.md, Open).
    assert out == ['65534', 'CapEff:', '0000000000000000', '1'], (out, err)
    assert 'Permission denied' in err, err
    assert [e for e in events if 'running as uid 1 is disallowed' in e], events
    # The script as uid 0 (Nomad's, docs/security.md, Open) wrote its own copy, and the chroot holds no secret.
    assert by_script.split('\n') == ['0', '1', 'by-change-script', 'done', ''], by_script
    assert vm.sh('cat /etc/passwd /var/lib/nzc-chroot/etc/passwd').stdout == before
