"""Nomad's event stream (GET /v1/event/stream) as ansible-rulebook events, resumed after any drop from the index
after the last one seen, so that no event is handed on twice and none that Nomad still buffers is missed."""

import asyncio
import contextlib
import json
import logging
import os
import ssl
from typing import Any
from urllib.parse import urlsplit

import aiohttp

DOCUMENTATION = r"""
---
short_description: Receive the events of Nomad's event stream.
description:
  - An ansible-rulebook event source plugin that reads Nomad's event stream (C(/v1/event/stream)) and puts each
    event on the queue as C(topic), C(type), C(key), C(namespace), C(index) and C(payload).
  - After a dropped connection, a Nomad that is down or an answer of 5xx, it connects again with a growing pause
    (at most 30 seconds) and resumes from the index after the last event it handed on. Nomad keeps a bounded buffer
    of events; what fell out of it during a long gap is gone, so rules should act on the state they read, not
    only on the event.
  - Stops, with an error that names the option to fix, when Nomad's certificate is not verified, or when Nomad
    refuses the request (400) or the token. Nomad
    answers a token that lacks a capability with C(200) and silence, where an accepted stream starts with a
    heartbeat at once; so a stream without one within 10 seconds counts as refused.
  - The token is sent only as the C(X-Nomad-Token) header; it is never logged and never part of an error.
options:
  nomad_addr:
    description:
      - Address of the Nomad HTTP API, C(http://), C(https://) or C(unix://) and a socket's path (the task API
        socket that workload identity gives a task, E(NOMAD_UNIX_ADDR)).
      - Falls back to E(NOMAD_UNIX_ADDR), then E(NOMAD_ADDR).
    type: str
    default: http://127.0.0.1:4646
  nomad_token:
    description:
      - ACL token. Its policy needs C(node) C(read) for the C(Node) topic and C(read-job) in the namespaces
        streamed for the others.
      - Falls back to E(NOMAD_TOKEN). Give it there rather than in the rulebook, which ansible-rulebook may print.
    type: str
  topics:
    description:
      - The topics to stream, each C(Topic) or C(Topic:Key) such as C(Node), C(Job:web) or C(Allocation).
    type: list
    elements: str
    default: [Node]
  namespace:
    description: The namespace whose events to stream, or C(*) for all that the token may read.
    type: str
    default: "*"
  region:
    description: Nomad region. Falls back to E(NOMAD_REGION).
    type: str
  index:
    description:
      - The index to start from. C(0) starts with the oldest event that Nomad still buffers (its
        C(event_buffer_size)), then the new ones.
    type: int
    default: 0
  validate_certs:
    description: Verify the TLS certificate of an C(https) address.
    type: bool
    default: true
  ca_cert:
    description: CA bundle for an C(https) address. Falls back to E(NOMAD_CACERT).
    type: path
  client_cert:
    description: Client certificate for mutual TLS. Falls back to E(NOMAD_CLIENT_CERT).
    type: path
  client_key:
    description: Key of O(client_cert). Falls back to E(NOMAD_CLIENT_KEY).
    type: path
  lock:
    description:
      - The path of a Nomad variable whose lock this source takes before it streams, and holds while it does, so
        that of several instances one hands events on, and the others wait for the lock (Nomad's C(lock-acquire)).
      - When it cannot renew the lock within O(lock_ttl), it stops with an error, so that its rulebook ends and
        hands nothing more on; it lets the lock go when ansible-rulebook stops it.
      - The token needs C(write) on this path in O(lock_namespace) (its policy's C(variables) block).
      - Unset, no lock is taken.
    type: str
  lock_namespace:
    description: The namespace of O(lock)'s variable.
    type: str
    default: default
  lock_ttl:
    description:
      - Seconds that the lock outlives its holder's last renewal; the holder renews it three times as often. After
        a holder is lost, another instance takes the lock once this has passed twice (its TTL, then as much
        again, Nomad's lock delay).
    type: int
    default: 15
  idle_timeout:
    description:
      - Seconds without a byte from Nomad, whose heartbeats come every 30 seconds, after which the connection counts
        as dropped and is made again.
    type: int
    default: 45
"""

EXAMPLES = r"""
- name: Drains of Nomad's clients
  hosts: all
  sources:
    - nomad_zfs.csi.nomad_events:
        nomad_addr: https://nomad.example.internal:4646
        ca_cert: /etc/nomad.d/tls/nomad-agent-ca.pem
        topics: [Node]
  rules:
    - name: A drain starts
      condition: event.type == "NodeDrain" and event.payload.Node.DrainStrategy != null
      action:
        debug:
"""

LOGGER = logging.getLogger(__name__)
DEFAULT_ADDR = 'http://127.0.0.1:4646'
MAX_PAUSE = 30
# Nomad writes a heartbeat ({}) as soon as it accepts a stream, then every 30 s (nomad/stream/ndjson.go).
FIRST_LINE = 10


class NomadRefused(Exception):
    """Nomad answered that no retry can change; the message names the option to fix."""


class LockLost(Exception):
    """The lock was not renewed within its TTL: another instance may hold it now."""


def settings(args: dict[str, Any], environ: dict[str, str]) -> dict[str, Any]:
    """The options with their defaults and environment fallbacks; raises ValueError naming a bad one."""
    addr = args.get('nomad_addr') or environ.get('NOMAD_UNIX_ADDR') or environ.get('NOMAD_ADDR') or DEFAULT_ADDR
    if urlsplit(addr).scheme not in ('http', 'https', 'unix'):
        raise ValueError('nomad_addr %r: give http://, https:// or unix:// and a socket path' % addr)
    topics = args.get('topics') or ['Node']
    if isinstance(topics, str) or not all(isinstance(t, str) and t.strip() for t in topics):
        raise ValueError('topics: give a list of topics, each Topic or Topic:Key, such as [Node, Allocation]')
    index = args.get('index', 0)
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ValueError('index %r: give a whole number, 0 for the oldest event Nomad buffers' % (index,))
    lock_ttl = args.get('lock_ttl', 15)
    if not isinstance(lock_ttl, int) or isinstance(lock_ttl, bool) or not 10 <= lock_ttl <= 86400:
        raise ValueError('lock_ttl %r: give whole seconds from 10 to 86400, as Nomad takes' % (lock_ttl,))
    return {
        'lock': args.get('lock') or '',
        'lock_namespace': args.get('lock_namespace') or 'default',
        'lock_ttl': lock_ttl,
        'addr': addr,
        'token': args.get('nomad_token') or environ.get('NOMAD_TOKEN') or '',
        'topics': list(topics),
        'namespace': args.get('namespace') or '*',
        'region': args.get('region') or environ.get('NOMAD_REGION') or '',
        'index': index,
        'validate_certs': args.get('validate_certs', True),
        'ca_cert': args.get('ca_cert') or environ.get('NOMAD_CACERT'),
        'client_cert': args.get('client_cert') or environ.get('NOMAD_CLIENT_CERT'),
        'client_key': args.get('client_key') or environ.get('NOMAD_CLIENT_KEY'),
        'idle_timeout': int(args.get('idle_timeout', 45)),
    }


def stream_query(conf: dict[str, Any], index: int) -> list[tuple[str, str]]:
    """The stream's query: its topics and namespace, the region, and the index to start from."""
    query = [('topic', topic) for topic in conf['topics']] + [('namespace', conf['namespace'])]
    if conf['region']:
        query.append(('region', conf['region']))
    if index:
        query.append(('index', str(index)))
    return query


def events_after(frame: dict[str, Any], last: int) -> list[dict[str, Any]]:
    """The events of one frame that come after index last, as the queue gets them; none for a heartbeat ({})."""
    index = frame.get('Index') or 0
    if index <= last:
        return []
    return [
        {
            'topic': event.get('Topic'),
            'type': event.get('Type'),
            'key': event.get('Key'),
            'namespace': event.get('Namespace'),
            'index': index,
            'payload': event.get('Payload') or {},
        }
        for event in frame.get('Events') or []
    ]


def refusal(status: int, reason: str, addr: str) -> str:
    """What a refused stream says: the status, and the option that fixes it."""
    if status in (401, 403):
        return (
            'Nomad at %s refused the event stream (%d %s): give nomad_token (or NOMAD_TOKEN) a valid token whose '
            'policy has node read for the Node topic, and read-job in the namespaces streamed for the others (with '
            'namespace *, in every namespace)' % (addr, status, reason)
        )
    return 'Nomad at %s refused the event stream (%d %s): check topics, namespace, region and index' % (
        addr,
        status,
        reason,
    )


def tls_context(conf: dict[str, Any]) -> ssl.SSLContext | None:
    if urlsplit(conf['addr']).scheme != 'https':
        return None
    context = ssl.create_default_context(cafile=conf['ca_cert'])
    if conf['client_cert']:
        context.load_cert_chain(conf['client_cert'], conf['client_key'])
    if not conf['validate_certs']:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def session_for(conf: dict[str, Any]) -> tuple[aiohttp.ClientSession, str]:
    """A session and the API's base URL; a unix:// address goes through its socket."""
    parts = urlsplit(conf['addr'])
    timeout = aiohttp.ClientTimeout(total=None, connect=10, sock_read=conf['idle_timeout'])
    headers = {'X-Nomad-Token': conf['token']} if conf['token'] else {}
    if parts.scheme == 'unix':
        connector = aiohttp.UnixConnector(path=parts.path)
        return aiohttp.ClientSession(connector=connector, timeout=timeout, headers=headers), 'http://nomad'
    connector = aiohttp.TCPConnector(ssl=tls_context(conf) or False)
    return aiohttp.ClientSession(connector=connector, timeout=timeout, headers=headers), conf['addr'].rstrip('/')


async def token_refusal(session: aiohttp.ClientSession, base: str, conf: dict[str, Any]) -> NomadRefused | None:
    """The refusal of the token itself, asked of Nomad, or None where Nomad takes the token (or has no ACLs)."""
    async with session.get(base + '/v1/acl/token/self', timeout=aiohttp.ClientTimeout(total=10)) as resp:
        if resp.status in (401, 403):
            return NomadRefused(refusal(resp.status, resp.reason or '', conf['addr']))
    return None


async def frames(session: aiohttp.ClientSession, base: str, conf: dict[str, Any], index: int):
    """One connection's frames, from index on, until Nomad ends it."""
    url = base + '/v1/event/stream'
    async with session.get(url, params=stream_query(conf, index)) as resp:
        if 400 <= resp.status < 500:
            raise NomadRefused(refusal(resp.status, resp.reason or '', conf['addr']))
        resp.raise_for_status()
        try:
            # An accepted stream starts with a heartbeat at once; Nomad answers a refusal with silence.
            first = await asyncio.wait_for(resp.content.readline(), FIRST_LINE)
        except asyncio.TimeoutError:
            raise await token_refusal(session, base, conf) or NomadRefused(
                refusal(403, 'no heartbeat within %d s' % FIRST_LINE, conf['addr'])
            ) from None
        if not first.strip():
            raise await token_refusal(session, base, conf) or aiohttp.ServerDisconnectedError()
        yield json.loads(first)
        async for line in resp.content:
            if line.strip():
                yield json.loads(line)


async def follow(queue: asyncio.Queue[Any], session: aiohttp.ClientSession, base: str, conf: dict[str, Any]) -> None:
    """Stream until cancelled or refused; every drop is logged by its cause, never with the token."""
    last, pause = max(conf['index'] - 1, 0), 1
    while True:
        try:
            async for frame in frames(session, base, conf, last + 1 if last else 0):
                pause = 1
                for event in events_after(frame, last):
                    await queue.put(event)
                last = max(last, frame.get('Index') or 0)
            LOGGER.warning('Nomad at %s ended the event stream after index %d', conf['addr'], last)
        except aiohttp.ClientConnectorCertificateError as e:
            raise NomadRefused(
                'Nomad at %s: its certificate was not verified (%s): give ca_cert (or NOMAD_CACERT) the CA that '
                'signed it' % (conf['addr'], e.certificate_error)
            ) from None
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as e:
            LOGGER.warning(
                'Nomad at %s: the event stream dropped after index %d (%s: %s)',
                conf['addr'], last, type(e).__name__, e,
            )  # fmt: skip
        LOGGER.info('Connecting to Nomad at %s again in %d s', conf['addr'], pause)
        await asyncio.sleep(pause)
        pause = min(pause * 2, MAX_PAUSE)


async def lock_call(session: aiohttp.ClientSession, base: str, conf: dict[str, Any], op: str, lock: dict) -> tuple:
    """One lock operation on the lock's variable: Nomad's status and answer."""
    url = '%s/v1/var/%s' % (base, conf['lock'])
    body = {'Namespace': conf['lock_namespace'], 'Path': conf['lock'], 'Lock': lock}
    params = {op: '', 'namespace': conf['lock_namespace']}
    async with session.put(url, params=params, json=body, timeout=aiohttp.ClientTimeout(total=10)) as resp:
        if resp.status in (401, 403):
            raise NomadRefused(
                'Nomad at %s refused the lock %s (%d %s): give nomad_token (or NOMAD_TOKEN) write on that variable '
                'path in namespace %s' % (conf['addr'], conf['lock'], resp.status, resp.reason, conf['lock_namespace'])
            )
        return resp.status, await resp.json(content_type=None) if resp.status == 200 else None


async def acquire(session: aiohttp.ClientSession, base: str, conf: dict[str, Any]) -> str:
    """The lock's ID, once this instance holds it; while another does, it waits."""
    ttl = '%ds' % conf['lock_ttl']
    waiting = False
    while True:
        try:
            status, held = await lock_call(session, base, conf, 'lock-acquire', {'TTL': ttl, 'LockDelay': ttl})
            if status == 200:
                LOGGER.info('Holding the lock %s at Nomad %s', conf['lock'], conf['addr'])
                return held['Lock']['ID']
            if status == 400:
                raise NomadRefused('lock %r: Nomad refused it as a variable path (400)' % conf['lock'])
            if status != 409:
                LOGGER.warning('Nomad at %s answered %d to taking the lock %s', conf['addr'], status, conf['lock'])
            elif not waiting:
                LOGGER.info('Waiting for the lock %s: another instance holds it', conf['lock'])
                waiting = True
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            LOGGER.warning('Nomad at %s: taking the lock failed (%s: %s)', conf['addr'], type(e).__name__, e)
        await asyncio.sleep(conf['lock_ttl'] / 3)


async def keep(session: aiohttp.ClientSession, base: str, conf: dict[str, Any], lock_id: str) -> None:
    """Renew the lock three times a TTL; raise LockLost once Nomad refuses it or a TTL passed without a renewal."""
    renewed = asyncio.get_running_loop().time()
    while True:
        await asyncio.sleep(conf['lock_ttl'] / 3)
        try:
            status = (await lock_call(session, base, conf, 'lock-renew', {'ID': lock_id}))[0]
            if status != 200:
                raise LockLost('Nomad at %s answered %d to renewing the lock %s' % (conf['addr'], status, conf['lock']))
            renewed = asyncio.get_running_loop().time()
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            LOGGER.warning('Nomad at %s: renewing the lock failed (%s: %s)', conf['addr'], type(e).__name__, e)
            if asyncio.get_running_loop().time() - renewed >= conf['lock_ttl']:
                raise LockLost(
                    'the lock %s was not renewed for %d s: another instance may hold it'
                    % (conf['lock'], conf['lock_ttl'])
                ) from None


async def main(queue: asyncio.Queue[Any], args: dict[str, Any]) -> None:
    """Stream, holding the lock first where one is named, until cancelled, refused or the lock is lost."""
    conf = settings(args, dict(os.environ))
    session, base = session_for(conf)
    async with session:
        if not conf['lock']:
            return await follow(queue, session, base, conf)
        lock_id = await acquire(session, base, conf)
        tasks = [
            asyncio.create_task(follow(queue, session, base, conf)),
            asyncio.create_task(keep(session, base, conf, lock_id)),
        ]
        try:
            done = (await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED))[0]
            for task in done:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            with contextlib.suppress(Exception):
                await lock_call(session, base, conf, 'lock-release', {'ID': lock_id})
