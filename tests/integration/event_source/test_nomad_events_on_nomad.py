"""The Nomad event source (extensions/eda/plugins/event_source/nomad_events.py) against a real Nomad agent on this host
that has ACLs on and serves HTTPS only, to clients with a certificate of its CA: its main() as ansible-rulebook calls
it, and ansible-rulebook itself running it by name from the collection.

Between the source and the agent, a TCP relay that the test cuts and stops stands for the network: the stream drops,
and Nomad is unreachable for a while, as on a real cluster; Nomad itself is the real one."""

import asyncio
import contextlib
import importlib.util
import logging
import os
import re
import subprocess
import threading
import uuid

import pytest

from acl_agent import tls_acl_agent
from nomad_agent import REPO, free_port
from zfsvm_client import BIN, ansible_env

NODE_READER = 'node {\n  policy = "read"\n}\n'
# What the follow reads (nomad_host_volume_follow_plan): nodes, and in each tenant's namespace its host volumes, the
# allocations that mount them and the journals of moves.
FOLLOWER = NODE_READER + (
    'namespace "default" {\n  capabilities = ["host-volume-read", "read-job"]\n  variables {\n'
    '    path "nomad-zfs-csi/moves/*" {\n      capabilities = ["read"]\n    }\n  }\n}\n'
)
LOCK = 'nzc-follow/lock'
# What a follow controller's token holds: node read, and the lock.
LOCK_HOLDER = NODE_READER + (
    'namespace "default" {\n  variables {\n    path "nzc-follow/*" {\n'
    '      capabilities = ["write", "read"]\n    }\n  }\n}\n'
)
# Loaded from its file, as ansible-rulebook loads a source.
SOURCE = REPO / 'extensions' / 'eda' / 'plugins' / 'event_source' / 'nomad_events.py'
_spec = importlib.util.spec_from_file_location('nomad_events', SOURCE)
nomad_events = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nomad_events)


@pytest.fixture(scope='module')
def acl():
    with tls_acl_agent('nzc-events-') as agent:
        yield agent


class Relay(object):
    """Forwards TCP connections from its own port to the agent's; cut() drops them, stop() refuses new ones."""

    def __init__(self, target_port):
        self.target_port, self.port, self.server, self.writers = target_port, free_port(), None, set()

    async def start(self):
        self.server = await asyncio.start_server(self._serve, '127.0.0.1', self.port)

    async def stop(self):
        self.server.close()
        await self.server.wait_closed()
        self.cut()

    def cut(self):
        for writer in list(self.writers):
            writer.transport.abort()

    async def _serve(self, reader, writer):
        up_reader, up_writer = await asyncio.open_connection('127.0.0.1', self.target_port)
        self.writers |= {writer, up_writer}

        async def pipe(src, dst):
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.transport.abort()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self.writers -= {writer, up_writer}


def agent_port(acl):
    return int(acl.address.rsplit(':', 1)[1])


def source_args(tls, port, token):
    return {
        'nomad_addr': 'https://127.0.0.1:%d' % port,
        'nomad_token': token,
        'ca_cert': str(tls.ca),
        'client_cert': str(tls.cert),
        'client_key': str(tls.key),
        'topics': ['Node'],
    }


async def next_event(queue, kind, timeout=30):
    """The next event of type kind, whatever came before it."""
    while True:
        event = await asyncio.wait_for(queue.get(), timeout)
        if event['type'] == kind:
            return event


def drain(acl, node, enable):
    flag = ['-enable', '-deadline', '1h', '-detach'] if enable else ['-disable']
    acl.agent.nomad('node', 'drain', *flag, '-yes', '-token', acl.management, node)


def eligibility(acl, node, eligible):
    acl.agent.nomad('node', 'eligibility', '-enable' if eligible else '-disable', '-token', acl.management, node)


# Eligibility, not a drain: a drain of this node, which runs nothing, ends at once, while eligibility stays as set.
# Nomad v1.11.3 reports either change as a NodeDrain event.
def test_an_event_arrives_and_what_happens_while_nomad_is_unreachable_arrives_after_once(acl, caplog):
    acl, tls = acl
    token = acl.token_for('nzc-events-node-reader', NODE_READER)
    [node] = [n['ID'] for n in acl.api('GET', '/v1/nodes')]
    relay = Relay(agent_port(acl))

    async def scenario():
        await relay.start()
        queue = asyncio.Queue()
        args = dict(source_args(tls, relay.port, token), node_snapshot=True)
        source = asyncio.create_task(nomad_events.main(queue, args))
        try:
            # First the node as it is (node_snapshot), then what changes.
            snapshot = await asyncio.wait_for(queue.get(), 30)
            assert snapshot['type'] == 'NodeSnapshot' and snapshot['key'] == node and snapshot['index'] > 0, snapshot
            assert snapshot['payload']['Node']['SchedulingEligibility'] == 'eligible', snapshot
            # Nomad still buffers the node's registration, older than the snapshot: the stream starts after it.
            await asyncio.sleep(2)
            replayed = []
            while not queue.empty():
                replayed.append(queue.get_nowait())
            assert all(e['index'] > snapshot['index'] for e in replayed), replayed
            await asyncio.to_thread(eligibility, acl, node, False)
            off = await next_event(queue, 'NodeDrain')
            assert off['key'] == node and off['payload']['Node']['SchedulingEligibility'] == 'ineligible', off
            # The network drops the stream, and Nomad stays unreachable while the node becomes eligible again.
            await relay.stop()
            await asyncio.to_thread(eligibility, acl, node, True)
            await asyncio.sleep(3)
            await relay.start()
            on = await next_event(queue, 'NodeDrain', timeout=60)
            assert on['key'] == node and on['payload']['Node']['SchedulingEligibility'] == 'eligible', on
            await asyncio.sleep(2)
            later = []
            while not queue.empty():
                later.append(queue.get_nowait())
            assert all(e['index'] > on['index'] for e in later), later
            assert not source.done()
        finally:
            source.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await source
            await relay.stop()

    with caplog.at_level(logging.INFO, logger=nomad_events.__name__):
        asyncio.run(scenario())
    said = caplog.text
    assert 'the event stream dropped after index' in said and 'https://127.0.0.1:%d' % relay.port in said, said
    assert token not in said


def test_of_two_instances_one_hands_events_on_and_the_other_only_once_the_first_stopped_or_was_cut_off(acl, caplog):
    acl, tls = acl
    token = acl.token_for('nzc-events-lock-holder', LOCK_HOLDER)
    [node] = [n['ID'] for n in acl.api('GET', '/v1/nodes')]
    relay = Relay(agent_port(acl))
    ttl = 10

    async def drained(queue):
        """The node's eligibility events this queue got, each queue read to its end."""
        await asyncio.sleep(2)
        got = []
        while not queue.empty():
            got.append(queue.get_nowait())
        return [e for e in got if e['type'] == 'NodeDrain']

    async def scenario():
        await relay.start()
        # First holds the lock, through the relay; second waits, connected straight.
        first_q, second_q = asyncio.Queue(), asyncio.Queue()
        first_args = dict(source_args(tls, relay.port, token), lock=LOCK, lock_ttl=ttl)
        second_args = dict(first_args, nomad_addr=acl.address)
        first = asyncio.create_task(nomad_events.main(first_q, first_args))
        await asyncio.sleep(3)
        second = asyncio.create_task(nomad_events.main(second_q, second_args))
        try:
            await asyncio.sleep(3)
            await asyncio.to_thread(eligibility, acl, node, False)
            handed = await drained(first_q)
            assert handed and not await drained(second_q)
            # A stopped holder writes its cursor and lets the lock go: the other takes it within a third of the TTL
            # and goes on after the last event the first handed on, repeating none.
            first.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await first
            await asyncio.sleep(ttl / 3 + 2)
            await asyncio.to_thread(eligibility, acl, node, True)
            after = await drained(second_q)
            assert after and min(e['index'] for e in after) > max(e['index'] for e in handed), (handed, after)
            # The holder cut off from Nomad stops handing events on after a TTL without a renewal; the other
            # instance takes the lock only after that TTL and Nomad's lock delay.
            second.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await second
            first_q, second_q = asyncio.Queue(), asyncio.Queue()
            first = asyncio.create_task(nomad_events.main(first_q, first_args))
            await asyncio.sleep(3)
            second = asyncio.create_task(nomad_events.main(second_q, second_args))
            await asyncio.sleep(3)
            loop = asyncio.get_running_loop()
            cut = loop.time()
            await relay.stop()
            with pytest.raises(nomad_events.LockLost):
                await asyncio.wait_for(first, ttl + 10)
            lost = loop.time() - cut
            while True:
                await asyncio.to_thread(eligibility, acl, node, False)
                if await drained(second_q):
                    break
                assert loop.time() - cut < 3 * ttl + 10, 'the second instance never took the lock'
            taken = loop.time() - cut
            assert lost <= ttl + ttl / 3 + 2 < taken, (lost, taken)
            await asyncio.to_thread(eligibility, acl, node, True)
        finally:
            for task in (first, second):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, nomad_events.LockLost):
                    await task
            await relay.stop()

    with caplog.at_level(logging.INFO, logger=nomad_events.__name__):
        asyncio.run(scenario())
    assert 'Waiting for the lock %s' % LOCK in caplog.text and token not in caplog.text


@pytest.mark.parametrize('case', ['a token without node read', 'a token Nomad does not know', 'no CA', 'no lock right'])
def test_a_refused_token_or_certificate_stops_the_source_naming_the_option_and_never_the_token(acl, case, caplog):
    acl, tls = acl
    if case == 'a token without node read':
        token = acl.token_for('nzc-events-job-reader', 'namespace "default" {\n  policy = "read"\n}\n')
    elif case == 'no lock right':
        token = acl.token_for('nzc-events-no-lock', NODE_READER)  # a token's secret comes only when it is made
    else:
        token = str(uuid.uuid4())
    args = source_args(tls, agent_port(acl), token)
    if case == 'no CA':
        del args['ca_cert']
    if case == 'no lock right':
        args['lock'] = LOCK

    async def scenario():
        return await asyncio.wait_for(nomad_events.main(asyncio.Queue(), args), 60)

    with caplog.at_level(logging.DEBUG), pytest.raises(nomad_events.NomadRefused) as refused:
        asyncio.run(scenario())
    said = str(refused.value)
    assert acl.address in said, said
    expected = {
        'a token without node read': ['nomad_token', 'node read', 'no heartbeat'],
        'a token Nomad does not know': ['nomad_token', 'node read', '403'],
        'no CA': ['ca_cert', 'certificate verify failed'],
        'no lock right': ['nomad_token', 'write', LOCK, '403'],
    }[case]
    assert all(part in said for part in expected), said
    assert token not in said and token not in caplog.text


def test_the_follow_rulebook_runs_the_follow_playbook_when_a_drain_starts(acl, tmp_path):
    """The collection's rulebook (nomad_zfs.csi.follow) by name, as an operator runs it, on a token with what the
    follow reads: a drain of the agent's node, which holds no host volume, runs playbooks/follow_node.yml for it,
    which says that nothing had to move. The moves themselves are two_nodes/test_move_and_failover.py's."""
    acl, tls = acl
    token = acl.token_for('nzc-events-rulebook', FOLLOWER)
    [node] = acl.api('GET', '/v1/nodes')
    (tmp_path / 'inventory.yml').write_text(
        'nomad:\n  hosts:\n    localhost:\n      ansible_connection: local\n      ansible_python_interpreter: %s\n'
        % (BIN / 'python')
    )
    env = dict(ansible_env(NOMAD_ADDR=acl.address, NOMAD_TOKEN=token), **acl.agent.tls_env)
    env['PATH'] = '%s:%s' % (BIN, os.environ['PATH'])  # ansible-rulebook asks ansible-galaxy where collections are
    argv = [str(BIN / 'ansible-rulebook'), '-r', 'nomad_zfs.csi.follow', '-i', 'inventory.yml']
    said = 'The drain of %s: 0 could not move.' % node['Name']
    with subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as rb:
        timer = threading.Timer(180, rb.terminate)  # a rulebook that never fires ends the wait with its output
        timer.start()
        try:
            drain(acl, node['ID'], True)
            out = []
            for line in rb.stdout:
                out.append(line)
                if said in line or re.search(r'\sfailed=[1-9]', line):
                    break
            assert said in ''.join(out), ''.join(out)[-3000:]
        finally:
            timer.cancel()
            rb.terminate()
            rest = rb.communicate(timeout=30)[0]
            drain(acl, node['ID'], False)
    assert token not in ''.join(out) + rest
