"""The storage host's root helper, which the CSI service user reaches through sudo: what root mounts, shares and
unmounts for it, and what the boot guard changes. The attacks themselves run on the VM
(tests/integration/stack/test_least_privilege.py)."""

import importlib.util
import os
import stat
from pathlib import Path

import pytest

HELPER = Path(__file__).resolve().parents[3] / 'roles' / 'storage_host' / 'files' / 'zfs-root.py'
SPEC = importlib.util.spec_from_file_location('zfs_root', str(HELPER))
helper = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(helper)

CONF = helper.read_conf(
    'parent=tank/nomad/csi\nsnapshots_parent=tank/nomad/csi-snapshots\nroot_helper=/x\n', 'csi.conf'
)
PARENT = 'tank/nomad/csi'
ROOT_DIR = os.stat_result((stat.S_IFDIR | 0o755, 0, 0, 0, 0, 0, 0, 0, 0, 0))


def tree(**overrides):
    """lstat over /tank/nomad/csi, all root's directories, but for the paths given."""
    paths = {'/tank': ROOT_DIR, '/tank/nomad': ROOT_DIR, '/tank/nomad/csi': ROOT_DIR}
    paths.update(overrides)

    def lstat(path):
        if path not in paths:
            raise FileNotFoundError(path)
        return paths[path]

    return lstat


def props(dataset, mountpoint=None, source='inherited from tank/nomad/csi', mounted='no'):
    return {
        dataset: {
            'type': ('filesystem', '-'),
            'mountpoint': (mountpoint or '/' + dataset, source),
            'mounted': (mounted, '-'),
        },
        PARENT: {'type': ('filesystem', '-'), 'mountpoint': ('/' + PARENT, 'default')},
    }


def plan(verb, dataset, found=None, lstat=None, sharenfs='off'):
    def read(names):
        return found or props(dataset)

    return helper.plan(verb, dataset, CONF, read, lambda name: sharenfs, lstat or tree())


def test_a_volume_is_mounted_and_shared_where_it_inherits():
    assert plan('mount', PARENT + '/v') == [[helper.ZFS, 'mount', PARENT + '/v']]
    shared = plan('share', PARENT + '/v', props(PARENT + '/v', mounted='yes'), sharenfs='rw=@10.0.0.0/8,no_root_squash')
    assert shared == [[helper.ZFS, 'share', PARENT + '/v']]


@pytest.mark.parametrize(
    'verb, dataset',
    [
        ('mount', PARENT + '/v/x'),
        ('share', PARENT + '/v/x'),
        ('sharenfs', PARENT + '/v/x'),
        ('unshare', PARENT),
        ('mount', PARENT),
        ('mount', 'tank/other'),
        ('mount', PARENT + '/../etc'),
        ('mount', PARENT + '/.hidden'),
        ('mount', PARENT + '/v\n'),
        ('mount', 'tank/nomad/csi-snapshots/v'),
        ('unmount', PARENT),
        ('unmount', 'tank/other/v'),
    ],
)
def test_other_shapes_are_refused_before_anything_is_read(verb, dataset):
    def read(names):
        raise AssertionError('read %s' % names)

    with pytest.raises(helper.Refused, match='only datasets'):
        helper.plan(verb, dataset, CONF, read, read, tree())


def test_unmount_takes_any_depth_below_the_parent():
    assert plan('unmount', PARENT + '/v/x') == [[helper.ZFS, 'unmount', PARENT + '/v/x']]


LINK = os.stat_result((stat.S_IFLNK | 0o777, 0, 0, 0, 1000, 1000, 0, 0, 0, 0))
CSI_DIR = os.stat_result((stat.S_IFDIR | 0o755, 0, 0, 0, 1000, 1000, 0, 0, 0, 0))
WORLD_DIR = os.stat_result((stat.S_IFDIR | 0o777, 0, 0, 0, 0, 0, 0, 0, 0, 0))


@pytest.mark.parametrize(
    'found, lstat, message',
    [
        (props(PARENT + '/v', '/etc', 'local'), tree(), 'has mountpoint /etc \\(local\\)'),
        (props(PARENT + '/v', '/etc', 'received'), tree(), 'has mountpoint /etc \\(received\\)'),
        (props(PARENT + '/v'), tree(**{'/tank/nomad/csi/v': LINK}), 'is not a directory \\(a symbolic link\\)'),
        (props(PARENT + '/v'), tree(**{'/tank/nomad': LINK}), 'below /tank/nomad, which is a symbolic link'),
        (props(PARENT + '/v'), tree(**{'/tank/nomad/csi': CSI_DIR}), 'owned by uid 1000'),
        (props(PARENT + '/v'), tree(**{'/tank': WORLD_DIR}), 'mode 777'),
    ],
    ids=['local-mountpoint', 'received-mountpoint', 'leaf-link', 'link-above', 'csi-dir-above', 'world-writable'],
)
def test_a_mountpoint_root_would_reach_through_something_the_user_controls_is_refused(found, lstat, message):
    with pytest.raises(helper.Refused, match=message):
        plan('mount', PARENT + '/v', found, lstat)


# zfs stores the first one as it is; shared by root, it wrote the line "/ *(rw)(sec=sys,...)" into
# /etc/exports.d/zfs.exports (seen on OpenZFS 2.3.2 in the VM).
@pytest.mark.parametrize('options', ['rw=@127.0.0.1/32\n/ *(rw)', 'rw=x\ttank/nomad/csi/v', 'rw x', 'rw;x'])
def test_a_sharenfs_that_could_write_another_export_is_refused(options):
    with pytest.raises(helper.Refused, match='root shares only'):
        plan('share', PARENT + '/v', props(PARENT + '/v', mounted='yes'), sharenfs=options)


@pytest.mark.parametrize('mounted', ['yes', 'no'])
def test_root_sets_the_sharenfs_it_checked_without_mounting_and_shares_the_volume_alone(mounted):
    """The value root checks is its argv, which the user cannot change before zfs set uses it (it holds no sharenfs
    delegation, so nothing else writes the property that zfs share -a reads at boot). Without -u, zfs set of sharenfs
    mounts each unmounted child that inherits it, through the user's link at its mountpoint; with it, nothing is
    mounted, and zfs share shares the volume only."""
    options, volume = 'rw=@10.0.0.0/8,no_root_squash', PARENT + '/v'
    found = props(volume, mounted=mounted)
    set_it = helper.plan('sharenfs', volume, CONF, lambda names: found, None, tree(), options)
    shared = [[helper.ZFS, 'share', volume]] if mounted == 'yes' else []
    assert set_it == [[helper.ZFS, 'set', '-u', 'sharenfs=' + options, volume]] + shared
    unshared = [[helper.ZFS, 'unshare', volume]] if mounted == 'yes' else []
    off = [[helper.ZFS, 'set', '-u', 'sharenfs=off', volume]]
    assert plan('unshare', volume, found) == unshared + off
    assert helper.plan('sharenfs', volume, CONF, lambda names: found, None, tree(), 'off') == unshared + off


@pytest.mark.parametrize('options', ['rw=@127.0.0.1/32\n/ *(rw)', 'rw=x\ttank/nomad/csi/v', 'rw x', '', None])
def test_a_sharenfs_root_would_set_is_refused_before_anything_is_read(options):
    def read(names):
        raise AssertionError('read %s' % names)

    with pytest.raises(helper.Refused, match='root shares only'):
        helper.plan('sharenfs', PARENT + '/v', CONF, read, None, tree(), options)


@pytest.mark.parametrize('verb', ['sharenfs', 'unshare'])
def test_a_missing_volume_is_named_as_democratic_csi_reads_it(verb):
    with pytest.raises(helper.Refused, match='dataset does not exist'):
        helper.plan(verb, PARENT + '/v', CONF, lambda names: {}, None, tree(), 'rw=@10.0.0.0/8')


def test_an_unmounted_volume_is_not_shared():
    with pytest.raises(helper.Refused, match='is not mounted'):
        plan('share', PARENT + '/v', props(PARENT + '/v'), sharenfs='on')


def test_the_guard_leaves_volumes_and_makes_deeper_datasets_unmountable():
    listing = '\n'.join(
        [
            'tank/nomad/csi\ton',
            'tank/nomad/csi/v\ton',
            'tank/nomad/csi/v/x\ton',
            'tank/nomad/csi/v/y\tnoauto',
            'tank/nomad/csi/w\ton',
            'tank/nomad/csi-snapshots/v\ton',
            'tank/nomad/csi-snapshots/v/snap\ton',
            'tank/other/a/b\ton',
        ]
    )
    shared = {'tank/nomad/csi/v': 'rw=@10.0.0.0/8', 'tank/nomad/csi/w': 'rw=@10.0.0.0/8\n/ *(rw)'}
    assert helper.plan_guard([CONF], listing, shared) == [
        [helper.ZFS, 'set', 'canmount=noauto', 'tank/nomad/csi/v/x'],
        [helper.ZFS, 'set', 'canmount=noauto', 'tank/nomad/csi-snapshots/v/snap'],
        [helper.ZFS, 'set', 'sharenfs=off', 'tank/nomad/csi/w'],
    ]


@pytest.mark.parametrize('text', ['', 'parent=\n', 'parent=tank/../etc\n', 'parent=tank\nsnapshots_parent=/x\n'])
def test_a_missing_or_bad_conf_names_the_role(text):
    with pytest.raises(helper.Refused, match='storage_host role'):
        helper.read_conf(text, 'csi.conf')


def test_the_guard_covers_the_parents_of_every_service_user():
    iscsi = helper.read_conf('parent=tank/nomad/iscsi\nsnapshots_parent=tank/nomad/iscsi-snapshots\n', 'csi-iscsi.conf')
    listing = 'tank/nomad/csi/v/x\ton\ntank/nomad/iscsi/v/x\ton\ntank/nomad/iscsi-snapshots/v/x\ton\n'
    assert helper.plan_guard([CONF, iscsi], listing, {}) == [
        [helper.ZFS, 'set', 'canmount=noauto', name] for name in listing.replace('\ton', '').split()
    ]


@pytest.mark.parametrize('user', [None, '', 'root/../csi', '../csi', 'csi.conf', 'Csi', 'c' * 33])
def test_only_a_user_name_sudo_gave_picks_the_settings(user):
    with pytest.raises(helper.Refused, match='through the sudo rule'):
        helper.conf_path(user)


def test_each_service_user_has_its_own_settings():
    assert helper.conf_path('csi-iscsi') == '/etc/nomad-zfs-csi/storage/csi-iscsi.conf'


SNAPSHOTS = 'tank/nomad/csi-snapshots'


def header(
    drr_type=0, payload=0, magic=helper.BACKUP_MAGIC, version=(4 << 2) | 1, flags=4, fromguid=0, name=b'tank/v@s'
):
    """A zfs send stream's first record, as OpenZFS lays it out (CAPTURED below: what OpenZFS sent)."""
    return helper.BEGIN.pack(drr_type, payload, magic, version, 1764000000, 2, flags, 123456789, fromguid, name)


def receive_plan(dataset, stream, found=None):
    return helper.plan('receive', dataset, CONF, lambda names: found or {}, None, tree(), stream)


@pytest.mark.parametrize('dataset', [PARENT + '/v', SNAPSHOTS + '/v/snap-1'])
def test_root_receives_a_plain_full_stream_into_a_new_volume_or_detached_snapshot(dataset):
    assert receive_plan(dataset, header()) == [[helper.ZFS, 'receive', '-u', dataset]]


@pytest.mark.parametrize(
    'stream, message',
    [
        (header(fromguid=987654321), 'incremental or a clone'),
        (header(fromguid=987654321, flags=5), 'incremental or a clone'),
        (header(flags=1), 'incremental or a clone'),
        (header(version=(4 << 2) | 2), 'several datasets or properties'),
        (header(version=((1 << 21 | 4) << 2) | 1), 'features 0x200000 beyond a plain send'),
        (header(version=((1 << 24 | 4) << 2) | 1), 'features 0x1000000 beyond a plain send'),
        (header(version=((1 << 20 | 4) << 2) | 1), 'beyond a plain send'),
        (header(version=((1 << 26 | 4) << 2) | 1), 'beyond a plain send'),
        (header(version=((1 << 0 | 4) << 2) | 1), 'beyond a plain send'),
        (header(name=b'tank/v'), 'names no snapshot'),
        (header(name=b'x' * 256), 'names no snapshot'),
        (header(payload=120), 'has a payload'),
        (header(magic=0xACBAC5BAF2000000), 'not a zfs send stream'),
        (header(drr_type=1), 'not a zfs send stream'),
        (header()[:200], 'not a zfs send stream'),
        (b'', 'not a zfs send stream'),
    ],
    ids=[
        'incremental',
        'clone',
        'clone-flag',
        'compound',
        'redacted',
        'raw',
        'resuming',
        'holds',
        'dedup',
        'no-snapshot',
        'no-nul',
        'payload',
        'byte-swapped',
        'not-begin',
        'short',
        'empty',
    ],
)
def test_a_stream_that_names_another_snapshot_or_sets_properties_is_refused(stream, message):
    """A forged start record naming a root-owned snapshot's guid, with receive -o origin=, made a clone of it."""
    with pytest.raises(helper.Refused, match=message):
        receive_plan(PARENT + '/v', stream)


@pytest.mark.parametrize(
    'dataset', [PARENT, PARENT + '/v/x', SNAPSHOTS + '/v', SNAPSHOTS + '/v/s/x', 'tank/v', PARENT + '/../x']
)
def test_root_receives_nowhere_else(dataset):
    with pytest.raises(helper.Refused, match='root receives only into'):
        receive_plan(dataset, header())


def test_root_receives_no_existing_dataset():
    with pytest.raises(helper.Refused, match='destination .* exists'):
        receive_plan(PARENT + '/v', header(), props(PARENT + '/v'))


CAPTURED = {
    kind: bytes.fromhex(header)
    for kind, header in (
        line.split()
        for line in (Path(__file__).resolve().parents[1] / 'fixtures' / 'zfs_send_headers_2.3.2.txt')
        .read_text()
        .splitlines()
        if not line.startswith('#')
    )
}


@pytest.mark.parametrize(
    'kind, refusal',
    [
        ('full', None),
        ('compressed', None),
        ('incremental', 'incremental or a clone'),
        ('clone', 'incremental or a clone'),
        ('properties', 'several datasets or properties'),
        ('replicated', 'several datasets or properties'),
    ],
)
def test_the_start_records_of_real_streams(kind, refusal):
    """Streams OpenZFS 2.3.2 sent: what democratic-csi's detached volumes and snapshots send is taken."""
    if refusal is None:
        assert receive_plan(PARENT + '/v', CAPTURED[kind])[0][:2] == [helper.ZFS, 'receive']
    else:
        with pytest.raises(helper.Refused, match=refusal):
            receive_plan(PARENT + '/v', CAPTURED[kind])


BOUND_CONF = dict(CONF, volume_quota_percent=200)


def sizes(refquota, quota='0', used=str(1 << 20), kind='filesystem'):
    return {
        PARENT + '/v': {
            'type': (kind, '-'),
            'refquota': (refquota, 'local'),
            'quota': (quota, 'local' if quota != '0' else 'default'),
            'used': (used, '-'),
        }
    }


@pytest.mark.parametrize(
    'found, conf, commands',
    [
        (sizes(str(1 << 30)), BOUND_CONF, [[helper.ZFS, 'set', 'quota=%d' % (2 << 30), PARENT + '/v']]),
        (sizes(str(1 << 30), quota=str(2 << 30)), BOUND_CONF, []),  # set already
        (sizes('0'), BOUND_CONF, []),  # no refquota: nothing to count from
        (sizes(str(1 << 30)), CONF, []),  # the role set no percent
        (sizes(str(1 << 30), kind='volume'), BOUND_CONF, []),  # a zvol has no quota
        ({}, BOUND_CONF, []),  # gone
        (sizes(str(1 << 30), used=str(3 << 30)), BOUND_CONF, []),  # never below what it uses
    ],
)
def test_root_bounds_a_volume_with_its_snapshots_from_its_refquota(found, conf, commands):
    """refquota leaves snapshots out; the quota counts them. The user holds no quota delegation: root sets it, from
    the refquota it reads, never below what the volume uses (democratic-csi's create or expand would fail)."""
    assert helper.plan('bound', PARENT + '/v', conf, lambda names: found) == commands


def test_the_guard_bounds_the_volumes_that_exist_of_the_users_with_a_percent():
    """Volumes made before the role set the percent get their quota at the next boot or run of the role: each volume
    of such a user's parent, one zfs get for all, and none of a user without the percent."""
    iscsi = helper.read_conf('parent=tank/nomad/iscsi\nsnapshots_parent=tank/nomad/iscsi-snapshots\n', 'x.conf')
    listing = '\n'.join(
        ['tank/nomad/csi\ton', 'tank/nomad/csi/v\ton', 'tank/nomad/csi/v/x\tnoauto', 'tank/nomad/csi-snapshots/v\ton']
        + ['tank/nomad/iscsi/w\ton']
    )
    asked = []

    def read(names):
        asked.append(names)
        return sizes(str(1 << 30))

    assert helper.plan_bounds([BOUND_CONF, iscsi], listing, read) == [
        [helper.ZFS, 'set', 'quota=%d' % (2 << 30), PARENT + '/v']
    ]
    assert asked == [[PARENT + '/v']]


@pytest.mark.parametrize('dataset', [PARENT, PARENT + '/v/x', 'tank/other/v', PARENT + '-snapshots/v'])
def test_root_bounds_volumes_of_the_parent_only(dataset):
    with pytest.raises(helper.Refused, match='exactly one level below'):
        helper.plan('bound', dataset, BOUND_CONF, lambda names: {})


@pytest.mark.parametrize('value', ['99', '0', 'x', '2e2', ''])
def test_a_bad_volume_quota_percent_names_the_role(value):
    with pytest.raises(helper.Refused, match='volume_quota_percent.*storage_host role'):
        helper.read_conf('parent=tank/nomad/csi\nvolume_quota_percent=%s\n' % value, 'csi.conf')
