"""Where a new host volume goes when node_free_bytes is given: the candidate with the most room that can hold it
and that Nomad could place it on; none, and the refusal names each candidate's figure."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_placement import choose_node, free_figures
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_nodes import summary
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

MIB = 1 << 20


def node(node_id, name, status='ready', eligibility='eligible', pool='default'):
    """A node as Nomad v1.11.3's /v1/nodes lists it, in nomad_node_info's words."""
    return summary(
        {'ID': node_id, 'Name': name, 'Status': status, 'SchedulingEligibility': eligibility, 'NodePool': pool}
    )


NODES = [node('id-a', 'nzc'), node('id-b', 'nzc-b'), node('id-c', 'nzc-c', status='down')]


def test_the_candidate_with_the_most_room_that_can_hold_it():
    assert choose_node('v', 100 * MIB, {'nzc': 300 * MIB, 'nzc-b': 200 * MIB}, NODES)['id'] == 'id-a'
    # A is too small: B, by ID or by name.
    assert choose_node('v', 250 * MIB, {'nzc': 200 * MIB, 'id-b': 300 * MIB}, NODES)['id'] == 'id-b'
    # C has the most room, but is down; no capacity asked: any node holds it.
    assert choose_node('v', 0, {'nzc': 1, 'nzc-b': 2, 'nzc-c': 9 << 30}, NODES)['id'] == 'id-b'
    pools = [node('id-a', 'nzc', pool='gpu'), node('id-b', 'nzc-b')]
    assert choose_node('v', 1, {'nzc': 9, 'nzc-b': 2}, pools, node_pool='default')['id'] == 'id-b'


def test_a_volume_no_node_can_hold_is_refused_naming_each_candidates_room():
    with pytest.raises(PlanError) as refused:
        choose_node('pgdata', 400 * MIB, {'nzc': 300 * MIB, 'nzc-b': 350 * MIB, 'nzc-c': 1 << 30}, NODES)
    assert str(refused.value) == (
        'no node can take host volume pgdata of 400.0 MiB: nzc has 300.0 MiB free, less than 400.0 MiB; nzc-b has '
        '350.0 MiB free, less than 400.0 MiB; nzc-c is down. Nothing was made. Free space under the parent of one '
        'of them, or ask for a smaller capacity.'
    )


def test_figures_must_be_whole_bytes_of_nodes_nomad_knows():
    assert free_figures({'nzc': '12', 'nzc-b': 7}) == {'nzc': 12, 'nzc-b': 7}
    for bad in ('12G', -1, True, None, 1.5):
        with pytest.raises(PlanError, match=r'node_free_bytes\[nzc\] is .*not a number of bytes'):
            free_figures({'nzc': bad})
    with pytest.raises(PlanError, match='names gone, which Nomad knows neither'):
        choose_node('v', 1, {'gone': 5, 'nzc': 5}, NODES)
    with pytest.raises(PlanError, match='node_free_bytes is empty'):
        choose_node('v', 1, {}, NODES)
