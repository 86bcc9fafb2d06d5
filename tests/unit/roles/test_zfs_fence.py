"""The fence watchdog's decisions (roles/host_volume_plugin/files/zfs-fence): its configuration, when the node counts
as out of contact, which volumes it fences and which processes it kills, and when a fence may end. What real zfs,
Nomad and a task do with it is tested on the VM (tests/integration/stack/two_nodes/test_move_and_failover.py, the
watchdog's test; on separate hosts, tests/integration/cluster/test_failover.py)."""

import http.server
import importlib.machinery
import importlib.util
import json
import os
import re
import socket
import threading
from pathlib import Path

import pytest
import yaml

from ansible_collections.nomad_zfs.csi.plugins.module_utils import _host_volume_fence as failover
from ansible_collections.nomad_zfs.csi.plugins.module_utils import _host_volume_node as node
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES
from ansible_collections.nomad_zfs.csi.tests.unit.roles.test_zfs_dataset_plugin import plugin

ROLE = Path(__file__).resolve().parents[3] / 'roles' / 'host_volume_plugin'
WATCHDOG = str(ROLE / 'files' / 'zfs-fence')
SPEC = importlib.util.spec_from_loader('zfs_fence', importlib.machinery.SourceFileLoader('zfs_fence', WATCHDOG))
fence = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(fence)

CONF = 'addr=http://127.0.0.1:5656\nnode_id=5d0c4b1e-0f7a-4c2e-9d51-1b2f3c4d5e6f\nparent=nodeb/nomad/volumes\nfence_after=20\n'
# Captured on the VM (OpenZFS 2.3.2, Nomad v1.11.3) by the watchdog test: node B's volumes before and after the
# fence, and the cgroup and mountinfo of the host's pid 1, of systemd-udevd (a service in a mount namespace of its
# own, which sees the volume too) and of the exec task that mounts the volume.
CAPTURED = json.loads((FIXTURES / 'zfs_fence_2.3.2.json').read_text())
DATASET = 'nodeb/nomad/volumes/demo/demo-wd'


def conf(**changes):
    values = fence.read_conf(CONF)
    values.update(changes)
    return values


def test_the_marks_are_the_plugins_as_the_collection_reads_them():
    assert (fence.MARK, fence.MOVED, fence.FENCED) == (node.MARK, node.MOVED, node.FENCED)
    # A volume's name as the plugin takes it (each program runs alone on a client, so each holds its copy).
    assert fence.NAME_RE.pattern == plugin.NAME_RE.pattern


def test_a_failover_counts_the_watchdogs_time_to_fence_as_it_works():
    # The failover (the collection's planner) waits for a node that advertises the watchdog as long as the watchdog
    # may take, by the watchdog's own count; each runs where the other is not installed, so each holds its copy.
    assert failover.LEAST_FENCE_AFTER == fence.LEAST_FENCE_AFTER
    for fence_after in range(fence.LEAST_FENCE_AFTER, 400):
        assert failover.watchdog_fenced_within(fence_after) == fence.fenced_within(fence_after), fence_after
    # fence_after 20: the last ready up to 11 s late, 5 s to the next check, 11 s for its answer, a restart, the kill,
    # two zfs.
    assert fence.fenced_within(20) == 20 + 11 + 5 + 11 + 35 + 1 + 42
    # A restart of a watchdog that hung is counted as the unit makes it, and a zfs process is given up before
    # systemd's watchdog would restart the watchdog.
    unit = (ROLE / 'files' / 'nomad-zfs-csi-fence@.service').read_text()
    watchdog_sec = int(re.search(r'^WatchdogSec=(\d+)$', unit, re.M).group(1))
    restart_sec = int(re.search(r'^RestartSec=(\d+)$', unit, re.M).group(1))
    assert fence.RESTART_TIME == watchdog_sec + restart_sec + 3 and fence.ZFS_TIMEOUT + fence.ZFS_REAP < watchdog_sec
    assert '\nWatchdogSignal=SIGKILL\n' in unit and '\nBefore=%i.service\n' in unit
    role = yaml.safe_load((ROLE / 'vars' / 'main.yml').read_text())
    assert role['host_volume_plugin_fence_meta'] == failover.WATCHDOG_META
    assert role['host_volume_plugin_fence_meta_plugin'] == failover.WATCHDOG_PLUGIN_META


def test_the_role_and_the_unit_name_the_watchdogs_paths_as_it_uses_them():
    role = yaml.safe_load((ROLE / 'vars' / 'main.yml').read_text())
    unit = (ROLE / 'files' / 'nomad-zfs-csi-fence@.service').read_text()
    assert role['host_volume_plugin_fence_state_dir'] == fence.STATE_DIR
    assert role['host_volume_plugin_fence_kept_dir'] == fence.KEPT_DIR
    assert (
        'ExecStart=/usr/bin/python3 -IS %s watch %s\n'
        % (
            role['host_volume_plugin_fence_script'],
            role['host_volume_plugin_fence_conf'].replace('{{ host_volume_plugin_nomad_service }}', '%i'),
        )
        in unit
    )
    assert role['host_volume_plugin_fence_template'].endswith('/nomad-zfs-csi-fence@.service')


@pytest.mark.parametrize(
    'text, named',
    [
        (CONF.replace('fence_after=20', 'fence_after=9'), 'fence_after is'),
        (CONF.replace('fence_after=20', 'fence_after=1m'), 'fence_after is'),
        (CONF.replace('parent=nodeb/nomad/volumes', 'parent=nodeb'), 'parent is'),
        (CONF.replace('parent=nodeb/nomad/volumes', 'parent=nodeb/x y'), 'parent is'),
        (CONF.replace('http://', 'file://'), 'addr is'),
        (CONF.replace('node_id=', 'nodeid='), 'unknown key nodeid, no node_id'),
        (CONF + 'token=abc\n', 'unknown key token'),
    ],
)
def test_a_bad_configuration_is_refused_naming_the_key(text, named):
    with pytest.raises(fence.FenceError, match=named):
        fence.read_conf(text)


def test_four_checks_at_least_within_fence_after():
    assert [fence.period(s) for s in (10, 20, 60, 3600)] == [2, 5, 5, 5]
    assert fence.read_conf(CONF)['token_file'] == ''


@pytest.mark.parametrize(
    'status, body, why',
    [
        (200, json.dumps({'Status': 'ready'}), ''),
        (200, json.dumps({'Status': 'down'}), 'the servers see the node down'),
        (200, json.dumps({'Status': 'disconnected'}), 'the servers see the node disconnected'),
        (200, 'not json', 'an answer that is not a node'),
        (200, '[]', 'an answer that is not a node'),
        # Deeper than Python recurses: still no crash.
        (200, '[' * 100000, 'an answer that is not a node'),
        (403, 'HTTP 403 Forbidden', 'HTTP 403 Forbidden'),
        (0, '', 'HTTP 0'),
    ],
)
def test_only_a_node_the_servers_see_ready_is_in_contact(status, body, why):
    assert fence.contact(status, body) == why


def test_every_marked_volume_is_fenced_once_in_one_zfs_process():
    before, after = (fence.parse_volumes(CAPTURED[key]) for key in ('listing_before', 'listing_fenced'))
    # The parent and the namespace's dataset carry no mark: only the volume is one.
    assert [(v['name'], v['fenced'], v['moved']) for v in before + after] == [
        (DATASET, False, False),
        (DATASET, True, False),
    ]
    assert before[0]['id'] == after[0]['id'] != '-'
    argv = fence.fence_argv(before + [dict(before[0], name=DATASET + '2')], 0)
    assert argv == [fence.ZFS, 'set', 'readonly=on', fence.FENCED + '=1970-01-01T00:00:00Z', DATASET, DATASET + '2']
    assert fence.fence_argv(after, 0) is None


def test_only_the_tasks_that_mount_a_volume_in_their_own_root_are_killed_never_the_hosts_processes():
    processes = [(p['pid'], p['cgroup'], p['mountinfo'].splitlines) for p in CAPTURED['processes']]
    host, udevd, plugin, task = processes
    volumes = fence.parse_volumes(CAPTURED['listing_before'])
    # Each mounts the volume: udevd in a mount namespace of its own, the CSI node plugin (a raw_exec task, in the
    # host's mount namespace) at the volume's mountpoint like the host, the exec task at /data in its root.
    assert all([line for line in p[2]() if ' zfs %s ' % DATASET in line] for p in processes)
    assert fence.task_scopes(volumes, lambda: processes) == [fence.task_scope(task[1])]
    assert [fence.task_scope(p[1]) is not None for p in processes] == [False, False, True, True]
    assert not fence.mounts_elsewhere(plugin[2](), volumes) and fence.mounts_elsewhere(task[2](), volumes)
    assert fence.task_scopes([dict(volumes[0], name=DATASET + '-other')], lambda: processes) == []
    assert fence.task_scope('0::/nzc-b.slice/not-an-allocation.t.scope\n') is None
    # The mountinfo of a process that is no task is never read: a task may make it huge.
    unread = [(p[0], p[1], lambda: pytest.fail('read')) for p in (host, udevd)]
    assert fence.task_scopes(volumes, lambda: unread) == []


def test_a_fence_ends_only_for_a_fenced_volume_that_the_servers_still_place_here():
    volumes = fence.parse_volumes(CAPTURED['listing_fenced'])
    [fenced] = volumes
    node_id = conf()['node_id']
    here, placed = {'Status': 'ready'}, {'ID': fenced['id'], 'NodeID': node_id}
    assert fence.plan_release(conf(), 'demo/demo-wd', volumes, here, placed) == [
        [fence.ZFS, 'set', 'readonly=off', fenced['name']],
        [fence.ZFS, 'inherit', fence.FENCED, fenced['name']],
    ]
    refusals = [
        ('demo/demo-wd', fence.parse_volumes(CAPTURED['listing_before']), here, placed, 'is not fenced'),
        ('demo/nothing', volumes, here, placed, 'is no volume of the zfs-dataset plugin'),
        ('demo/../x', volumes, here, placed, 'give the volume as <namespace>/<name>'),
        ('demo-wd', volumes, here, placed, 'give the volume as <namespace>/<name>'),
        ('demo/demo-wd', volumes, dict(here, Status='down'), placed, 'do not see this node ready (down)'),
        # The servers moved it (a failover), though the node's own client may still list it.
        ('demo/demo-wd', volumes, here, dict(placed, NodeID='other'), 'on node other'),
        ('demo/demo-wd', volumes, here, None, 'not known to them'),
        ('demo/demo-wd', [dict(fenced, moved=True)], here, placed, 'marked as moved'),
    ]
    for relative, listed, node_seen, volume_seen, message in refusals:
        with pytest.raises(fence.FenceError, match=message.replace('(', r'\(').replace(')', r'\)')):
            fence.plan_release(conf(), relative, listed, node_seen, volume_seen)


def test_only_an_agent_of_roots_on_this_host_is_believed(tmp_path):
    """The owner of the agent's end of a real TCP connection on this host, from the kernel's table; a table row of
    another user's, or none, is not root's."""
    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    with listener, socket.create_connection(listener.getsockname()) as client:
        # Not accepted yet: no process holds the agent's end.
        assert fence.connection_owner(client) is None
        accepted, _address = listener.accept()
        assert fence.connection_owner(client) == os.getuid()
        agent, ours = (fence._table_address(a) for a in (client.getpeername(), client.getsockname()))
        row = '   0: %s %s %s 00000000:00000000 00:00000000 00000000 %5d        0 %s 1'
        table = tmp_path / 'tcp'

        def owner(*rows):
            table.write_text('header\n' + ''.join(row % r + '\n' for r in rows))
            return fence.connection_owner(client, tables={'tcp': str(table)})

        assert owner((agent, ours, '01', 65534, '77')) == 65534
        # Only the established row of this exact pair, held by a process: not a TIME_WAIT row (uid 0, inode 0), not
        # another address on the same ports (a user's listener on 127.0.0.2), and never one of two.
        other = agent.replace('0100007F', '0200007F')
        assert owner((agent, ours, '06', 0, '0'), (other, ours, '01', 0, '78')) is None
        assert owner((agent, ours, '01', 0, '77'), (agent, ours, '01', 0, '79')) is None
        assert owner((agent, ours, '06', 0, '0'), (agent, ours, '01', 0, '77')) == 0
        accepted.close()
    assert fence._table_address(('127.0.0.1', 4646)) == '0100007F:1226'
    assert fence._table_address(('::1', 4646, 0, 0)) == '00000000000000000000000001000000:1226'
    assert fence._table_address(('::ffff:127.0.0.1', 4646)) == '0000000000000000FFFF00000100007F:1226'


def test_an_agent_listening_on_every_address_is_believed_over_ipv4(tmp_path):
    """Nomad's default bind_addr 0.0.0.0, on which Go listens dual-stack: the agent accepts the watchdog's IPv4
    connection on an IPv6 socket, whose row the kernel writes in tcp6 with IPv4-mapped addresses. The watchdog first
    read tcp alone, and the role refused the separate hosts' clients: "the agent's port is not on this host"."""
    listener = socket.socket(socket.AF_INET6)
    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    listener.bind(('::', 0))
    listener.listen(1)
    with listener, socket.create_connection(('127.0.0.1', listener.getsockname()[1])) as client:
        accepted, _address = listener.accept()
        with accepted:
            assert client.family == socket.AF_INET and accepted.family == socket.AF_INET6
            assert fence.connection_owner(client) == os.getuid()
            # The tcp6 row's owner is the answer, whoever it is: a user's agent is not root's; and a pair in both
            # tables is one row too many.
            pair = (client.getpeername(), client.getsockname())
            agent, ours = (fence._table_address(('::ffff:' + a[0], a[1])) for a in pair)
            plain = [fence._table_address(a) for a in pair]
            row = '   0: %s %s 01 00000000:00000000 00:00000000 00000000 %5d        0 %s 1\n'
            tcp, tcp6 = tmp_path / 'tcp', tmp_path / 'tcp6'
            tcp.write_text('header\n')
            tcp6.write_text('header\n' + row % (agent, ours, 65534, '77'))
            tables = {'tcp': str(tcp), 'tcp6': str(tcp6)}
            assert fence.connection_owner(client, tables=tables) == 65534
            tcp.write_text('header\n' + row % (plain[0], plain[1], 0, '78'))
            assert fence.connection_owner(client, tables=tables) is None


class Agent(http.server.BaseHTTPRequestHandler):
    """An agent that answers each GET with what the test put in `answers`."""

    answers = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        Agent.seen.append((self.path, self.headers.get('X-Nomad-Token')))
        kind, payload = Agent.answers.pop(0)
        if kind == 'garbage':
            self.wfile.write(payload)
            return
        self.send_response(kind)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_the_agent_is_asked_without_a_proxy_and_whatever_it_answers_never_crashes_the_watch(tmp_path, monkeypatch):
    server = http.server.HTTPServer(('127.0.0.1', 0), Agent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    token = tmp_path / 'token'
    token.write_text('s3cret\n')
    monkeypatch.setenv('http_proxy', 'http://127.0.0.1:9')
    Agent.seen, Agent.answers = (
        [],
        [
            (200, b'{"Status": "ready"}'),
            (403, b'Permission denied'),
            ('garbage', b'not http at all\r\n\r\n'),
        ],
    )
    node = fence.Node(conf(addr='http://127.0.0.1:%d' % server.server_port, token_file=str(token)), timeout=5)
    try:
        assert node.read() == (200, '{"Status": "ready"}')
        assert node.read() == (403, 'HTTP 403 Forbidden')
        status, why = node.read()
        assert status == 0 and why.startswith('no answer from the agent') and 's3cret' not in why
    finally:
        server.shutdown()
    assert Agent.seen == [('/v1/node/%s' % conf()['node_id'], 's3cret')] * 3


class Clock:
    """The boot clock, time.time and time.sleep of a watch that stops after `checks` checks."""

    def __init__(self, checks, now=1000.0):
        self.now, self.checks = now, checks

    def boot_clock(self):
        return self.now

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.checks -= 1
        if not self.checks:
            raise StopIteration
        self.now += seconds


NO_ANSWER = (0, 'no answer')


@pytest.mark.parametrize(
    'answers, kept, fenced_at',
    [
        # Out of contact from the start: fenced at the fifth check (20 s), then at each check after.
        ([NO_ANSWER] * 6, None, [1020.0, 1025.0]),
        # Back in contact before fence_after: nothing.
        ([NO_ANSWER] * 3 + [(200, '{"Status": "ready"}')] + [NO_ANSWER] * 2, None, []),
        # Seen down by the servers, while the agent answers: that counts as out of contact too.
        ([(200, '{"Status": "down"}')] * 6, None, [1020.0, 1025.0]),
        # Restarted (killed, or stopped and restarted by systemd) 15 s after its last contact: fenced 5 s later.
        ([NO_ANSWER] * 3, 985.0, [1005.0, 1010.0]),
        # Started after a boot (nothing in /run), its last contact 15 s before on the wall clock: fenced 5 s later.
        ([NO_ANSWER] * 3, 'wall 985', [1005.0, 1010.0]),
        # After a boot that took longer than fence_after: fenced at once.
        ([NO_ANSWER] * 2, 'wall 900', [1000.0, 1005.0]),
        # After a boot, seen ready: the wall clock's contact is kept.
        ([(200, '{"Status": "ready"}')] * 2, 'wall 900', []),
    ],
)
def test_the_watch_fences_once_the_node_is_out_of_contact_for_fence_after(
    monkeypatch, tmp_path, answers, kept, fenced_at
):
    clock, calls = Clock(len(answers)), []
    monkeypatch.setattr(fence, 'STATE_DIR', str(tmp_path))
    monkeypatch.setattr(fence, 'KEPT_DIR', str(tmp_path / 'kept'))
    if isinstance(kept, str):
        (tmp_path / 'kept').mkdir()
        (tmp_path / 'kept' / 'b.conf.last').write_text(kept.split()[1])
        kept = float(kept.split()[1])
    elif kept is not None:
        (tmp_path / 'b.conf.last').write_text(str(kept))
    monkeypatch.setattr(fence, 'time', clock)
    monkeypatch.setattr(fence, 'boot_clock', clock.boot_clock)
    monkeypatch.setattr(fence.Node, 'read', lambda self: answers[len(answers) - clock.checks])
    monkeypatch.setattr(fence, 'fence', lambda conf, now, known: calls.append(now) or known)
    monkeypatch.setattr(fence, 'say', lambda *args: None)
    monkeypatch.delenv('NOTIFY_SOCKET', raising=False)
    conf_path = tmp_path / 'b.conf'
    conf_path.write_text(CONF)
    with pytest.raises(StopIteration):
        fence.watch(conf(), str(conf_path))
    assert calls == fenced_at
    # What it kept: the start (a first start counts as contact) or the contact kept before, or the last contact.
    last = max(
        [kept if kept is not None else 1000.0]
        + [1000.0 + 5 * i for i, a in enumerate(answers) if a[0] == 200 and 'ready' in a[1]]
    )
    assert float((tmp_path / 'b.conf.last').read_text()) == last
    contacts = [1000.0 + 5 * i for i, a in enumerate(answers) if a[0] == 200 and 'ready' in a[1]]
    if contacts:
        # On the wall clock too, for the first start after a boot.
        assert float((tmp_path / 'kept' / 'b.conf.last').read_text()) == contacts[-1]


def test_main_refuses_a_bad_call_or_configuration_naming_it(tmp_path, capsys):
    assert fence.main(['zfs-fence', 'release', 'x']) == 2
    assert capsys.readouterr().err.startswith('usage: zfs-fence watch <conf>')
    bad = tmp_path / 'b.conf'
    bad.write_text(CONF.replace('fence_after=20', 'fence_after=5'))
    assert fence.main(['zfs-fence', 'watch', str(bad)]) == 1
    assert 'fence_after is' in capsys.readouterr().err


def test_a_kept_contact_that_is_no_time_between_the_boot_and_now_counts_as_a_first_start(tmp_path, monkeypatch):
    monkeypatch.setattr(fence, 'STATE_DIR', str(tmp_path))
    monkeypatch.setattr(fence, 'KEPT_DIR', str(tmp_path / 'kept'))
    kept = fence.LastContact('/etc/nomad-zfs-csi/fence/b.conf')
    for text in ('nan', 'inf', '-1', '2000', 'x', ''):
        (tmp_path / 'b.conf.last').write_text(text)
        assert kept.load(1000.0, 1796184204.0) == 1000.0, text
    kept.save(985.5)
    assert kept.load(1000.0, 1796184204.0) == 985.5
    # After a boot (nothing in /run): the wall clock's contact, on the boot clock (before the boot: below 0); at the
    # boot where the wall clock went back since.
    kept.save(985.5, 1796184200.0)
    (tmp_path / 'b.conf.last').unlink()
    assert kept.load(30.0, 1796184300.0) == -70.0
    # Long ago where the wall clock went back since, or the file cannot be read: a failover may have counted the
    # node fenced meanwhile.
    assert kept.load(30.0, 1796184100.0) == 30.0 - fence.LONG_AGO
    for text in ('', 'x', 'nan'):
        (tmp_path / 'kept' / 'b.conf.last').write_text(text)
        assert kept.load(30.0, 1796184300.0) == 30.0 - fence.LONG_AGO, text


def test_the_tasks_are_killed_first_from_the_hosts_mounts_whatever_zfs_does(tmp_path, monkeypatch):
    """A stuck or failing zfs, at the first fence (no listing before), never keeps the kill from the tasks that
    mount a volume: the host's own mountinfo (pid 1's) says where each volume is mounted."""
    processes = [(p['pid'], p['cgroup'], p['mountinfo'].splitlines) for p in CAPTURED['processes']]
    [host] = [p for p in CAPTURED['processes'] if p['pid'] == '1']
    mounted = fence.host_volumes('nodeb/nomad/volumes', host['mountinfo'].splitlines())
    assert DATASET in [v['name'] for v in mounted]
    [scope] = fence.task_scopes(mounted, lambda: processes)
    (tmp_path / scope.lstrip('/')).mkdir(parents=True)
    monkeypatch.setattr(fence, 'CGROUP_ROOT', str(tmp_path))
    monkeypatch.setattr(fence, 'proc_processes', lambda: processes)
    monkeypatch.setattr(fence, '_mountinfo', lambda pid: dict((p[0], p[2]) for p in processes)[str(pid)])
    monkeypatch.setattr(fence, 'say', lambda *args: None)
    ran = []

    def stuck(argv):
        ran.append(argv[1])
        # By then, the task was killed.
        assert (tmp_path / scope.lstrip('/') / 'cgroup.kill').read_text() == '1'
        raise fence.FenceError('zfs list took more than 20 s')

    monkeypatch.setattr(fence, 'zfs', stuck)
    with pytest.raises(fence.FenceError):
        fence.fence(conf(), 0, [])
    assert ran == ['list']


def test_a_zfs_process_that_hangs_is_given_up_and_not_waited_for(monkeypatch):
    monkeypatch.setattr(fence, 'ZFS_TIMEOUT', 0.2)
    with pytest.raises(fence.FenceError, match='zfs 30 took more than 0 s'):
        fence.zfs(['sleep', '30'])
    with pytest.raises(fence.FenceError, match='zfs -c failed: no such dataset'):
        fence.zfs(['sh', '-c', 'echo no such dataset >&2; exit 1'])


def test_check_says_what_the_watch_would_see(monkeypatch, capsys):
    monkeypatch.setattr(fence.Node, 'read', lambda self: (200, '{"Status": "ready"}'))
    fence.check(conf())
    assert 'in contact' in capsys.readouterr().out
    monkeypatch.setattr(fence.Node, 'read', lambda self: (0, "the agent's port is uid 65534's"))
    with pytest.raises(fence.FenceError, match="out of contact: the agent's port is uid 65534's"):
        fence.check(conf())


def test_a_watch_that_starts_out_of_contact_fences_before_it_logs(monkeypatch, tmp_path):
    """syslog may block on a stalled journal: the first fence comes before the first message."""
    clock, events = Clock(2), []
    monkeypatch.setattr(fence, 'STATE_DIR', str(tmp_path))
    monkeypatch.setattr(fence, 'KEPT_DIR', str(tmp_path / 'kept'))
    (tmp_path / 'kept').mkdir()
    (tmp_path / 'kept' / 'b.conf.last').write_text('900')  # on the wall clock: no /run file after a boot
    monkeypatch.setattr(fence, 'time', clock)
    monkeypatch.setattr(fence, 'boot_clock', clock.boot_clock)
    monkeypatch.setattr(fence.Node, 'read', lambda self: NO_ANSWER)
    monkeypatch.setattr(fence, 'fence', lambda conf, now, known: events.append('fence') or known)
    monkeypatch.setattr(fence, 'say', lambda message, *args: events.append(message))
    monkeypatch.delenv('NOTIFY_SOCKET', raising=False)
    conf_path = tmp_path / 'b.conf'
    conf_path.write_text(CONF)
    with pytest.raises(StopIteration):
        fence.watch(conf(), str(conf_path))
    assert events[0] == 'fence' and events[1].startswith('watching node') and '(100 s out of contact' in events[1]
    assert events[2] == 'out of contact: no answer' and events[3:] == ['fence']
