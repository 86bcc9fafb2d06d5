"""The host volume plugin's decisions, driven through run() with a zfs that answers from memory.

The datasets' properties are those real OpenZFS 2.3.2 printed (tests/unit/fixtures); what real zfs
and Nomad do with the plugin is tested on the VM (tests/integration/stack/test_host_volume_plugin.py).
"""

import importlib.util
import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest

from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

PLUGIN_PATH = Path(__file__).resolve().parents[3] / 'roles' / 'host_volume_plugin' / 'files' / 'zfs-dataset.py'
SPEC = importlib.util.spec_from_file_location('zfs_dataset_plugin', str(PLUGIN_PATH))
plugin = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(plugin)

CONF = 'parent=tank/nomad/volumes\n'
VOLUME_ID = '6d0f7a5e-2c1b-4f7e-9a35-0c6a2f3b9e11'
DATASET = 'tank/nomad/volumes/team-a/pg'
# `zfs get -Hp all` of a filesystem on OpenZFS 2.3.2: property -> value.
CAPTURED = dict(
    (line.split('\t')[1], line.split('\t')[2])
    for line in (FIXTURES / 'zfs_get_2.3.2.txt').read_text().splitlines()
    if line.startswith('tank/fixture/csi\t')
)


def request_env(**overrides):
    env = {
        'DHV_OPERATION': 'create',
        'DHV_NAMESPACE': 'team-a',
        'DHV_VOLUME_NAME': 'pg',
        'DHV_VOLUME_ID': VOLUME_ID,
        'DHV_CAPACITY_MIN_BYTES': '0',
        'DHV_CAPACITY_MAX_BYTES': str(1 << 30),
        'DHV_PARAMETERS': '{}',
    }
    env.update(overrides)
    return env


class MemoryZfs(plugin.Zfs):
    """Answers zfs get/list from {dataset: properties} and applies create, set, inherit, rename, mount and destroy.
    A property's source is 'local' where sources says so, and 'default' otherwise."""

    def __init__(self, *names):
        super().__init__(run=self.answer)
        self.datasets, self.sources, self.commands, self.processes = {}, {}, [], 0
        for name in names:
            self.add(name)

    def add(self, name, **props):
        self.datasets[name] = dict(CAPTURED, **dict({'mountpoint': '/' + name}, **props))
        self.sources[name] = {}
        return self.datasets[name]

    def answer(self, argv, **kwargs):
        assert isinstance(argv, list) and argv[0] == '/usr/sbin/zfs'
        self.processes += 1
        verb, args = argv[1], argv[2:]
        if verb in ('get', 'list'):
            return self.print_datasets(verb, args)
        self.commands.append(argv[1:])
        target = args[-1]
        if verb not in ('create', 'rename') and target not in self.datasets:
            return subprocess.CompletedProcess(argv, 1, '', "cannot open '%s': dataset does not exist\n" % target)
        if verb == 'create':
            props = self.add(target)
            props.update(opt.split('=', 1) for opt in args[1:-1] if '=' in opt)
        elif verb == 'set':
            self.datasets[target].update(opt.split('=', 1) for opt in args[:-1])
        elif verb == 'inherit':
            self.sources[target].pop(args[0], None)
            self.datasets[target][args[0]] = CAPTURED[args[0]]
        elif verb == 'rename':
            source = args[-2]
            for name in [n for n in self.datasets if n == source or n.startswith(source + '@')]:
                moved = target + name[len(source) :]
                self.datasets[moved], self.sources[moved] = self.datasets.pop(name), self.sources.pop(name)
                if 'mountpoint' not in self.sources[moved]:  # inherited: from the new parent now
                    self.datasets[moved]['mountpoint'] = '/' + moved
        elif verb in ('mount', 'unmount'):
            self.datasets[target]['mounted'] = 'yes' if verb == 'mount' else 'no'
        elif verb == 'destroy':
            del self.datasets[target]
        return subprocess.CompletedProcess(argv, 0, '', '')

    def print_datasets(self, verb, args):
        """As real zfs: the existing targets printed, each missing one on stderr, and exit 1 if any is."""
        if verb == 'get':
            assert args[:3] == ['-H', '-p', '-o'] and args[3] in ('name,property,value', 'property,value,source')
            wanted, targets = args[4].split(','), args[5:]
        elif args[:3] == ['-H', '-o', 'name']:  # the dataset and everything below it
            assert args[3:6] == ['-r', '-t', 'filesystem,volume']
            names = [n for n in sorted(self.datasets) if n == args[-1] or n.startswith(args[-1] + '/')]
            return subprocess.CompletedProcess(['zfs', verb], 0, ''.join(n + '\n' for n in names), '')
        elif args[:3] == ['-H', '-o', 'name,' + plugin.MARK]:  # the filesystems of each dataset, recursively
            assert args[3:6] == ['-t', 'filesystem', '-r']
            out = err = ''
            for top in args[6:]:
                if top not in self.datasets:
                    err += "cannot open '%s': dataset does not exist\n" % top
                below = [n for n in sorted(self.datasets) if (n == top or n.startswith(top + '/')) and '@' not in n]
                out += ''.join('%s\t%s\n' % (n, self.datasets[n].get(plugin.MARK, '-')) for n in below)
            return subprocess.CompletedProcess(['zfs', verb], 1 if err else 0, out, err)
        else:
            assert args[:3] == ['-H', '-o', 'name,%s,%s' % (plugin.MARK, plugin.MOVED)] and args[-3:-1] == ['-d', '1']
            targets = args[-1:]
        out = err = ''
        for target in targets:
            if target not in self.datasets:
                err += "cannot open '%s': dataset does not exist\n" % target
            elif verb == 'get' and args[3] == 'name,property,value':
                props = self.datasets[target]
                out += ''.join('%s\t%s\t%s\n' % (target, p, props.get(p, '-')) for p in wanted)
            elif verb == 'get':
                props, sources = self.datasets[target], self.sources[target]
                out += ''.join('%s\t%s\t%s\n' % (p, props.get(p, '-'), sources.get(p, 'default')) for p in wanted)
            else:
                out += ''.join(
                    '%s\t%s\t%s\n' % (name, props.get(plugin.MARK, '-'), props.get(plugin.MOVED, '-'))
                    for name, props in sorted(self.datasets.items())
                    if name == target or name.startswith(target + '@')
                )
        return subprocess.CompletedProcess(['zfs', verb], 1 if err else 0, out, err)


def run(zfs, operation='create', **env):
    return plugin.run(operation, request_env(**env), CONF, zfs)


def test_create_makes_a_marked_quotad_dataset_and_answers_where_it_is():
    zfs = MemoryZfs('tank/nomad/volumes')
    answer = run(zfs, DHV_PARAMETERS=json.dumps({'compression': 'zstd', 'recordsize': '16K'}))
    assert answer == {'path': '/' + DATASET, 'bytes': 1 << 30}
    assert zfs.commands == [
        [
            'create',
            '-p',
            '-o',
            'compression=zstd',
            '-o',
            plugin.MARK + '=' + VOLUME_ID,
            '-o',
            'recordsize=16384',
            '-o',
            'refquota=%d' % (1 << 30),
            DATASET,
        ]
    ]


def test_a_repeated_create_runs_one_zfs_get_and_answers_the_same():
    zfs = MemoryZfs('tank/nomad/volumes')
    first = run(zfs, DHV_PARAMETERS='{"recordsize": "128K", "atime": "off"}')
    assert zfs.processes == 4, 'a new volume: get it and its parent, list its namespace, create, get it'
    del zfs.commands[:]
    zfs.processes = 0
    assert run(zfs, DHV_PARAMETERS='{"recordsize": "128K", "atime": "off"}') == first
    assert zfs.commands == [] and zfs.processes == 1


def test_a_new_capacity_is_one_set_of_refquota():
    zfs = MemoryZfs('tank/nomad/volumes')
    run(zfs)
    del zfs.commands[:]
    assert run(zfs, DHV_CAPACITY_MAX_BYTES=str(2 << 30))['bytes'] == 2 << 30
    assert zfs.commands == [['set', 'refquota=%d' % (2 << 30), DATASET]]


def test_a_volume_opted_out_of_snapshots_is_opted_out_of_pulls_and_back_in_with_them():
    zfs = MemoryZfs('tank/nomad/volumes')
    run(zfs, DHV_PARAMETERS='{"com.sun:auto-snapshot": "false"}')
    assert [c for c in zfs.commands[0] if 'auto-snapshot' in c or 'syncoid' in c] == [
        'com.sun:auto-snapshot=false',
        'syncoid:sync=false',
    ]
    del zfs.commands[:]
    run(zfs, DHV_PARAMETERS='{"com.sun:auto-snapshot": "false"}')
    assert zfs.commands == []
    run(zfs, DHV_PARAMETERS='{"com.sun:auto-snapshot": "true"}')
    assert zfs.commands == [['set', 'com.sun:auto-snapshot=true', 'syncoid:sync=true', DATASET]]


def test_capacity_min_is_used_when_there_is_no_max():
    zfs = MemoryZfs('tank/nomad/volumes')
    assert run(zfs, DHV_CAPACITY_MAX_BYTES='0', DHV_CAPACITY_MIN_BYTES='1048576')['bytes'] == 1048576


def test_an_unmounted_volume_is_mounted_again():
    zfs = MemoryZfs('tank/nomad/volumes')
    run(zfs)
    zfs.datasets[DATASET]['mounted'] = 'no'
    del zfs.commands[:]
    assert run(zfs)['path'] == '/' + DATASET
    assert zfs.commands == [['mount', DATASET]]


@pytest.mark.parametrize('mark', ['-', 'b1c2d3e4-0000-4000-8000-000000000000'])
def test_a_dataset_without_this_volumes_mark_is_neither_taken_nor_destroyed(mark):
    zfs = MemoryZfs('tank/nomad/volumes')
    zfs.add(DATASET, **{plugin.MARK: mark})
    for operation in ('create', 'delete'):
        with pytest.raises(plugin.PluginError, match='not volume ' + VOLUME_ID):
            run(zfs, operation)
    assert zfs.commands == [] and DATASET in zfs.datasets


def test_a_missing_parent_is_named_and_not_created():
    zfs = MemoryZfs()
    with pytest.raises(plugin.PluginError, match='the parent tank/nomad/volumes does not exist'):
        run(zfs)
    assert zfs.commands == []


@pytest.mark.parametrize(
    'field, value',
    [
        ('DHV_VOLUME_NAME', '..'),
        ('DHV_VOLUME_NAME', 'a/b'),
        ('DHV_VOLUME_NAME', 'a@b'),
        ('DHV_VOLUME_NAME', 'a b'),
        ('DHV_VOLUME_NAME', '-o'),
        ('DHV_VOLUME_NAME', ''),
        ('DHV_NAMESPACE', '../x'),
        ('DHV_NAMESPACE', '.hidden'),
    ],
)
def test_names_that_are_not_one_dataset_component_are_refused_before_zfs_runs(field, value):
    zfs = MemoryZfs('tank/nomad/volumes')
    for operation in ('create', 'delete'):
        with pytest.raises(plugin.PluginError, match='cannot name a dataset'):
            run(zfs, operation, **{field: value})
    assert zfs.commands == []


@pytest.mark.parametrize(
    'parameters, message',
    [
        ({'mountpoint': '/etc'}, "parameter 'mountpoint' is not allowed; use only atime, com.sun:auto-snapshot"),
        ({'setuid': 'on'}, "parameter 'setuid' is not allowed"),
        ({'recordsize': '100K'}, 'recordsize=.100K. is invalid; use a power of two'),
        ({'compression': 'lz4 -o mountpoint=/'}, 'compression=.* is invalid'),
        ({'atime': 'yes'}, 'atime=.yes. is invalid; use on or off'),
        ({'delete_snapshots': '1'}, 'delete_snapshots=.1. is invalid; use true or false'),
    ],
)
def test_parameters_outside_the_allowlist_are_refused_before_zfs_runs(parameters, message):
    zfs = MemoryZfs('tank/nomad/volumes')
    with pytest.raises(plugin.PluginError, match=message):
        run(zfs, DHV_PARAMETERS=json.dumps(parameters))
    assert zfs.commands == []


def test_a_volume_without_capacity_is_refused():
    zfs = MemoryZfs('tank/nomad/volumes')
    with pytest.raises(plugin.PluginError, match='set capacity_min or capacity_max'):
        run(zfs, DHV_CAPACITY_MAX_BYTES='0')
    assert zfs.commands == []


def test_delete_destroys_the_marked_dataset_without_recursion():
    zfs = MemoryZfs('tank/nomad/volumes')
    run(zfs)
    del zfs.commands[:]
    assert run(zfs, 'delete') == {}
    assert zfs.commands == [['destroy', DATASET]]
    assert run(zfs, 'delete') == {}, 'a repeated delete of a gone volume succeeds'


def test_delete_refuses_snapshots_unless_the_volume_says_to_take_them():
    zfs = MemoryZfs('tank/nomad/volumes')
    run(zfs)
    zfs.add(DATASET + '@daily')
    del zfs.commands[:]
    with pytest.raises(plugin.PluginError, match=r'has 1 snapshot\(s\) \(%s@daily\).*delete_snapshots' % DATASET):
        run(zfs, 'delete')
    assert zfs.commands == []
    run(zfs, 'delete', DHV_PARAMETERS='{"delete_snapshots": "true"}')
    assert zfs.commands == [['destroy', DATASET + '@daily'], ['destroy', DATASET]]


def test_delete_takes_the_collections_own_snapshots_with_it_and_still_refuses_others():
    zfs = MemoryZfs('tank/nomad/volumes')
    run(zfs)
    zfs.add(DATASET + '@autosnap_2026-11-25_09:00:00_hourly')
    zfs.add(DATASET + '@nomad-zfs-csi-move_2026-11-25_10:00:00')  # a move's final snapshot, adopted with the data
    del zfs.commands[:]
    assert run(zfs, 'delete') == {}
    assert zfs.commands == [
        ['destroy', DATASET + '@autosnap_2026-11-25_09:00:00_hourly'],
        ['destroy', DATASET + '@nomad-zfs-csi-move_2026-11-25_10:00:00'],
        ['destroy', DATASET],
    ]
    run(zfs)
    zfs.add(DATASET + '@autosnap_2026-11-25_09:00:00_daily')
    zfs.add(DATASET + '@before-upgrade')
    del zfs.commands[:]
    with pytest.raises(plugin.PluginError, match=r'has 1 snapshot\(s\) \(%s@before-upgrade\)' % DATASET):
        run(zfs, 'delete')
    assert zfs.commands == []


def mountinfo_of(zfs, *elsewhere):
    """/proc/<pid>/mountinfo as the plugin reads it: its own namespace mounts the volume while zfs says mounted,
    and each pid of elsewhere (a task's namespace, in a bind mount) holds it too."""
    line = '512 30 0:77 / /%s rw,relatime shared:280 - zfs %s rw,xattr,posixacl,casesensitive\n' % (DATASET, DATASET)
    bind = '903 870 0:77 / /data rw,relatime master:280 - zfs %s rw,xattr,posixacl,casesensitive\n' % DATASET

    def read():
        mounted = DATASET in zfs.datasets and zfs.datasets[DATASET]['mounted'] == 'yes'
        return [(str(os.getpid()), line if mounted else ''), ('1', 'unrelated - ext4 /dev/vda1 rw\n')] + [
            (pid, bind) for pid in elsewhere
        ]

    return read


def test_delete_unmounts_first_and_destroys_nothing_while_a_task_still_mounts_it():
    zfs = MemoryZfs('tank/nomad/volumes')
    run(zfs)
    zfs.datasets[DATASET]['mounted'] = 'yes'
    zfs.add(DATASET + '@autosnap_2026-11-25_09:00:00_hourly')
    del zfs.commands[:]
    with pytest.raises(plugin.PluginError, match=r'%s is busy: .* process\(es\) 4242 still mounts it' % DATASET):
        plugin.run('delete', request_env(), CONF, zfs, mountinfo=mountinfo_of(zfs, '4242'))
    # Unmounted to see whether anyone else holds it, and mounted again: nothing destroyed, no snapshot lost.
    assert zfs.commands == [['unmount', DATASET], ['mount', DATASET]]
    assert DATASET + '@autosnap_2026-11-25_09:00:00_hourly' in zfs.datasets
    del zfs.commands[:]
    assert plugin.run('delete', request_env(), CONF, zfs, mountinfo=mountinfo_of(zfs)) == {}
    assert zfs.commands == [
        ['unmount', DATASET],
        ['destroy', DATASET + '@autosnap_2026-11-25_09:00:00_hourly'],
        ['destroy', DATASET],
    ]


def test_no_command_ever_recurses():
    request = plugin.parse_request(request_env(DHV_PARAMETERS='{"delete_snapshots": "true"}'), 'tank/p')
    current = {plugin.MARK: VOLUME_ID, 'type': 'filesystem'}
    for argv in plugin.plan_delete(request, current, ['tank/p/team-a/pg@1', 'tank/p/team-a/pg@2']):
        assert '-r' not in argv and '-R' not in argv


@pytest.mark.parametrize('text', ['', 'parent=\n', 'parent=tank/../x\n', 'parent=tank/a b\n'])
def test_a_missing_or_bad_parent_line_names_the_role(text):
    with pytest.raises(plugin.PluginError, match='host_volume_plugin role'):
        plugin.read_parent(text)


def test_the_executable_answers_nomad_in_json():
    """Run as Nomad runs it: the file itself, argv[1] the operation and no PATH. sh answers the fingerprint
    (Nomad gives it one second) and hands everything else to Python."""
    assert os.access(str(PLUGIN_PATH), os.X_OK)
    done = subprocess.run(
        [str(PLUGIN_PATH), 'fingerprint'], env={'DHV_OPERATION': 'fingerprint'}, stdout=subprocess.PIPE, check=False
    )
    assert done.returncode == 0 and re.fullmatch(r'\d+\.\d+\.\d+', json.loads(done.stdout)['version'])
    done = subprocess.run(
        [str(PLUGIN_PATH), 'create'], env=request_env(DHV_VOLUME_NAME='a/b'), stdout=subprocess.PIPE, check=False
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)['error'].startswith('zfs-dataset: ')
    with pytest.raises(plugin.PluginError, match='sh answers fingerprint'):
        plugin.run('fingerprint', {}, CONF, captured_zfs(0, '', ''))


def captured_zfs(returncode, stdout, stderr):
    return plugin.Zfs(run=lambda argv, **kwargs: subprocess.CompletedProcess(argv, returncode, stdout, stderr))


def test_one_zfs_get_reads_the_volume_and_its_parent_even_when_the_volume_is_missing():
    # What OpenZFS 2.3.2 printed in the VM for `zfs get ... tank/cap/p/ns/nope tank/cap/p` (exit 1).
    zfs = captured_zfs(
        1,
        'tank/cap/p\ttype\tfilesystem\ntank/cap/p\tnomad-zfs-csi:host-volume-id\t-\ntank/cap/p\trefquota\t0\n',
        "cannot open 'tank/cap/p/ns/nope': dataset does not exist\n",
    )
    assert zfs.read('tank/cap/p/ns/nope', 'tank/cap/p') == {
        'tank/cap/p': {'type': 'filesystem', plugin.MARK: '-', 'refquota': '0'}
    }


def test_one_zfs_list_gives_the_marks_and_only_the_volumes_own_snapshots():
    # `zfs list -H -o name,<mark>,<moved> -t filesystem,volume,snapshot -d 1` in the VM: a child inherits the marks.
    zfs = captured_zfs(0, 'tank/p/ns/vol\tabc\t-\ntank/p/ns/vol@s1\tabc\t-\ntank/p/ns/vol/child\tabc\t-\n', '')
    assert zfs.listing('tank/p/ns/vol') == ({plugin.MARK: 'abc', plugin.MOVED: '-'}, ['tank/p/ns/vol@s1'])
    assert captured_zfs(1, '', "cannot open 'tank/p/ns/vol': dataset does not exist\n").listing('tank/p/ns/vol') == (
        None,
        [],
    )


def test_a_zfs_read_that_fails_for_another_reason_is_an_error():
    zfs = captured_zfs(1, '', "cannot open 'tank/p': permission denied\n")
    with pytest.raises(plugin.PluginError, match='zfs get failed: .*permission denied'):
        zfs.read('tank/p/ns/vol', 'tank/p')


def test_a_delete_is_one_zfs_list_and_one_destroy():
    zfs = MemoryZfs('tank/nomad/volumes')
    run(zfs)
    zfs.processes = 0
    run(zfs, 'delete')
    assert zfs.processes == 2


# Adoption: a replica the zfs_replication role pulled from the node the volume lived on, and the delete there.
REPLICAS = 'tank/nomad/replica'
ADOPT_CONF = CONF + 'replica_parent=%s\n' % REPLICAS
SOURCE = '10.0.0.1/tank/nomad/volumes'
REPLICA = '%s/%s/team-a/pg' % (REPLICAS, SOURCE)
ADOPT = json.dumps({'adopt_replica': SOURCE})


@pytest.fixture
def said(monkeypatch):
    """What the plugin wrote to syslog."""
    lines = []
    monkeypatch.setattr(plugin.syslog, 'syslog', lambda priority, message: lines.append((priority, message)))
    return lines


def with_replica(**props):
    """The volumes parent, and a replica as a pull leaves it: received unmounted under the inert replica parent,
    with a snapshot; readonly set on the replica itself, the rest inherited."""
    zfs = MemoryZfs('tank/nomad/volumes', REPLICAS)
    zfs.add(REPLICA, **dict({'readonly': 'on', 'mountpoint': 'none', 'mounted': 'no'}, **props))
    zfs.sources[REPLICA] = {'readonly': 'local'}
    zfs.add(REPLICA + '@autosnap_2026-11-25_09:00:00_hourly')
    return zfs


# The zfs_replication role's pull configuration on this node, as its template writes it.
PULL_CONF = 'SOURCE=zfs-replica@10.0.0.1:tank/nomad/volumes\nPORT=22\nTARGET=%s/%s\n' % (REPLICAS, SOURCE)
PULL_TARGETS = plugin.read_pull_targets([PULL_CONF])


def adopt(zfs, conf=ADOPT_CONF, parameters=ADOPT, **env):
    return plugin.run('create', request_env(DHV_PARAMETERS=parameters, **env), conf, zfs, PULL_TARGETS)


def test_a_create_asked_to_adopts_the_replica_with_its_snapshots_writable_and_mounted(said):
    zfs = with_replica()
    assert adopt(zfs) == {'path': '/' + DATASET, 'bytes': 1 << 30}
    assert zfs.commands == [
        ['create', '-p', 'tank/nomad/volumes/team-a'],
        ['rename', '-u', REPLICA, DATASET],
        ['inherit', 'readonly', DATASET],
        ['set', plugin.MARK + '=' + VOLUME_ID, 'refquota=%d' % (1 << 30), DATASET],
        ['mount', DATASET],
    ]
    assert REPLICA not in zfs.datasets and DATASET + '@autosnap_2026-11-25_09:00:00_hourly' in zfs.datasets
    assert zfs.datasets[DATASET]['readonly'] == 'off' and zfs.datasets[DATASET]['mounted'] == 'yes'
    assert said == [(plugin.syslog.LOG_NOTICE, 'adopted %s as %s for volume %s' % (REPLICA, DATASET, VOLUME_ID))]
    # Nomad repeats create at every agent start, with the same parameters: now it is the volume's own dataset.
    del zfs.commands[:]
    zfs.processes = 0
    assert adopt(zfs)['path'] == '/' + DATASET and zfs.commands == [] and zfs.processes == 1


def test_adoption_is_eight_zfs_processes_where_the_namespace_exists():
    zfs = with_replica()
    zfs.add('tank/nomad/volumes/team-a')
    adopt(zfs)
    assert zfs.processes == 8, (
        'get the volume, parent, pool and namespace; get the replica; list below it; rename, inherit, set, mount; get'
    )
    assert zfs.commands[0][0] == 'rename'


@pytest.mark.parametrize(
    'conf, parameters, message',
    [
        (CONF, ADOPT, 'this node has no replica parent to adopt from; set host_volume_plugin_replica_parent'),
        (CONF + 'replica_parent=backup/replica\n', ADOPT, 'another pool than tank/nomad/volumes'),
        (ADOPT_CONF, '{"adopt_replica": "../x"}', 'adopt_replica=.* is invalid; use the path under the replica parent'),
        (ADOPT_CONF, '{"adopt_replica": "a/../../b"}', 'adopt_replica=.* is invalid'),
        (ADOPT_CONF, '{"adopt_replica": "/tank"}', 'adopt_replica=.* is invalid'),
        (ADOPT_CONF, '{"adopt_replica": "a@b"}', 'adopt_replica=.* is invalid'),
        (ADOPT_CONF, '{"adopt_replica": "%s\\n"}' % SOURCE, 'adopt_replica=.* is invalid'),
        # Short of the pull target, namespace and name would reach into it: tank/nomad + volumes/team-a/pg.
        (
            ADOPT_CONF,
            '{"adopt_replica": "10.0.0.1/tank"}',
            '%s/10.0.0.1/tank is not the target of a zfs_replication pull' % REPLICAS,
        ),
        (ADOPT_CONF, '{"adopt_replica": "10.0.0.2/tank/nomad/volumes"}', 'not the target of a zfs_replication pull'),
    ],
    ids=[
        'no-replica-parent',
        'other-pool',
        'dot-dot',
        'dot-dot-inside',
        'absolute',
        'snapshot',
        'newline',
        'short-of-the-target',
        'not-a-pull',
    ],
)
def test_adoption_refusals_come_before_any_zfs_process(conf, parameters, message):
    zfs = with_replica()
    zfs.processes = 0
    with pytest.raises(plugin.PluginError, match=message):
        adopt(zfs, conf, parameters)
    assert zfs.processes == 0 and REPLICA in zfs.datasets


@pytest.mark.parametrize(
    'env, change, message',
    [
        ({'DHV_NAMESPACE': 'team-b'}, {}, 'there is no replica %s/%s/team-b/pg to adopt' % (REPLICAS, SOURCE)),
        ({'DHV_VOLUME_NAME': 'pg2'}, {}, 'there is no replica %s/%s/team-a/pg2 to adopt' % (REPLICAS, SOURCE)),
        ({}, {'receive_resume_token': '1-abc-def'}, 'a pull into %s was interrupted; run that pull again' % REPLICA),
        ({}, {'type': 'volume'}, '%s is a volume, not a filesystem' % REPLICA),
    ],
    ids=['other-namespace', 'other-name', 'interrupted-pull', 'zvol'],
)
def test_only_a_whole_replica_of_the_same_namespace_and_name_is_adopted(env, change, message):
    zfs = with_replica(**change)
    with pytest.raises(plugin.PluginError, match=message):
        adopt(zfs, **env)
    assert zfs.commands == [] and REPLICA in zfs.datasets


def test_a_create_that_does_not_ask_makes_an_empty_dataset_beside_a_replica():
    zfs = with_replica()
    plugin.run('create', request_env(), ADOPT_CONF, zfs)
    assert zfs.commands[0][:2] == ['create', '-p'] and REPLICA in zfs.datasets


def test_an_existing_volume_is_never_replaced_by_a_replica():
    zfs = with_replica()
    run(zfs)
    del zfs.commands[:]
    adopt(zfs)
    assert zfs.commands == [] and REPLICA in zfs.datasets


def test_a_delete_keeps_a_dataset_marked_as_moved_and_says_so(said, capsys):
    zfs = MemoryZfs('tank/nomad/volumes')
    run(zfs)
    zfs.datasets[DATASET].update({plugin.MOVED: 'node-b', 'readonly': 'on'})
    del zfs.commands[:]
    assert run(zfs, 'delete') == {}
    assert zfs.commands == [] and DATASET in zfs.datasets
    [(priority, message)] = said
    assert priority == plugin.syslog.LOG_NOTICE and message.startswith('kept %s: its data moved to node-b' % DATASET)
    assert 'zfs-dataset: kept ' + DATASET in capsys.readouterr().err


def test_a_moved_mark_does_not_let_another_volume_keep_or_take_the_dataset(said):
    zfs = MemoryZfs('tank/nomad/volumes')
    zfs.add(DATASET, **{plugin.MARK: 'b1c2d3e4-0000-4000-8000-000000000000', plugin.MOVED: 'node-b'})
    with pytest.raises(plugin.PluginError, match='not volume ' + VOLUME_ID):
        run(zfs, 'delete')
    assert said == [] and zfs.commands == []


def test_the_configuration_is_read_beside_the_plugin_file(tmp_path, capsys):
    """<the path Nomad runs the plugin by>.conf: one per plugin file, so two plugin IDs or two agents on a host can
    each have a parent of their own."""
    executable = tmp_path / 'zfs-dataset'
    (tmp_path / 'zfs-dataset.conf').write_text(CONF)
    assert plugin.main([str(executable), 'create'], request_env(DHV_VOLUME_NAME='a/b')) == 1
    assert 'cannot name a dataset' in json.loads(capsys.readouterr().out)['error']
    (tmp_path / 'zfs-dataset.conf').unlink()
    assert plugin.main([str(executable), 'create'], request_env()) == 1
    assert json.loads(capsys.readouterr().out) == {
        'error': 'zfs-dataset: cannot read %s.conf (No such file or directory); run the host_volume_plugin role'
        % executable
    }


def test_a_moved_dataset_is_never_live_again_here():
    """Nomad repeats create for its volumes at every agent start: a moved volume's copy is refused, so the node
    does not offer it."""
    zfs = MemoryZfs('tank/nomad/volumes')
    run(zfs)
    zfs.datasets[DATASET].update({plugin.MOVED: 'node-b', 'readonly': 'on'})
    del zfs.commands[:]
    with pytest.raises(plugin.PluginError, match='was moved to node-b .*create the volume on that node'):
        run(zfs)
    assert zfs.commands == []


def test_a_volume_whose_copy_was_set_aside_is_not_made_again_empty():
    """After a failover, the lost node's client state still holds the volume, and Nomad creates it again at each
    agent start: the copy zfs_host_volume_standby set aside, which keeps the volume's mark, stops an empty one."""
    zfs = MemoryZfs('tank/nomad/volumes', 'tank/nomad/volumes/team-a')
    run(zfs)
    aside = DATASET + '.diverged-after-autosnap_1_hourly'
    zfs.datasets[aside] = zfs.datasets.pop(DATASET)
    del zfs.commands[:]
    with pytest.raises(plugin.PluginError, match='its copy here is %s' % re.escape(aside)):
        run(zfs)
    assert zfs.commands == []
    assert run(zfs, DHV_VOLUME_ID=VOLUME_ID.replace('6d0f', '7e1a')) == {'path': '/' + DATASET, 'bytes': 1 << 30}


def test_a_volume_whose_copy_became_the_replica_is_not_made_again_empty():
    """A copy with nothing after the recovery point is renamed into the replica parent, with its mark."""
    zfs = MemoryZfs('tank/nomad/volumes', 'tank/nomad/volumes/team-a', 'tank/nomad/replica')
    plugin.run('create', request_env(), CONF + 'replica_parent=tank/nomad/replica\n', zfs)
    replica = 'tank/nomad/replica/storage-1/tank/nomad/volumes/team-a/pg'
    zfs.datasets[replica] = zfs.datasets.pop(DATASET)
    del zfs.commands[:]
    with pytest.raises(plugin.PluginError, match='its copy here is %s' % re.escape(replica)):
        plugin.run('create', request_env(), CONF + 'replica_parent=tank/nomad/replica\n', zfs)
    assert zfs.commands == []


def test_a_replica_with_a_dataset_below_it_is_not_adopted():
    """A hostile primary can send a child dataset and a symbolic link in the volume; mounted after the adoption,
    the child would cover whatever the link points to."""
    zfs = with_replica()
    zfs.add(REPLICA + '/x', mountpoint='none', mounted='no')
    with pytest.raises(plugin.PluginError, match='%s has datasets below it \\(%s/x\\)' % (REPLICA, REPLICA)):
        adopt(zfs)
    assert zfs.commands == [] and REPLICA + '/x' in zfs.datasets


def test_a_capacity_larger_than_the_pool_is_refused_with_the_pools_size():
    zfs = MemoryZfs('tank', 'tank/nomad/volumes')
    zfs.datasets['tank'].update(used='1000', available=str(10 << 30))
    with pytest.raises(
        plugin.PluginError,
        match='capacity %d bytes is more than pool tank can ever hold \\(%d bytes\\)' % (1 << 60, (10 << 30) + 1000),
    ):
        run(zfs, DHV_CAPACITY_MAX_BYTES=str(1 << 60))
    assert zfs.commands == []
    assert run(zfs, DHV_CAPACITY_MAX_BYTES=str(10 << 30))['bytes'] == 10 << 30


@pytest.mark.parametrize(
    'env',
    [
        {'DHV_PARAMETERS': '{"compression": "lz4\\n"}'},
        {'DHV_PARAMETERS': '{"atime": "off\\n"}'},
        {'DHV_NAMESPACE': 'team-a\n'},
        {'DHV_VOLUME_ID': VOLUME_ID + '\n'},
        {'DHV_CAPACITY_MAX_BYTES': '1024\n'},
        {'DHV_CAPACITY_MAX_BYTES': '\u00b2'},
    ],
    ids=['property', 'atime', 'namespace', 'volume-id', 'capacity', 'unicode-digit'],
)
def test_a_trailing_newline_or_a_foreign_digit_is_refused_before_zfs_runs(env):
    zfs = MemoryZfs('tank/nomad/volumes')
    with pytest.raises(plugin.PluginError):
        run(zfs, **env)
    assert zfs.processes == 0


QUOTA_CONF = CONF + 'volume_quota_percent=200\n'


def test_a_volumes_quota_counts_its_snapshots_and_follows_its_capacity(said):
    """refquota leaves snapshots out: a workload that rewrote its data around the scheduled snapshots made an 8 MiB
    volume hold 22 MiB on the VM. The quota (here twice the capacity) counts them."""
    zfs = MemoryZfs('tank/nomad/volumes')
    plugin.run('create', request_env(), QUOTA_CONF, zfs)
    assert [c for c in zfs.commands[0] if 'quota=' in c] == ['quota=%d' % (2 << 30), 'refquota=%d' % (1 << 30)]
    del zfs.commands[:]
    plugin.run('create', request_env(), QUOTA_CONF, zfs)
    assert zfs.commands == []
    plugin.run('create', request_env(DHV_CAPACITY_MAX_BYTES=str(2 << 30)), QUOTA_CONF, zfs)
    assert zfs.commands == [['set', 'quota=%d' % (4 << 30), 'refquota=%d' % (2 << 30), DATASET]]
    assert said == []


def test_a_quota_below_what_the_volume_uses_is_not_set_and_the_plugin_says_so(said):
    """zfs refuses a quota below the space used, and Nomad's create at the next agent start would then fail: the
    quota stays as it is until snapshots are pruned, and the node's log says why."""
    zfs = MemoryZfs('tank/nomad/volumes')
    plugin.run('create', request_env(), CONF, zfs)
    zfs.datasets[DATASET]['used'] = str(3 << 30)
    del zfs.commands[:]
    assert plugin.run('create', request_env(), QUOTA_CONF, zfs)['bytes'] == 1 << 30
    assert zfs.commands == []
    assert len(said) == 1 and 'more than its quota of %d bytes' % (2 << 30) in said[0][1], said
    zfs.datasets[DATASET]['used'] = str(1 << 30)
    plugin.run('create', request_env(), QUOTA_CONF, zfs)
    assert zfs.commands == [['set', 'quota=%d' % (2 << 30), DATASET]]


def test_an_adopted_replica_gets_the_quota_unless_it_uses_more(said):
    zfs = with_replica()
    adopt(zfs, conf=ADOPT_CONF + 'volume_quota_percent=150\n')
    assert ['set', plugin.MARK + '=' + VOLUME_ID, 'quota=%d' % (3 << 29), 'refquota=%d' % (1 << 30), DATASET] in (
        zfs.commands
    )
    zfs = with_replica(used=str(2 << 30))
    adopt(zfs, conf=ADOPT_CONF + 'volume_quota_percent=150\n')
    assert ['set', plugin.MARK + '=' + VOLUME_ID, 'refquota=%d' % (1 << 30), DATASET] in zfs.commands


@pytest.mark.parametrize('value', ['99', '0', '', 'x', '2OO', '200 ', '1000000'])
def test_a_bad_volume_quota_percent_names_the_role(value):
    with pytest.raises(plugin.PluginError, match='volume_quota_percent=.*host_volume_plugin role'):
        plugin.run('create', request_env(), CONF + 'volume_quota_percent=%s\n' % value, MemoryZfs('tank/nomad/volumes'))


def owning(calls):
    """An own() that records what the plugin asks of the volume's root directory."""
    return lambda path, ownership: calls.append((path, ownership))


def test_the_volumes_root_gets_the_configured_owner_and_mode_unless_the_volume_gives_its_own():
    """A tenant's task runs as an unprivileged user: without capabilities (the clients' allow_caps) it writes into
    its volume only where the root directory lets it."""
    calls, zfs = [], MemoryZfs('tank/nomad/volumes')
    conf = CONF + 'volume_mode=0770\nvolume_uid=1000\nvolume_gid=1000\n'
    plugin.run('create', request_env(), conf, zfs, own=owning(calls))
    assert calls == [('/' + DATASET, {'mode': '0770', 'uid': '1000', 'gid': '1000'})]
    plugin.run('create', request_env(DHV_PARAMETERS='{"uid": "65534", "mode": "755"}'), conf, zfs, own=owning(calls))
    assert calls[1] == ('/' + DATASET, {'mode': '755', 'uid': '65534', 'gid': '1000'})
    plugin.run('create', request_env(), CONF, zfs, own=owning(calls))
    assert len(calls) == 2, 'no mode or owner asked for: the directory is left as it is'


@pytest.mark.parametrize(
    'parameters, conf, message',
    [
        ('{"mode": "0778"}', CONF, 'parameter mode=.*octal mode'),
        ('{"mode": "u+w"}', CONF, 'parameter mode=.*octal mode'),
        ('{"uid": "-1"}', CONF, 'parameter uid=.*numeric user ID'),
        ('{"gid": "root"}', CONF, 'parameter gid=.*numeric group ID'),
        ('{"uid": "4294967296"}', CONF, 'parameter uid='),
        ('{}', CONF + 'volume_mode=777 \n', 'volume_mode=.*host_volume_plugin role'),
    ],
)
def test_a_bad_mode_or_owner_is_refused_before_zfs_runs(parameters, conf, message):
    calls, zfs = [], MemoryZfs('tank/nomad/volumes')
    with pytest.raises(plugin.PluginError, match=message):
        plugin.run('create', request_env(DHV_PARAMETERS=parameters), conf, zfs, own=owning(calls))
    assert zfs.commands == [] and calls == []


def test_own_root_dir_changes_only_what_differs_and_follows_no_link(tmp_path):
    root = tmp_path / 'volume'
    root.mkdir(mode=0o755)
    me = os.getuid(), os.getgid()
    plugin.own_root_dir(str(root), {'mode': '0770', 'uid': str(me[0]), 'gid': str(me[1])})
    assert stat.S_IMODE(root.stat().st_mode) == 0o770
    (tmp_path / 'link').symlink_to(root)
    with pytest.raises(OSError):
        plugin.own_root_dir(str(tmp_path / 'link'), {'mode': '0777'})
    assert stat.S_IMODE(root.stat().st_mode) == 0o770
