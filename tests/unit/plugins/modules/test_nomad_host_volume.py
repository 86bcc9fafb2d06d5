"""nomad_host_volume's main() with a fake Nomad client fed Nomad v1.11.3's own answers: found by name, updated
by ID, check mode predicts with the planner that writes, and what cannot change is refused before any write."""

import json
from pathlib import Path

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import NomadError
from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_host_volume
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

GOLDEN = Path(__file__).parents[3] / 'pack' / 'golden'
CAPTURED = json.loads((FIXTURES / 'nomad_host_volume_1.11.3.json').read_text())
READY = dict(CAPTURED['get'], State='ready')
VOLUME_ID = READY['ID']
ARGS = {
    'name': 'scratch',
    'plugin_id': 'mkdir',
    'capacity_max': '1M',
    'parameters': {'mode': '0755'},
}


@pytest.fixture
def nomad(monkeypatch):
    fake = FakeNomad().install(monkeypatch)
    fake.handlers[('get', 'volumes')] = lambda body, params: [
        v for v in fake.objects.values() if v.get('Name', '').startswith(params.get('prefix', ''))
    ]

    def create(body, params):
        vol = dict(READY, **body['Volume'])
        vol.setdefault('ID', VOLUME_ID)
        fake.objects['volume/host/' + vol['ID']] = vol
        return {'Volume': vol, 'Index': 20}

    fake.handlers[('put', 'volume/host/create')] = create
    return fake


def test_a_new_volume_is_created_and_read_once_ready(run_main, nomad):
    made = run_main(nomad_host_volume, ARGS)
    assert made['changed'] is True
    [(method, path, body)] = nomad.writes()
    assert (method, path) == ('put', 'volume/host/create') and 'ID' not in body['Volume']
    assert body['Volume']['RequestedCapacityMaxBytes'] == 1 << 20 and body['Volume']['PluginID'] == 'mkdir'
    assert made['volume']['id'] == VOLUME_ID and made['volume']['state'] == 'ready'
    assert made['volume']['host_path'] == READY['HostPath']


def test_the_same_request_again_writes_nothing(run_main, nomad):
    nomad.objects['volume/host/' + VOLUME_ID] = READY
    again = run_main(nomad_host_volume, ARGS)
    assert again['changed'] is False and nomad.writes() == [] and again['changed_fields'] == []


def test_a_raised_capacity_is_an_update_by_id_and_check_mode_predicts_it(run_main, nomad):
    nomad.objects['volume/host/' + VOLUME_ID] = READY
    args = dict(ARGS, capacity_max='2M')
    checked = run_main(nomad_host_volume, args, check=True, diff=True)
    assert checked['changed'] and checked['changed_fields'] == ['capacity_max'] and nomad.writes() == []
    assert checked['diff'] == {'before': {'capacity_max': 1 << 20}, 'after': {'capacity_max': 2 << 20}}
    made = run_main(nomad_host_volume, args)
    [write] = nomad.writes()
    assert write[2]['Volume']['ID'] == VOLUME_ID
    assert made['volume'] == checked['volume']


def test_a_moved_volume_is_unchanged_by_its_declaration_without_adopt_replica(run_main, nomad):
    # The move created it with adopt_replica, which Nomad keeps; the declaration, run again, names none.
    nomad.objects['volume/host/' + VOLUME_ID] = dict(READY, Parameters=dict(ARGS['parameters'], adopt_replica='h/p'))
    again = run_main(nomad_host_volume, ARGS, check=True, diff=True)
    assert again['changed'] is False and again['changed_fields'] == [] and nomad.writes() == []


def test_a_shrink_below_the_provisioned_size_is_refused_before_any_write(run_main, nomad):
    nomad.objects['volume/host/' + VOLUME_ID] = dict(READY, CapacityBytes=1 << 20)
    failed = run_main(nomad_host_volume, dict(ARGS, capacity_max='512K'))
    assert failed['failed'] and 'a volume cannot shrink' in failed['msg'] and nomad.writes() == []


@pytest.mark.parametrize(
    'args, message',
    [
        ({'plugin_id': 'zfs-dataset'}, "plugin_id of volume scratch is 'mkdir' and cannot change"),
        ({'node_id': 'f8637ac6-5bd0-8503-428e-9e0b000c8caa', 'node_pool': 'storage'}, 'node_pool of volume scratch'),
        ({'mode': 'register', 'host_path': '/srv', 'node_id': READY['NodeID']}, 'was created, so mode=register'),
    ],
)
def test_what_cannot_change_is_refused_before_any_write(run_main, nomad, args, message):
    nomad.objects['volume/host/' + VOLUME_ID] = READY
    failed = run_main(nomad_host_volume, dict(ARGS, **args))
    assert failed['failed'] and message in failed['msg'] and nomad.writes() == []


@pytest.mark.parametrize(
    'args, message',
    [
        ({'capacity_max': '12XB'}, "capacity_max: '12XB' is not a size"),
        ({'capacity_min': '2M'}, 'capacity_min (2M) is above capacity_max (1M)'),
        ({'mode': 'register'}, 'mode=register needs host_path and node_id'),
        ({'host_path': '/srv'}, 'host_path is for mode=register'),
        ({'parameters': {'recordsize': 16384}}, 'quote the value of recordsize'),
    ],
)
def test_bad_input_names_the_field_and_calls_nothing(run_main, nomad, args, message):
    failed = run_main(nomad_host_volume, dict(ARGS, **args))
    assert failed['failed'] and message in failed['msg'] and nomad.calls == []


def test_a_name_on_several_nodes_needs_node_id(run_main, nomad):
    nomad.objects['volume/host/a'] = dict(READY, ID='a', NodeID='node-1')
    nomad.objects['volume/host/b'] = dict(READY, ID='b', NodeID='node-2')
    failed = run_main(nomad_host_volume, ARGS)
    assert 'on several nodes (node-1, node-2); give node_id' in failed['msg'] and nomad.writes() == []
    assert run_main(nomad_host_volume, dict(ARGS, node_id='node-2'))['volume']['id'] == 'b'


def test_deleted_deletes_by_id_with_its_own_claims_and_is_then_a_no_op(run_main, nomad):
    nomad.objects['volume/host/' + VOLUME_ID] = READY
    # Nomad lists claims by name; one is the sticky claim of a volume of that name on another node.
    claims = [{'ID': 'claim-1', 'VolumeID': VOLUME_ID}, {'ID': 'claim-2', 'VolumeID': 'other'}]
    nomad.handlers[('get', 'volumes/claims')] = lambda body, params: (
        claims if params == {'volume_name': 'scratch'} else []
    )
    checked = run_main(nomad_host_volume, {'name': 'scratch', 'state': 'deleted'}, check=True)
    assert checked['changed'] and nomad.writes() == []
    gone = run_main(nomad_host_volume, {'name': 'scratch', 'state': 'deleted'}, diff=True)
    assert gone['changed'] and nomad.writes() == [
        ('delete', 'volume/host/' + VOLUME_ID, None),
        ('delete', 'volumes/claim/claim-1', None),
    ]
    assert 'volume' not in gone
    assert run_main(nomad_host_volume, {'name': 'scratch', 'state': 'deleted'})['changed'] is False


def test_placement_failure_says_what_a_node_needs(run_main, nomad):
    status, text = CAPTURED['unknown_plugin']

    def refuse(body, params):
        raise NomadError('Nomad at fake refused PUT volume/host/create (%d): %s' % (status, text), status, text)

    nomad.handlers[('put', 'volume/host/create')] = refuse
    failed = run_main(nomad_host_volume, dict(ARGS, plugin_id='nope'))
    assert 'reports host volume plugin nope (node attribute plugins.host_volume.nope.version' in failed['msg']


def test_a_volume_that_stays_pending_fails_with_its_node(run_main, nomad, monkeypatch):
    monkeypatch.setattr(nomad_host_volume, 'poll_until', lambda read, done, timeout, pause: (read(), False))
    nomad.handlers[('put', 'volume/host/create')] = lambda body, params: (
        nomad.objects.update({'volume/host/' + VOLUME_ID: CAPTURED['get']}) or {'Volume': CAPTURED['get']}
    )
    failed = run_main(nomad_host_volume, ARGS)
    assert 'is still pending after 120s' in failed['msg'] and READY['NodeID'] in failed['msg']


def test_many_volumes_cost_one_list_a_read_per_listed_volume_and_only_the_writes_that_differ(run_main, nomad):
    nomad.objects['volume/host/' + VOLUME_ID] = READY
    made = run_main(nomad_host_volume, {'volumes': [ARGS, dict(ARGS, name='fresh', capacity_max='2M')]})
    assert [(c[0], c[1]) for c in nomad.calls if c[0] == 'get'][:2] == [
        ('get', 'volumes'),
        ('get', 'volume/host/' + VOLUME_ID),
    ]
    assert [(c[0], c[1], c[2]['Volume']['Name']) for c in nomad.writes()] == [('put', 'volume/host/create', 'fresh')]
    assert [(v['name'], v['changed']) for v in made['volumes']] == [('scratch', False), ('fresh', True)]


def test_a_bad_item_or_a_one_volume_option_beside_volumes_calls_nothing(run_main, nomad):
    bad = run_main(nomad_host_volume, {'volumes': [ARGS, dict(ARGS, name='b', capacity_max='12XB')]})
    assert "volumes[1].capacity_max: '12XB' is not a size" in bad['msg'] and nomad.calls == []
    beside = run_main(nomad_host_volume, {'volumes': [ARGS], 'capacity_max': '1G'})
    assert 'capacity_max is an option of one volume (name)' in beside['msg'] and nomad.calls == []
    twice = run_main(nomad_host_volume, {'volumes': [ARGS, ARGS]})
    assert 'volumes[1].name scratch is given twice' in twice['msg'] and nomad.calls == []
    on_one_node = [dict(ARGS, node_id='n1'), dict(ARGS, node_id='n1')]
    again = run_main(nomad_host_volume, {'volumes': on_one_node})
    assert 'volumes[1].name scratch node_id n1 is given twice' in again['msg'] and nomad.calls == []


def test_one_name_on_several_nodes_is_one_item_per_node(run_main, nomad):
    """As the one-volume form allows, and a system job's volume needs: a volume of one name on each node."""
    made = run_main(nomad_host_volume, {'volumes': [dict(ARGS, node_id='n1'), dict(ARGS, node_id='n2')]})
    assert made['changed'] and [c[2]['Volume']['NodeID'] for c in nomad.writes()] == ['n1', 'n2']


def test_a_refusal_of_a_later_item_comes_before_any_write(run_main, nomad):
    nomad.objects['volume/host/' + VOLUME_ID] = READY
    items = [dict(ARGS, name='fresh'), dict(ARGS, plugin_id='zfs-dataset')]
    failed = run_main(nomad_host_volume, {'volumes': items})
    assert failed['failed'] and "plugin_id of volume scratch is 'mkdir' and cannot change" in failed['msg']
    assert nomad.writes() == [] and not failed.get('changed')


def test_the_packs_host_volumes_json_is_taken_as_it_is(run_main, nomad, tmp_path):
    spec = tmp_path / 'host_volumes.json'
    spec.write_text(json.dumps({'namespace': 'default', 'volumes': [dict(ARGS, node_pool=None)]}))
    made = run_main(nomad_host_volume, {'spec_file': str(spec)})
    assert made['changed'] and made['volumes'][0]['volume']['id'] == VOLUME_ID
    elsewhere = run_main(nomad_host_volume, {'spec_file': str(spec), 'namespace': 'team-b'})
    assert 'is for namespace default, not team-b' in elsewhere['msg']


def test_the_host_volumes_json_nomad_pack_rendered_is_taken_as_it_is(run_main, nomad):
    """The golden copy of what nomad-pack v0.4.2 rendered from packs/zfs_csi/examples/zfs-local-dataset.hcl."""
    spec = GOLDEN / 'example-zfs-local-dataset' / 'host_volumes.json'
    made = run_main(nomad_host_volume, {'spec_file': str(spec)}, check=True)
    assert made['changed'] and nomad.writes() == [], made
    [entry] = made['volumes']
    assert entry['name'] == 'pgdata' and entry['volume']['capacity_max'] == 10 << 30
    assert entry['volume']['parameters'] == {'compression': 'zstd', 'recordsize': '16K'}


def test_a_failed_write_after_others_reports_them_written_and_changed(run_main, nomad):
    made = nomad.handlers[('put', 'volume/host/create')]

    def create(body, params):
        if body['Volume']['Name'] == 'second':
            raise NomadError('Nomad at fake refused PUT volume/host/create (500): plugin failed', 500, 'plugin failed')
        return made(body, params)

    nomad.handlers[('put', 'volume/host/create')] = create
    items = [dict(ARGS), dict(ARGS, name='second')]
    failed = run_main(nomad_host_volume, {'volumes': items})
    assert failed['failed'] and failed['changed'] is True and 'plugin failed' in failed['msg'], failed
    assert failed['written'] == ['PUT volume/host/create (scratch)']


NODES = [
    {'ID': 'n-a', 'Name': 'nzc', 'Status': 'ready', 'SchedulingEligibility': 'eligible', 'NodePool': 'default'},
    {'ID': 'n-b', 'Name': 'nzc-b', 'Status': 'ready', 'SchedulingEligibility': 'eligible', 'NodePool': 'default'},
]


def test_node_free_bytes_places_a_new_volume_where_it_fits_and_check_mode_predicts_it(run_main, nomad):
    nomad.handlers[('get', 'nodes')] = lambda body, params: NODES
    args = dict(ARGS, capacity_max='3M', node_free_bytes={'nzc': 2 << 20, 'nzc-b': 4 << 20})
    checked = run_main(nomad_host_volume, args, check=True)
    assert checked['volume']['node_id'] == 'n-b' and nomad.writes() == []
    made = run_main(nomad_host_volume, args)
    [(_method, _path, body)] = nomad.writes()
    assert body['Volume']['NodeID'] == 'n-b' and made['volume']['node_id'] == 'n-b'
    # Made: it stays where it is, whatever the figures say now, and Nomad's nodes are not even read.
    calls = len(nomad.calls)
    again = run_main(nomad_host_volume, dict(args, node_free_bytes={'nzc': 9 << 20, 'nzc-b': 0}))
    assert again['changed'] is False and 'nodes' not in [c[1] for c in nomad.calls[calls:]]


def test_a_volume_no_candidate_can_hold_is_refused_before_any_write(run_main, nomad):
    nomad.handlers[('get', 'nodes')] = lambda body, params: NODES
    failed = run_main(
        nomad_host_volume, dict(ARGS, capacity_max='5M', node_free_bytes={'nzc': 2 << 20, 'nzc-b': 4 << 20})
    )
    assert failed['failed'] and nomad.writes() == []
    assert 'nzc has 2.0 MiB free, less than 5.0 MiB; nzc-b has 4.0 MiB free' in failed['msg'], failed['msg']
    # A figure that is not one is refused before Nomad is called at all.
    calls = len(nomad.calls)
    failed = run_main(nomad_host_volume, dict(ARGS, node_free_bytes={'nzc': '2G'}))
    assert failed['failed'] and 'node_free_bytes[nzc]' in failed['msg'] and len(nomad.calls) == calls


def test_each_placed_volume_counts_against_its_nodes_room(run_main, nomad):
    nomad.handlers[('get', 'nodes')] = lambda body, params: NODES
    items = [dict(ARGS, name='one', capacity_max='3M'), dict(ARGS, name='two', capacity_max='3M')]
    run_main(nomad_host_volume, {'volumes': items, 'node_free_bytes': {'nzc': 4 << 20, 'nzc-b': 5 << 20}})
    assert [w[2]['Volume']['NodeID'] for w in nomad.writes()] == ['n-b', 'n-a']
    assert [c[1] for c in nomad.calls].count('nodes') == 1
