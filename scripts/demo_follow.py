"""make demo's last part: ZFS without CSI, a dynamic host volume that follows its job when its node is drained.

A second client joins the VM's Nomad server: node nzc-b, with a pool of its own, each node the standby of the other
(tests/integration/stack/replicating_nodes.py: the one set-up of two nodes that the tests and the benchmarks use too).
The host volume operator makes demo-hv on nzc-b, tenant demo's submitter runs a service on it that writes a file,
A's pull takes a replica, and the follow rulebook (nomad_zfs.csi.follow) listens to Nomad's events on the mover's
token, as an operator runs it on their own machine (two_nodes/test_move_and_failover.py proves the same as the
follow controller's Nomad job). Then the only command: `nomad node drain -enable nzc-b`. The script prints where the
job and its data came up, and what the job found there. Afterwards it deletes what it made, and node nzc-b leaves.
"""

import contextlib
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / 'tests' / 'integration' / 'stack'), str(REPO / 'tests' / 'integration')]
from conftest import HOST_VOLUMES, Stack  # noqa: E402
from follow_rulebook import follow_rulebook  # noqa: E402
from node_b import HOST_VOLUMES as B_VOLUMES  # noqa: E402
from node_b import NAME as B_NAME  # noqa: E402
from replicating_nodes import A_PULL, A_REPLICAS, replicating_nodes, snapshot_now  # noqa: E402
from zfsvm_client import booted_vm, pull, wait_until  # noqa: E402

NAMESPACE, VOLUME, JOB = 'demo', 'demo-hv', 'demo-follow'
SERVICE = REPO / 'scripts' / 'demo-follow.nomad'
# The zfs-dataset plugin's mark on the datasets it made.
MARK = 'nomad-zfs-csi:host-volume-id'
# B's agent serves plain HTTP at the address it advertises, while the stack's agent serves HTTPS.
AGENTS = {B_NAME: 'http://127.0.0.1:5656'}


def say(text):
    print(text, flush=True)


class Demo:
    def __init__(self, stack):
        self.stack = stack
        self.operator = stack.secret('host-volume-operator')
        self.submitter = stack.secret('demo-submitter')

    def module(self, name, args, token):
        done = self.stack.module(name, args, extra_env={'NOMAD_TOKEN': token})
        if done['rc'] != 0:
            sys.exit('demo: %s %s: %s' % (name, args, done.get('msg', done)))
        return done

    def allocation(self, node):
        """The job's running allocation on node, or None."""
        allocs = self.stack.get('/v1/job/%s/allocations?namespace=%s' % (JOB, NAMESPACE))
        live = [a for a in allocs if a['ClientStatus'] == 'running' and a['NodeID'] == node['ID']]
        return live[0] if live else None

    def found(self, alloc):
        """What the allocation printed: the file it found in the volume."""
        logs = self.stack.nomad('alloc', 'logs', alloc['ID'], token=self.submitter, namespace=NAMESPACE)
        return logs.stdout.strip()

    def zfs_get(self, dataset):
        props = 'refquota,compression,' + MARK
        return self.stack.vm.sh('zfs get -H -o name,property,value %s %s' % (props, dataset)).stdout.rstrip()

    def forget(self):
        """The job, the volume and the move's journal gone, also an earlier run's that stopped midway: its volume
        forced (on a node B since purged), its dataset where the plugin left it (marked with a volume ID), its node
        B purged. The volume again while the client still holds the stopped job's mount, for a moment."""
        stack = self.stack
        self.module(
            'nomad_job', {'job_id': JOB, 'namespace': NAMESPACE, 'state': 'absent', 'purge': True}, self.submitter
        )
        args = {'name': VOLUME, 'namespace': NAMESPACE, 'state': 'deleted', 'force': True}
        extra_env = {'NOMAD_TOKEN': self.operator}
        wait_until(
            lambda: stack.module('nomad_host_volume', args, extra_env=extra_env)['rc'] == 0,
            timeout=120,
            why='%s deleted' % VOLUME,
        )
        dataset = '%s/%s/%s' % (HOST_VOLUMES, NAMESPACE, VOLUME)
        marked = stack.vm.zfs('get', '-H', '-o', 'value', MARK, dataset, check=False).stdout.strip()
        if marked not in ('', '-'):
            stack.vm.zfs('destroy', '-r', dataset)
        with contextlib.suppress(AssertionError):  # no journal: 404
            stack.api('DELETE', '/v1/var/nomad-zfs-csi/moves/%s?namespace=%s' % (VOLUME, NAMESPACE))
        for node in stack.get('/v1/nodes'):
            if node['Name'] == B_NAME and node['Status'] == 'down':
                stack.api('PUT', '/v1/node/%s/purge' % node['ID'])


def main():
    with tempfile.TemporaryDirectory(prefix='nzc-demo-') as workdir:
        vm = booted_vm(Path(workdir) / 'vm')
        vm.ending = lambda: False  # the set-up's helpers ask whether pytest is about to throw the VM away
        stack = Stack(vm)
        demo = Demo(stack)
        demo.forget()
        say(
            "--- a second client, node %s, joins with a pool of its own; each node pulls the other's host volumes"
            % B_NAME
        )
        with replicating_nodes(stack) as (a_node, b_node):
            say('nodes: %s' % ', '.join('%s (%s)' % (n['Name'], n['Status']) for n in stack.get('/v1/nodes')))
            # The rulebook as an operator runs it: with the stack's inventory, the nodes' host (the VM) and node B's
            # agent address, and the mover's token, which reaches the tenants' namespaces only. Started now, its
            # start overlaps the volume's; a drain it has not seen yet comes in its first snapshot of the nodes.
            move_vars = {
                'host_volume_move_hosts': {n['Name']: 'zfsvm' for n in stack.get('/v1/nodes')},
                'host_volume_move_agent_addrs': AGENTS,
            }
            say("--- the follow rulebook (ansible-rulebook -r nomad_zfs.csi.follow) on the mover's token")
            try:
                with follow_rulebook(stack, Path(workdir), stack.secret('host-volume-mover'), move_vars) as rulebook:
                    follow(demo, rulebook, a_node, b_node)
            finally:
                demo.forget()
                stack.nomad('node', 'drain', '-disable', '-yes', b_node['ID'], check=False)
        say('node %s left, its pool destroyed' % B_NAME)


def follow(demo, rulebook, a_node, b_node):
    stack, vm = demo.stack, demo.stack.vm
    say(
        "--- host volume %s on node %s (the host volume operator's token), through the zfs-dataset plugin"
        % (VOLUME, B_NAME)
    )
    made = demo.module(
        'nomad_host_volume',
        {'name': VOLUME, 'namespace': NAMESPACE, 'node_id': b_node['ID'], 'capacity_max': '256M',
         'parameters': {'compression': 'zstd'}},
        demo.operator,
    )  # fmt: skip
    say('%s on %s' % (made['volume']['host_path'], B_NAME))
    say(demo.zfs_get('%s/%s/%s' % (B_VOLUMES, NAMESPACE, VOLUME)))
    say("--- tenant demo's service %s on it (its submitter's token): the first allocation writes a file" % JOB)
    demo.module('nomad_job', {'src': str(SERVICE), 'namespace': NAMESPACE}, demo.submitter)
    first = wait_until(lambda: demo.allocation(b_node), timeout=120, why='%s running on %s' % (JOB, B_NAME))
    written = wait_until(lambda: demo.found(first), done=lambda said: 'found: ' in said, timeout=60, why='its file')
    say('on %s: %s' % (B_NAME, written))
    say("--- backed up: a snapshot (sanoid's, taken now), and node A's pull of node %s's volumes" % B_NAME)
    snapshot_now(vm, B_VOLUMES)
    pull(vm, A_PULL)
    replica = '%s/127.0.0.1/%s/%s/%s' % (A_REPLICAS, B_VOLUMES, NAMESPACE, VOLUME)
    say('the replica on node A: %s' % vm.sh('zfs list -H -t snapshot -o name %s | tail -1' % replica).stdout.strip())
    say('--- then only the drain; the follow rulebook moves the volume with its data and its job')
    started = time.monotonic()
    stack.nomad('node', 'drain', '-enable', '-yes', '-detach', '-deadline', '1h', b_node['ID'])
    say('nomad node drain -enable -yes -detach -deadline 1h %s   # node %s' % (b_node['ID'], B_NAME))
    # The job runs on A before the follow ends: the move then turns replication around.
    moved = wait_until(lambda: demo.allocation(a_node), timeout=600, why='%s running on node A' % JOB)
    seconds = time.monotonic() - started
    found = wait_until(lambda: demo.found(moved), done=lambda said: 'found: ' in said, timeout=60, why='its file')
    if written.split('found: ', 1)[1] != found.split('found: ', 1)[1]:
        sys.exit(
            'demo: the job on node %s found another file than the one written on %s: %s'
            % (a_node['Name'], B_NAME, found)
        )
    say('--- %s runs on node %s, %.0f s after the drain began, with its data' % (JOB, a_node['Name'], seconds))
    say('on %s: %s' % (a_node['Name'], found))
    say(demo.zfs_get('%s/%s/%s' % (HOST_VOLUMES, NAMESPACE, VOLUME)))
    drained = 'The drain of %s:' % B_NAME
    said = rulebook.wait_for(drained, timeout=600, why='the follow of the drain')
    said = said[said.index(drained) :].splitlines()[0].strip(' "')
    say('the rulebook: %s' % said)
    if '%s/%s moved to %s; 0 could not move.' % (NAMESPACE, VOLUME, a_node['Name']) not in said:
        sys.exit('demo: the follow did not say that it moved %s to node %s' % (VOLUME, a_node['Name']))


if __name__ == '__main__':
    main()
