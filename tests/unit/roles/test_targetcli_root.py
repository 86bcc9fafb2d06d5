"""The storage host's targetcli for the iSCSI driver's service user: what it lets democratic-csi's scripts do, and
what it refuses. The scripts are democratic-csi v1.9.4's own (controller-zfs-generic's createShare and
deleteShare templates, as targetCliCommand trims them); the attacks run on the VM too
(tests/integration/stack/test_iscsi_target.py)."""

import importlib.util
import re
from pathlib import Path

import pytest
import yaml

HELPER = Path(__file__).resolve().parents[3] / 'roles' / 'storage_host' / 'files' / 'targetcli-root.py'
SPEC = importlib.util.spec_from_file_location('targetcli_root', str(HELPER))
helper = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(helper)

BASENAME = 'iqn.2003-01.org.linux-iscsi.storage:nomad'
CONF = helper.read_conf('parent=tank/nomad/iscsi\niscsi_basename=%s\nroot_helper=/x\n' % BASENAME, 'csi.conf')
SECRET = 'S3cret-chap.pass'
# createShare for volume Pg-1 with tpg attributes and CHAP, and a block attribute, as democratic-csi writes it.
CREATE = """# create target
cd /iscsi
create {b}:pg-1

# setup tpg
cd /iscsi/{b}:pg-1/tpg1

set attribute authentication=1
set attribute generate_node_acls=1
set auth userid=nomad
set auth password={s}


# create extent
cd /backstores/block
create pg-1 /dev/zvol/tank/nomad/iscsi/Pg-1
cd /backstores/block/pg-1

set attribute emulate_tpu=1

# add extent to target/tpg
cd /iscsi/{b}:pg-1/tpg1/luns
create /backstores/block/pg-1""".format(b=BASENAME, s=SECRET)
DELETE = """# delete target
cd /iscsi
delete {b}:pg-1

# delete extent
cd /backstores/block
delete pg-1""".format(b=BASENAME)
OURS = '/dev/zvol/tank/nomad/iscsi/Pg-1'
NOTHING = {'blocks': {}, 'targets': {}}


def zvols(**types):
    return lambda dataset: types.get(dataset.rsplit('/', 1)[1])


PG_1_IS_A_ZVOL = zvols(**{'Pg-1': 'volume'})


def run(text, zvol_type=PG_1_IS_A_ZVOL, live=None):
    return helper.plan(helper.parse(text, CONF), CONF, zvol_type, live or NOTHING)


def test_democratic_csis_create_is_applied_as_parsed():
    iqn = BASENAME + ':pg-1'
    assert run(CREATE) == [
        ('create_target', iqn, 1),
        ('tpg_attribute', iqn, ('authentication', '1')),
        ('tpg_attribute', iqn, ('generate_node_acls', '1')),
        ('tpg_auth', iqn, ('userid', 'nomad')),
        ('tpg_auth', iqn, ('password', SECRET)),
        ('create_block', 'pg-1', OURS),
        ('block_attribute', 'pg-1', ('emulate_tpu', '1')),
        ('create_lun', iqn, 'pg-1'),
    ]


def test_democratic_csis_delete_is_applied_for_its_own_target_and_backstore_or_for_none():
    live = {'blocks': {'pg-1': OURS}, 'targets': {BASENAME + ':pg-1': ['pg-1']}}
    expected = [('delete_target', BASENAME + ':pg-1', None), ('delete_block', 'pg-1', None)]
    assert run(DELETE, live=live) == expected
    # Already gone (a retry): nothing to delete, which is no error.
    assert run(DELETE) == expected


@pytest.mark.parametrize(
    'text, refusal',
    [
        # Another device of the host, or a zvol elsewhere.
        (
            'cd /backstores/block\ncreate vda /dev/vda',
            'it may run only create <name> /dev/zvol/tank/nomad/iscsi/<zvol>',
        ),
        ('cd /backstores/block\ncreate x /dev/zvol/tank/other/x', "'create' is not a command"),
        ('cd /backstores/block\ncreate x /dev/zvol/tank/nomad/iscsi/../../other', "'create' is not a command"),
        ('cd /backstores/block\ncreate x /dev/zvol/tank/nomad/iscsi/x/y', "'create' is not a command"),
        ('cd /backstores/fileio\ncreate x /etc/shadow', 'cd /backstores/fileio: only'),
        # A backstore under another name than the zvol's, which a delete would then take for another's.
        ('cd /backstores/block\ncreate other /dev/zvol/tank/nomad/iscsi/Pg-1', 'democratic-csi names it'),
        # Another target base name, the shell, saving elsewhere, paths given to commands, several commands in one.
        ('cd /iscsi\ncreate iqn.2003-01.org.example:x', "'create' is not a command"),
        ('cd /iscsi/iqn.2003-01.org.example:x/tpg1', 'only /iscsi/' + BASENAME),
        ('cd /\nsaveconfig /tmp/x', 'cd /: only'),
        ('saveconfig /tmp/x', "'saveconfig' is not a command this user may run before a cd"),
        ('/backstores/block create vda /dev/vda', "'/backstores/block' is not a command"),
        ('cd /iscsi\ncreate %s:x; /backstores/block delete y' % BASENAME, "'create' is not a command"),
        ('cd /iscsi\nexit', "'exit' is not a command"),
        # Attributes beyond the list, and values that could carry more.
        ('cd /iscsi/%s:pg-1/tpg1\nset parameter AuthMethod=None' % BASENAME, "'set' is not a command"),
        ('cd /iscsi/%s:pg-1/tpg1\nset attribute tpg_enabled_sendtargets=1' % BASENAME, 'not one of'),
        ('cd /iscsi/%s:pg-1/tpg1/luns\ncreate /backstores/block/other' % BASENAME, 'only its own'),
    ],
)
def test_anything_else_refuses_the_whole_script(text, refusal):
    with pytest.raises(helper.Refused, match=re.escape(refusal)):
        run(text)


@pytest.mark.parametrize('value', ['0', '2', 'off'])
def test_chap_once_required_is_never_undone(value):
    """As csi-iscsi could: authentication=0 with generate_node_acls=1 let every initiator that reaches the portal log
    in to its targets."""
    script = 'cd /iscsi\ncreate %s:pg-1\ncd /iscsi/%s:pg-1/tpg1\nset attribute authentication=%s\n' % (
        BASENAME,
        BASENAME,
        value,
    )
    with pytest.raises(helper.Refused, match='every target of this host asks for CHAP'):
        run(script)
    optional = helper.read_conf(
        'parent=tank/nomad/iscsi\niscsi_basename=%s\niscsi_chap=optional\n' % BASENAME, 'csi-iscsi.conf'
    )
    steps = helper.plan(helper.parse(script, optional), optional, PG_1_IS_A_ZVOL, NOTHING)
    assert steps == [
        ('create_target', BASENAME + ':pg-1', 0),
        ('tpg_attribute', BASENAME + ':pg-1', ('authentication', value)),
    ]


def test_a_refusal_never_quotes_a_chap_secret():
    for text in (
        'cd /iscsi/%s:pg-1/tpg1\nset auth password=%s"$(reboot)"' % (BASENAME, SECRET),
        'cd /iscsi/%s:pg-1/tpg1\nset auth passwd=%s' % (BASENAME, SECRET),
        'cd /iscsi\nset auth password=%s' % SECRET,
    ):
        with pytest.raises(helper.Refused) as refused:
            run(text)
        assert SECRET not in str(refused.value)


@pytest.mark.parametrize(
    'zvol_type, live, text, refusal',
    [
        # A filesystem, or nothing, at the zvol's path.
        (zvols(**{'Pg-1': 'filesystem'}), NOTHING, CREATE, 'is filesystem, not a zvol'),
        (zvols(), NOTHING, CREATE, 'is missing, not a zvol'),
        # The operator's own backstore of the same name, and a target of the base name exporting it.
        (zvols(), {'blocks': {'pg-1': '/dev/sdb'}, 'targets': {}}, DELETE, 'backstore pg-1 is /dev/sdb'),
        (
            zvols(),
            {'blocks': {'pg-1': OURS, 'ops': '/dev/sdb'}, 'targets': {BASENAME + ':pg-1': ['pg-1', 'ops']}},
            DELETE,
            'exports ops, which are not zvols',
        ),
        # A LUN of a backstore the script did not make and that is not a zvol of the parent.
        (
            zvols(),
            {'blocks': {'pg-1': '/dev/sdb'}, 'targets': {}},
            'cd /iscsi/%s:pg-1/tpg1/luns\ncreate /backstores/block/pg-1' % BASENAME,
            'not this user',
        ),
    ],
)
def test_what_zfs_and_the_kernel_hold_decides_the_rest(zvol_type, live, text, refusal):
    with pytest.raises(helper.Refused, match=refusal):
        run(text, zvol_type, live)


@pytest.mark.parametrize(
    'text',
    [
        '',
        'parent=tank/nomad/iscsi\n',
        'parent=tank/../x\niscsi_basename=%s\n' % BASENAME,
        'parent=tank/nomad/iscsi\niscsi_basename=iqn.x\n',
    ],
)
def test_a_missing_or_bad_conf_names_the_role(text):
    with pytest.raises(helper.Refused, match='storage_host role'):
        helper.read_conf(text, 'csi.conf')


def test_the_kernels_configuration_is_read_from_configfs(tmp_path):
    core = tmp_path / 'core' / 'iblock_0' / 'pg-1'
    core.mkdir(parents=True)
    (core / 'udev_path').write_text(OURS + '\n')
    (tmp_path / 'core' / 'fileio_1' / 'f').mkdir(parents=True)
    lun = tmp_path / 'iscsi' / (BASENAME + ':pg-1') / 'tpgt_1' / 'lun' / 'lun_0'
    lun.mkdir(parents=True)
    (lun / '4a5f6e3c2b').symlink_to('../../../../../../target/core/iblock_0/pg-1')
    (tmp_path / 'iscsi' / 'discovery_auth').mkdir()
    assert helper.read_live(str(tmp_path)) == {'blocks': {'pg-1': OURS}, 'targets': {BASENAME + ':pg-1': ['pg-1']}}
    assert helper.read_live(str(tmp_path / 'absent')) == NOTHING


def test_a_failure_never_quotes_a_chap_secret():
    assert helper.redacted('cannot write %s to auth/password' % SECRET, [SECRET]) == (
        'cannot write <redacted> to auth/password'
    )


class Saved(object):
    """rtslib's RTSRoot, as far as save() uses it: writes the configuration it holds."""

    def __init__(self, text):
        self.text = text

    def RTSRoot(self):
        return self

    def save_to_file(self, path):
        Path(path).write_text(self.text)


def test_each_save_keeps_the_previous_configuration_as_targetcli_does(tmp_path, monkeypatch):
    save_file = tmp_path / 'saveconfig.json'
    stamps = iter('2026%04d-00:00:00' % n for n in range(100))
    monkeypatch.setattr(helper.time, 'strftime', lambda _format: next(stamps))
    helper.save(Saved('{"a": 1}'), str(save_file))
    assert not list((tmp_path / 'backup').iterdir())
    for n in range(2, 14):
        helper.save(Saved('{"a": %d}' % n), str(save_file))
    # Saving the same again backs nothing up twice.
    helper.save(Saved('{"a": 13}'), str(save_file))
    helper.save(Saved('{"a": 13}'), str(save_file))
    backups = sorted((tmp_path / 'backup').iterdir())
    assert [helper.read_backup(str(path)) for path in backups] == [b'{"a": %d}' % n for n in range(3, 14)][-10:]
    assert save_file.read_text() == '{"a": 13}'
    assert {oct(path.stat().st_mode & 0o777) for path in backups} == {'0o600'}


def test_the_role_looks_for_rtslib_where_the_wrapper_imports_it_from():
    role = yaml.safe_load((HELPER.parents[1] / 'vars' / 'main.yml').read_text())
    assert role['storage_host_rtslib'] == helper.DIST_PACKAGES + '/rtslib_fb'
