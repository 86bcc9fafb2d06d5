"""Nomad's event stream (GET /v1/event/stream) as ansible-rulebook events, resumed after any drop from the index
after the last one seen, so that no event is handed on twice and none that Nomad still buffers is missed."""

import asyncio
import contextlib
import json
import logging
import os
import re
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
    refuses the request (400) or the token. Nomad answers a token that lacks a capability with C(200) and silence,
    where an accepted stream starts with a heartbeat at once; a token Nomad does not know is then refused by name,
    and three silent streams in a row count as refused (an unknown O(region) is answered alike).
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
      - ACL token. Its policy needs C(node) C(read) for the C(Node) topic; C(read-job) in the namespaces streamed
        for C(Job), C(Allocation), C(Deployment), C(Evaluation), C(Service) and C(CSIPlugin); C(csi-read-volume)
        for C(CSIVolume); C(host-volume-read) for C(HostVolume); C(operator) C(read) for C(Operator); the others
        need a management token.
      - Falls back to E(NOMAD_TOKEN). Give it there rather than in the rulebook, which ansible-rulebook may print.
    type: str
  topics:
    description:
      - The topics to stream, each C(Topic) or C(Topic:Key) such as C(Node), C(Job:web) or C(Allocation), from
        Nomad v1.11's topics.
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
  tls_server_name:
    description:
      - The name to send and to verify in the agent's certificate, in place of the host of O(nomad_addr), as
        C(nomad -tls-server-name) does. Falls back to E(NOMAD_TLS_SERVER_NAME).
      - Nomad's own certificates (C(nomad tls cert create -server)) name C(server.<region>.nomad), C(localhost) and
        C(127.0.0.1). With V(server.global.nomad), servers are reached by any address, and each proves that it is a
        server of that region.
    type: str
    version_added: 0.3.0
  lock:
    description:
      - The path of a Nomad variable whose lock this source takes before it streams, and holds while it does, so
        that of several instances one hands events on, and the others wait for the lock (Nomad's C(lock-acquire)).
      - When it cannot renew the lock within O(lock_ttl), it hands nothing more on and stops with an error, so that
        its rulebook ends; it lets the lock go when ansible-rulebook stops it.
      - Beside it, in C(<lock>/cursor), its holders keep the index they handed on last, which they write at each
        renewal and when they let go; the next holder goes on from there. Nomad empties a variable whose lock it
        gives, so the cursor has a variable of its own. After a holder was cut off, the events it handed on after
        its last write, at most O(lock_ttl) / 3 seconds of them, come again.
      - The token needs C(write) on this path and C(<lock>/*) in O(lock_namespace) (its policy's C(variables)
        block).
      - Unset, no lock is taken.
    type: str
  lock_namespace:
    description: The namespace of O(lock)'s variable.
    type: str
    default: default
  lock_ttl:
    description:
      - Seconds for which a renewal holds the lock; the holder renews it three times as often, and hands nothing
        on once this passed since its last renewal was sent. Nomad keeps a lost holder's lock twice as long, then
        as long again (its lock delay), so another instance takes it only three times this after the last
        renewal.
    type: int
    default: 15
  node_snapshot:
    description:
      - Before the stream, hand on each node as Nomad has it now, as an event of type C(NodeSnapshot) (topic
        C(Node), payload C(Node) as C(/v1/node/<id>) answers, index the node list's), once per run, after the lock
        is taken. A rule that acts on C(NodeDrain) then also acts on a drain that began while no instance ran, or
        that an instance stopped in the middle of (C(event.type == "NodeSnapshot")).
      - With C(Node) topics only and nowhere to go on from (O(index) C(0) and no cursor of O(lock)), the stream then
        starts after the snapshot. The older events that Nomad still buffers are in it already, or no longer true
        (a drain since ended, a node since purged), and are not handed on.
      - Needs C(Node) in O(topics); the token needs C(node) C(read), as for that topic.
    type: bool
    default: false
  idle_timeout:
    description:
      - Seconds without a byte from Nomad, whose heartbeats come every 30 seconds, after which the connection counts
        as dropped and is made again; from 31 to 3600.
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
FIRST_LINE, HEARTBEAT = 10, 30
# Nomad answers a refused stream with 200 and silence, and some of its own errors (an unknown region) alike: this
# many silent streams in a row, with a token Nomad takes, count as refused.
SILENT_STREAMS = 3
# Job and allocation events carry whole jobs: a line may be far longer than aiohttp's default limit.
LINE_LIMIT = 64 * 1024 * 1024
# What a token needs for each topic (nomad/event_endpoint.go, validateNsOp, v1.11.3); the others need management.
NEEDS = {
    'Node': 'node read',
    'Job': 'read-job in the namespaces streamed',
    'Allocation': 'read-job in the namespaces streamed',
    'Deployment': 'read-job in the namespaces streamed',
    'Evaluation': 'read-job in the namespaces streamed',
    'Service': 'read-job in the namespaces streamed',
    'CSIPlugin': 'read-job in the namespaces streamed',
    'CSIVolume': 'csi-read-volume in the namespaces streamed',
    'HostVolume': 'host-volume-read in the namespaces streamed',
    'Operator': 'operator read',
}
TOPICS = set(NEEDS) | {'NodePool', 'ACLPolicy', 'ACLToken', 'ACLRole', 'ACLAuthMethod', 'ACLBindingRule', '*'}


class NomadRefused(Exception):
    """Nomad answered that no retry can change; the message names the option to fix."""


class LockLost(Exception):
    """The lock's lease ran out without a renewal: another instance may hold it soon."""


def whole(args: dict[str, Any], name: str, default: int, low: int, high: int) -> int:
    value = args.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError('%s %r: give whole seconds from %d to %d' % (name, value, low, high))
    return value


def settings(args: dict[str, Any], environ: dict[str, str]) -> dict[str, Any]:
    """The options with their defaults and environment fallbacks; raises ValueError naming a bad one."""
    addr = args.get('nomad_addr') or environ.get('NOMAD_UNIX_ADDR') or environ.get('NOMAD_ADDR') or DEFAULT_ADDR
    parts = urlsplit(addr)
    if parts.scheme not in ('http', 'https', 'unix') or not (parts.path if parts.scheme == 'unix' else parts.netloc):
        raise ValueError('nomad_addr %r: give http:// or https:// and a host, or unix:// and a socket path' % addr)
    token = (args.get('nomad_token') or environ.get('NOMAD_TOKEN') or '').strip()
    if any(ord(c) < 32 or ord(c) == 127 for c in token):
        raise ValueError('nomad_token holds a line break or another control character: give the token alone')
    topics = args.get('topics') or ['Node']
    if isinstance(topics, str) or not all(isinstance(t, str) and t.split(':')[0] in TOPICS for t in topics):
        raise ValueError(
            'topics %r: give a list of Nomad topics, each Topic or Topic:Key, from %s'
            % (topics, ', '.join(sorted(TOPICS)))
        )
    index = args.get('index', 0)
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ValueError('index %r: give a whole number, 0 for the oldest event Nomad buffers' % (index,))
    return {
        'addr': addr,
        'token': token,
        'topics': list(topics),
        'namespace': args.get('namespace') or '*',
        'region': args.get('region') or environ.get('NOMAD_REGION') or '',
        'index': index,
        'validate_certs': args.get('validate_certs', True),
        'ca_cert': args.get('ca_cert') or environ.get('NOMAD_CACERT'),
        'client_cert': args.get('client_cert') or environ.get('NOMAD_CLIENT_CERT'),
        'client_key': args.get('client_key') or environ.get('NOMAD_CLIENT_KEY'),
        # None for aiohttp's server_hostname: the address's host.
        'tls_server_name': args.get('tls_server_name') or environ.get('NOMAD_TLS_SERVER_NAME') or None,
        'idle_timeout': whole(args, 'idle_timeout', 45, HEARTBEAT + 1, 3600),
        'lock': args.get('lock') or '',
        'lock_namespace': args.get('lock_namespace') or 'default',
        'lock_ttl': whole(args, 'lock_ttl', 15, 10, 86400),
        'node_snapshot': snapshot_wanted(args.get('node_snapshot', False), list(topics)),
    }


def snapshot_wanted(value: Any, topics: list[str]) -> bool:
    if not isinstance(value, bool):
        raise ValueError('node_snapshot %r: give true or false' % (value,))
    if value and not {'Node', '*'} & {t.split(':')[0] for t in topics}:
        raise ValueError('node_snapshot needs topic Node (or *): add it to topics')
    return value


def node_snapshot_event(node: dict[str, Any], index: int) -> dict[str, Any]:
    return {'topic': 'Node', 'type': 'NodeSnapshot', 'key': node.get('ID'), 'namespace': '', 'index': index,
            'payload': {'Node': node}}  # fmt: skip


def after_snapshot(conf: dict[str, Any], last: int, snapshot_index: int) -> int:
    """The last index handed on once the snapshot is: with no index to go on from (no cursor, no O(index)) and Node
    topics only, the snapshot's. What Nomad's buffer holds from before it is in the snapshot already, or no longer
    true (a drain since ended, a node since purged): replayed, each would run a rule again for nothing."""
    if last or not all(topic.split(':', 1)[0] == 'Node' for topic in conf['topics']):
        return last
    return snapshot_index


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
    events = [
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
    return [event for event in events if trusted_node(event)]


# Nomad makes a node's ID a UUID, but takes any text from a client that registers (NodeRegisterRequest.Validate
# wants it non-empty only), and a rule hands the ID on to a playbook, whose extra vars Ansible renders as templates:
# a node "{{ lookup('pipe', ...) }}" would run as the controller.
NODE_ID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')


def trusted_node(event: dict[str, Any]) -> bool:
    """False for a Node event whose node ID is no UUID, which is dropped with a warning that does not repeat it."""
    node = event['payload'].get('Node') if event['topic'] == 'Node' else None
    if node is None or (isinstance(node.get('ID'), str) and NODE_ID.fullmatch(node['ID'])):
        return True
    LOGGER.warning('Dropped a %s event at index %s: its node ID is no UUID', event['type'], event['index'])
    return False


def refusal(said: str, conf: dict[str, Any], token: bool = True) -> str:
    """What a refused stream says: what Nomad said, and the option that fixes it."""
    if token:
        needs = sorted({NEEDS.get(topic.split(':')[0], 'a management token') for topic in conf['topics']})
        return (
            'Nomad at %s refused the event stream (%s): give nomad_token (or NOMAD_TOKEN) a valid token whose policy '
            'holds, for topics %s: %s (with namespace *, in every namespace); or check region'
            % (conf['addr'], said, ', '.join(conf['topics']), '; '.join(needs))
        )
    return 'Nomad at %s refused the event stream (%s): check topics, namespace, region and index' % (conf['addr'], said)


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


def certificate_name_fix(conf: dict[str, Any]) -> str:
    """What to give so that the certificate's names and the name checked agree."""
    if conf.get('tls_server_name'):
        return 'a tls_server_name (or NOMAD_TLS_SERVER_NAME) it holds, not %s' % conf['tls_server_name']
    return 'a nomad_addr whose host it names, or tls_server_name (or NOMAD_TLS_SERVER_NAME) set to a name it holds'


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


class Lease(object):
    """Until when this instance may hand events on: a lock's TTL from when its last renewal was sent, which is
    before Nomad reset its timer. None holds no lock and is never over."""

    def __init__(self, ttl: int | None = None):
        self.ttl, self.until = ttl, None

    def renewed(self, sent: float) -> None:
        self.until = sent + self.ttl

    def left(self) -> float:
        return float('inf') if self.ttl is None else self.until - asyncio.get_running_loop().time()

    def check(self, lock: str) -> None:
        if self.left() <= 0:
            raise LockLost('the lock %s was not renewed for %d s: another instance may hold it soon' % (lock, self.ttl))


class Stream(object):
    """One instance's stream: the last index handed on, which survives every reconnect, and the silent streams in a
    row."""

    def __init__(self, session: aiohttp.ClientSession, base: str, conf: dict[str, Any], lease: Lease):
        self.session, self.base, self.conf, self.lease = session, base, conf, lease
        self.last, self.silent = max(conf['index'] - 1, 0), 0

    async def token_refusal(self) -> NomadRefused | None:
        """The refusal of the token itself, asked of Nomad; None where Nomad takes it (or has no ACLs)."""
        async with self.session.get(
            self.base + '/v1/acl/token/self',
            timeout=aiohttp.ClientTimeout(total=10),
            server_hostname=self.conf['tls_server_name'],
        ) as r:
            return NomadRefused(refusal('%d %s' % (r.status, r.reason), self.conf)) if r.status in (401, 403) else None

    async def frames(self):
        """One connection's frames, from the index after the last one handed on, until Nomad ends it."""
        params = stream_query(self.conf, self.last + 1 if self.last else 0)
        async with self.session.get(
            self.base + '/v1/event/stream',
            params=params,
            read_bufsize=LINE_LIMIT,
            server_hostname=self.conf['tls_server_name'],
        ) as resp:
            if 400 <= resp.status < 500:
                said = '%d %s' % (resp.status, resp.reason)
                raise NomadRefused(refusal(said, self.conf, token=resp.status in (401, 403)))
            resp.raise_for_status()
            try:
                first = await asyncio.wait_for(resp.content.readline(), FIRST_LINE)
            except asyncio.TimeoutError:
                first = b''
            if not first.strip():
                raise await self.token_refusal() or self.silence()
            self.silent = 0
            yield json.loads(first)
            async for line in resp.content:
                if line.strip():
                    yield json.loads(line)

    async def read(self, path: str) -> tuple[Any, int]:
        """One read of Nomad's API, and its index (X-Nomad-Index)."""
        params = [('region', self.conf['region'])] if self.conf['region'] else []
        async with self.session.get(
            self.base + path, params=params, server_hostname=self.conf['tls_server_name']
        ) as resp:
            if resp.status in (401, 403):
                raise NomadRefused(refusal('%d %s on %s' % (resp.status, resp.reason, path), self.conf))
            resp.raise_for_status()
            return await resp.json(content_type=None), int(resp.headers.get('X-Nomad-Index') or 0)

    async def snapshot(self, queue: asyncio.Queue[Any]) -> int:
        """Each node as Nomad has it now (node_snapshot), as NodeSnapshot events; the node list's index."""
        stubs, index = await self.read('/v1/nodes')
        for stub in stubs:
            event = node_snapshot_event(stub, index)
            if not trusted_node(event):
                continue
            node = (await self.read('/v1/node/' + stub['ID']))[0]
            self.lease.check(self.conf['lock'])
            await queue.put(node_snapshot_event(node, index))
        return index

    def silence(self) -> Exception:
        self.silent += 1
        if self.silent >= SILENT_STREAMS:
            return NomadRefused(refusal('200 and no heartbeat, %d streams in a row' % self.silent, self.conf))
        return aiohttp.ServerDisconnectedError('no heartbeat within %d s' % FIRST_LINE)

    async def follow(self, queue: asyncio.Queue[Any]) -> None:
        """Stream until cancelled, refused or the lease is over; every drop is logged by its cause, never with the
        token."""
        conf, pause, snapshot = self.conf, 1, self.conf['node_snapshot']
        while True:
            try:
                if snapshot:
                    self.last = after_snapshot(conf, self.last, await self.snapshot(queue))
                    snapshot = False
                async for frame in self.frames():
                    pause = 1
                    for event in events_after(frame, self.last):
                        self.lease.check(conf['lock'])
                        await queue.put(event)
                    self.last = max(self.last, frame.get('Index') or 0)
                LOGGER.warning('Nomad at %s ended the event stream after index %d', conf['addr'], self.last)
            except aiohttp.ClientConnectorCertificateError as e:
                raise NomadRefused(
                    'Nomad at %s: its certificate was not verified (%s): give ca_cert (or NOMAD_CACERT) the CA that '
                    'signed it, and %s' % (conf['addr'], e.certificate_error, certificate_name_fix(conf))
                ) from None
            except (aiohttp.ClientError, asyncio.TimeoutError, json.JSONDecodeError) as e:
                LOGGER.warning(
                    'Nomad at %s: the event stream dropped after index %d (%s: %s)',
                    conf['addr'], self.last, type(e).__name__, e,
                )  # fmt: skip
            LOGGER.info('Connecting to Nomad at %s again in %d s', conf['addr'], pause)
            await asyncio.sleep(pause)
            pause = min(pause * 2, MAX_PAUSE)


class Lock(object):
    """The lock on a Nomad variable, and beside it (<lock>/cursor) the index its holders handed on last: Nomad
    empties a variable whose lock it gives, so the cursor cannot live in the lock's own."""

    def __init__(self, session: aiohttp.ClientSession, base: str, conf: dict[str, Any]):
        self.session, self.base, self.conf = session, base, conf
        self.lease, self.id, self.written = Lease(conf['lock_ttl']), None, 0

    async def call(self, method: str, path: str, params: dict, body: dict | None, timeout: float = 10) -> tuple:
        """Nomad's status and answer for one call on a variable; a refused token stops the source."""
        params = dict(params, namespace=self.conf['lock_namespace'])
        url = '%s/v1/var/%s' % (self.base, path)
        limit = aiohttp.ClientTimeout(total=max(timeout, 0.1))
        async with self.session.request(
            method, url, params=params, json=body, timeout=limit, server_hostname=self.conf['tls_server_name']
        ) as resp:
            if resp.status in (401, 403):
                raise NomadRefused(
                    'Nomad at %s refused the lock %s (%d %s): give nomad_token (or NOMAD_TOKEN) write on %s and %s/* '
                    'in namespace %s'
                    % (self.conf['addr'], path, resp.status, resp.reason, self.conf['lock'], self.conf['lock'],
                       self.conf['lock_namespace'])
                )  # fmt: skip
            return resp.status, await resp.json(content_type=None) if resp.status == 200 else None

    def body(self, lock: dict, path: str | None = None) -> dict:
        return {'Namespace': self.conf['lock_namespace'], 'Path': path or self.conf['lock'], 'Lock': lock}

    async def acquire(self) -> int:
        """Wait until this instance holds the lock; the index its last holder handed on last, or 0."""
        ttl, waiting = '%ds' % self.conf['lock_ttl'], False
        while True:
            try:
                sent = asyncio.get_running_loop().time()
                status, held = await self.call('PUT', self.conf['lock'], {'lock-acquire': ''},
                                               self.body({'TTL': ttl, 'LockDelay': ttl}))  # fmt: skip
                if status == 200:
                    self.id = held['Lock']['ID']
                    self.lease.renewed(sent)
                    LOGGER.info('Holding the lock %s at Nomad %s', self.conf['lock'], self.conf['addr'])
                    status, cursor = await self.call('GET', self.conf['lock'] + '/cursor', {}, None)
                    self.written = int(((cursor or {}).get('Items') or {}).get('index', 0))
                    return self.written
                if status == 400:
                    raise NomadRefused('lock %r: Nomad refused it as a variable path (400)' % self.conf['lock'])
                if status != 409:
                    LOGGER.warning('Nomad at %s answered %d to taking the lock %s', self.conf['addr'], status,
                                   self.conf['lock'])  # fmt: skip
                elif not waiting:
                    LOGGER.info('Waiting for the lock %s: another instance holds it', self.conf['lock'])
                    waiting = True
            except (aiohttp.ClientError, asyncio.TimeoutError) as e:
                LOGGER.warning('Nomad at %s: taking the lock failed (%s: %s)', self.conf['addr'], type(e).__name__, e)
            await asyncio.sleep(self.conf['lock_ttl'] / 3)

    async def write_cursor(self, last: int) -> None:
        """The index handed on last, for the next holder; only while the lease lasts."""
        if last > self.written and self.lease.left() > 0:
            path = self.conf['lock'] + '/cursor'
            body = {'Namespace': self.conf['lock_namespace'], 'Path': path, 'Items': {'index': str(last)}}
            if (await self.call('PUT', path, {}, body, self.lease.left()))[0] == 200:
                self.written = last

    async def keep(self, stream: Stream) -> None:
        """Renew the lock three times a TTL, and write the cursor; raise LockLost once Nomad says the lock is gone
        (404, 409) or the lease ran out. Other answers (a 500 while Nomad elects a leader) are retried."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.conf['lock_ttl'] / 3)
            self.lease.check(self.conf['lock'])
            sent = loop.time()
            try:
                status = (await self.call('PUT', self.conf['lock'], {'lock-renew': ''}, self.body({'ID': self.id}),
                                          min(10, self.lease.left())))[0]  # fmt: skip
                if status in (404, 409):
                    raise LockLost('Nomad at %s answered %d to renewing the lock %s' % (self.conf['addr'], status,
                                   self.conf['lock']))  # fmt: skip
                if status == 200:
                    self.lease.renewed(sent)
                    await self.write_cursor(stream.last)
                else:
                    LOGGER.warning('Nomad at %s answered %d to renewing the lock %s', self.conf['addr'], status,
                                   self.conf['lock'])  # fmt: skip
            except (aiohttp.ClientError, asyncio.TimeoutError) as e:
                LOGGER.warning('Nomad at %s: renewing the lock failed (%s: %s)', self.conf['addr'], type(e).__name__, e)

    async def release(self, stream: Stream) -> None:
        """Write the cursor and let the lock go, as far as Nomad answers; a lock not let go expires."""
        with contextlib.suppress(Exception):
            await self.write_cursor(stream.last)
            await self.call('PUT', self.conf['lock'], {'lock-release': ''}, self.body({'ID': self.id}))


async def main(queue: asyncio.Queue[Any], args: dict[str, Any]) -> None:
    """Stream until cancelled, refused or, holding a lock, until it is lost; a lock is taken first where one is named,
    and the stream goes on from its cursor."""
    conf = settings(args, dict(os.environ))
    session, base = session_for(conf)
    async with session:
        if not conf['lock']:
            return await Stream(session, base, conf, Lease()).follow(queue)
        lock = Lock(session, base, conf)
        cursor = await lock.acquire()
        stream = Stream(session, base, dict(conf, index=cursor + 1 if cursor else conf['index']), lock.lease)
        tasks = [asyncio.create_task(stream.follow(queue)), asyncio.create_task(lock.keep(stream))]
        try:
            for task in (await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED))[0]:
                task.result()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await lock.release(stream)
