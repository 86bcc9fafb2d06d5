"""The follow's metrics from its plan: what follows, and each volume that stays with a word for why, in the text
format (each sample line checked by test_zfs_metrics' reader); no file for a node whose ID is no UUID."""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_follow_metrics import file_name, render
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.module_utils.test_zfs_metrics import samples

NODE_ID = '5f8b0c1e-3d2a-4c61-9a57-0b6e2f1d7c44'


def plan(**changes):
    base = dict(
        node=dict(id=NODE_ID, name='storage-b'),
        following=True,
        kind='failover',
        moves=[dict(name='pgdata', namespace='team-a')],
        stays=[
            dict(name='queue', namespace='team-a', jobs=['q'], why='may still be writing', reason='not_fenced'),
            dict(name='scratch', namespace='team-a', jobs=[], why='no job uses it', reason='unused'),
            # A name a tenant chose, and a node name a client chose: escaped, never a line of their own.
            dict(name='x"}\n1', namespace='team-"b', jobs=[], why='journal', reason='journal_refused'),
        ],
    )
    return dict(base, **changes)


def test_a_follow_counts_its_moves_and_names_each_volume_left_to_the_operator_with_its_reason():
    node = (('node', 'storage-b'), ('node_id', NODE_ID), ('kind', 'failover'))
    assert samples(render(plan())) == {
        ('nomad_zfs_csi_follow_volumes_following', node): 1,
        ('nomad_zfs_csi_follow_volume_stays', node + (('namespace', 'team-a'), ('volume', 'queue'),
                                                      ('reason', 'not_fenced'))): 1,
        ('nomad_zfs_csi_follow_volume_stays', node + (('namespace', 'team-\\"b'), ('volume', 'x\\"}\\n1'),
                                                      ('reason', 'journal_refused'))): 1,
    }  # fmt: skip
    drained = render(plan(kind='move', moves=[], stays=[]))
    assert samples(drained) == {
        ('nomad_zfs_csi_follow_volumes_following', (('node', 'storage-b'), ('node_id', NODE_ID), ('kind', 'move'))): 0
    }
    # Each family says what it is, once, even with no sample.
    assert drained.count('# TYPE nomad_zfs_csi_follow_volume_stays gauge') == 1


def test_a_node_that_nothing_follows_has_no_file_and_only_a_uuid_names_one():
    assert render(plan(following=False)) == ''
    assert file_name(NODE_ID) == 'nomad_zfs_csi_follow_%s.prom' % NODE_ID
    for forged in ('../../etc/cron.d/x', NODE_ID.upper(), NODE_ID + '/x', NODE_ID + '\n', '', None):
        assert file_name(forged) is None
