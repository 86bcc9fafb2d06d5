from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_allow import (
    apply_plan,
    empty_grants,
    parse_allow,
    plan,
    to_plain,
)
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

# `zfs allow` of a delegated parent, as OpenZFS 2.3.2 prints it.
SAMPLE = """---- Permissions on tank/nomad/csi -----------------------------------
Permission sets:
\t@csi clone,promote
Create time permissions:
\tdestroy,snapshot
Local+Descendent permissions:
\tuser csi create,destroy,mount,refquota,snapshot,userprop
"""


def test_parse_reference_sample():
    grants = parse_allow(SAMPLE)['tank/nomad/csi']
    assert to_plain(grants) == {
        'sets': {'@csi': ['clone', 'promote']},
        'create_time': ['destroy', 'snapshot'],
        'principals': {
            'user csi': {
                'local': ['create', 'destroy', 'mount', 'refquota', 'snapshot', 'userprop'],
                'descendent': ['create', 'destroy', 'mount', 'refquota', 'snapshot', 'userprop'],
            }
        },
    }


def test_parse_captured_output_keeps_ancestors_apart():
    sections = parse_allow((FIXTURES / 'zfs_allow_2.3.2.txt').read_text())
    assert sorted(sections) == ['tank/fixture', 'tank/fixture/csi']
    own = to_plain(sections['tank/fixture/csi'])
    assert own['principals'] == {
        'everyone': {'descendent': ['userprop']},
        'user root': {
            'local': ['create', 'destroy', 'mount', 'refquota'],
            'descendent': ['create', 'destroy', 'mount'],
        },
    }
    assert to_plain(sections['tank/fixture'])['principals'] == {
        'user root': {'local': ['snapshot'], 'descendent': ['snapshot']}
    }


def desired(**principals):
    grants = empty_grants()
    for key, (local, desc) in principals.items():
        grants['principals'][tuple(key.split('_', 1))] = {'local': set(local), 'descendent': set(desc)}
    return grants


def test_plan_present_adds_only_missing_and_by_scope():
    current = parse_allow(SAMPLE)['tank/nomad/csi']
    want = desired(user_csi=(['create', 'clone'], ['create', 'clone', 'rename']))
    assert plan(current, want, 'present', False) == [
        ['allow', '-u', 'csi', 'clone'],
        ['allow', '-u', 'csi', '-d', 'rename'],
    ]


def test_plan_exact_named_and_all():
    current = parse_allow((FIXTURES / 'zfs_allow_2.3.2.txt').read_text())['tank/fixture/csi']
    want = desired(user_root=(['create'], ['create']))
    named = plan(current, want, 'exact', False)
    assert named == [['unallow', '-u', 'root', 'destroy,mount'], ['unallow', '-u', 'root', '-l', 'refquota']]
    everything = plan(current, want, 'exact', True)
    assert ['unallow', '-s', '@csi'] in everything
    assert ['unallow', '-c', 'destroy,snapshot'] in everything
    assert ['unallow', '-e', '-d', 'userprop'] in everything
    assert to_plain(apply_plan(current, everything)) == {
        'sets': {},
        'create_time': [],
        'principals': {'user root': {'local': ['create'], 'descendent': ['create']}},
    }


def test_plan_exact_all_leaves_kept_users_alone():
    current = parse_allow((FIXTURES / 'zfs_allow_2.3.2.txt').read_text())['tank/fixture/csi']
    want = desired()
    kept = plan(current, want, 'exact', True, frozenset([('user', 'root')]))
    assert not [cmd for cmd in kept if cmd[1:3] == ['-u', 'root']]
    assert ['unallow', '-e', '-d', 'userprop'] in kept
    assert [cmd for cmd in plan(current, want, 'exact', True) if cmd[1:3] == ['-u', 'root']]


def test_plan_nothing_to_do_when_equal():
    current = parse_allow(SAMPLE)['tank/nomad/csi']
    assert plan(current, current, 'exact', True) == []
    assert plan(current, current, 'present', False) == []


def test_long_names_have_no_ruler():
    # Captured from OpenZFS 2.3.2: a name past the 70-column ruler gets no dashes.
    out = (
        '---- Permissions on tank/it/test_ancestor_grants_are_reported_not_merged/child \n'
        'Local+Descendent permissions:\n\tuser csi create\n'
    )
    grants = parse_allow(out)['tank/it/test_ancestor_grants_are_reported_not_merged/child']
    assert to_plain(grants)['principals'] == {'user csi': {'local': ['create'], 'descendent': ['create']}}
