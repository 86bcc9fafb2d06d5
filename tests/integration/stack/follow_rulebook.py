"""The collection's follow rulebook (nomad_zfs.csi.follow) run by ansible-rulebook against the stack's Nomad: on this
host as an operator starts it (follow_rulebook: the stack's inventory, with the nodes' hosts and agent addresses that
a move of the two nodes needs, as host_vars of the host that runs the playbooks, and the mover's token in the
environment); or as the Nomad job of playbooks/follow_controller.yml on the admin client (follow_job)."""

import contextlib
import json
import shutil
import subprocess
import sys

from stack_layout import REPO

from rulebook import Output, rulebook
from zfsvm_client import BIN, changed, collections_path, mitogen_env, playbook_said


@contextlib.contextmanager
def follow_rulebook(stack, workdir, token, move_vars):
    inventory = workdir / 'inventory'
    shutil.copytree(REPO / 'inventories' / 'local', inventory)
    (inventory / 'host_vars').mkdir()
    (inventory / 'host_vars' / 'nomad-dev.yml').write_text(json.dumps(move_vars))
    env = dict(stack.base_env, **mitogen_env(), **stack.vm.nomad_tls_env)
    with rulebook(inventory, env, workdir, token) as followed:
        yield followed


FOLLOW_NAMESPACE, FOLLOW_JOB = 'nomad-zfs-csi', 'nomad-zfs-csi-follow'


class FollowJob(Output):
    """The follow controller's job on the admin client: its allocations' output, read from the client's data dir."""

    def __init__(self, stack, admin, allocs):
        self.stack, self.admin, self.allocs = stack, admin, allocs

    def outputs(self):
        return {alloc['ID']: self.admin.task_output(alloc['ID'], 'rulebook') for alloc in self.allocs}

    def output(self):
        return ''.join(self.outputs().values())

    def ended(self):
        statuses = [
            self.stack.get('/v1/allocation/%s?namespace=%s' % (alloc['ID'], FOLLOW_NAMESPACE))['ClientStatus']
            for alloc in self.allocs
        ]
        return all(status not in ('pending', 'running') for status in statuses)


def follow_controller(stack, **variables):
    return stack.playbook(REPO / 'playbooks' / 'follow_controller.yml', extra=variables)


@contextlib.contextmanager
def follow_job(stack, admin, move_vars, count=1):
    """playbooks/follow_controller.yml run as an operator runs it, for the stack's two nodes (the VM's host, reached
    at its forwarded SSH port and checked against its host key) from the admin client; yields the job's allocation
    (count of them) once they run. Afterwards the same playbook stops the job and deletes its key's variable."""
    vm = stack.vm
    scanned = subprocess.run(
        ['ssh-keyscan', '-p', str(vm.port), '-t', 'ed25519', '127.0.0.1'], capture_output=True, text=True, check=True
    )
    known_hosts = ''.join(line + '\n' for line in scanned.stdout.splitlines() if not line.startswith('#'))
    # The host that runs the playbooks reaches Nomad at the admin client, and the nodes' agents in the VM with the
    # stack's client certificate (the same paths there).
    tls = vm.nomad_tls_env
    runner = dict(
        move_vars,
        ansible_connection='local',
        ansible_python_interpreter=sys.executable,
        host_volume_move_nomad_addr=admin.address,
        host_volume_move_nomad_ca_cert=admin.ca,
        host_volume_move_nomad_client_cert=tls['NOMAD_CLIENT_CERT'],
        host_volume_move_nomad_client_key=tls['NOMAD_CLIENT_KEY'],
        host_volume_move_nomad_timeout=60,
    )
    host = dict(ansible_host='127.0.0.1', ansible_port=vm.port, ansible_user='root')
    inventory = {
        'all': {'vars': {'ansible_timeout': 60, 'ansible_python_interpreter': '/usr/bin/python3'}},
        'nomad': {'hosts': {'nomad-dev': runner}},
        'host_volume_clients': {'hosts': {'zfsvm': host}},
    }
    environment = dict(
        mitogen_env(),
        PATH='%s:/usr/bin:/bin' % BIN,  # ansible-rulebook asks ansible-galaxy where collections are
        ANSIBLE_COLLECTIONS_PATH=collections_path(),
        ANSIBLE_PIPELINING='1',
        ANSIBLE_NOCOLOR='1',
        ANSIBLE_DEPRECATION_WARNINGS='0',
        NOMAD_ADDR=admin.address,
        NOMAD_CACERT=admin.ca,
    )
    with open(vm.key) as f:
        key = f.read()
    # A line of the key's body that no other key has (their first lines are alike).
    secret = key.strip().splitlines()[-2]
    variables = dict(
        host_volume_follow_rulebook=str(BIN / 'ansible-rulebook'),
        host_volume_follow_environment=environment,
        host_volume_follow_inventory=inventory,
        host_volume_follow_ssh_private_key=key,
        host_volume_follow_known_hosts=known_hosts,
        host_volume_follow_count=count,
        host_volume_follow_node_ids=[admin.node['ID']],
    )
    ran = follow_controller(stack, **variables)
    assert ran.returncode == 0, (ran.stdout + ran.stderr)[-3000:]
    again = follow_controller(stack, **variables)
    assert changed(again)['nomad-dev'] == 0, playbook_said(again)
    assert secret not in ran.stdout + ran.stderr + again.stdout + again.stderr
    allocs = stack.get('/v1/job/%s/allocations?namespace=%s' % (FOLLOW_JOB, FOLLOW_NAMESPACE))
    assert len(allocs) == count and {a['NodeID'] for a in allocs} == {admin.node['ID']}, allocs
    job = FollowJob(stack, admin, allocs)
    try:
        yield job
        # Its workload identity, which Nomad gave its task, is nowhere in what it printed.
        tokens = {admin.task_environ(alloc['ID'], 'rulebook').get('NOMAD_TOKEN') for alloc in allocs}
        assert None not in tokens and all(token not in job.output() for token in tokens)
    finally:
        stopped = follow_controller(stack, host_volume_follow_state='absent')
        assert stopped.returncode == 0, (stopped.stdout + stopped.stderr)[-3000:]
        assert secret not in job.output()
