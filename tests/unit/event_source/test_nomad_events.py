"""The Nomad event source's pure parts: its options, the stream's query, which frames' events go on the queue, and
what a refusal says. tests/integration/event_source/test_nomad_events_on_nomad.py drives main() against a real Nomad."""

import json
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.nomad_zfs.csi.extensions.eda.plugins.event_source import nomad_events
from ansible_collections.nomad_zfs.csi.plugins.doc_fragments.nomad import ModuleDocFragment
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES
from ansible_collections.nomad_zfs.csi.tests.unit.tls_server import https_server_named

FRAMES = [
    json.loads(line) for line in (FIXTURES / 'nomad_event_stream_node_drain_1.11.3.ndjson').read_text().splitlines()
]


def test_the_options_fall_back_to_nomads_own_environment_variables():
    environ = {'NOMAD_ADDR': 'https://n:4646', 'NOMAD_TOKEN': 's3cret', 'NOMAD_CACERT': '/ca.pem', 'NOMAD_REGION': 'eu'}
    conf = nomad_events.settings({}, environ)
    assert (conf['addr'], conf['token'], conf['ca_cert'], conf['region']) == (
        'https://n:4646',
        's3cret',
        '/ca.pem',
        'eu',
    )
    assert (conf['topics'], conf['namespace'], conf['index'], conf['idle_timeout']) == (['Node'], '*', 0, 45)
    # A task's workload identity socket comes before the agent's address.
    assert (
        nomad_events.settings({}, dict(environ, NOMAD_UNIX_ADDR='unix:///s/api.sock'))['addr'] == 'unix:///s/api.sock'
    )
    assert nomad_events.settings({'nomad_addr': 'http://a:1'}, environ)['addr'] == 'http://a:1'
    # A token read from a file keeps its line break: it is not part of the token.
    assert nomad_events.settings({'nomad_token': 's3cret\n'}, {})['token'] == 's3cret'


@pytest.mark.parametrize(
    'args, named',
    [
        ({'nomad_addr': 'nomad:4646'}, 'nomad_addr'),
        ({'topics': 'Node'}, 'topics'),
        ({'topics': ['Node', '']}, 'topics'),
        ({'index': -1}, 'index'),
        ({'index': 'latest'}, 'index'),
        ({'nomad_addr': 'http://'}, 'nomad_addr'),
        ({'nomad_token': 'a\nb'}, 'nomad_token'),
        ({'topics': ['Nodes']}, 'topics'),
        ({'idle_timeout': 30}, 'idle_timeout'),
        ({'idle_timeout': 'x'}, 'idle_timeout'),
        ({'lock': 'nzc/lock', 'lock_ttl': 5}, 'lock_ttl'),
        ({'lock': 'nzc/lock', 'lock_ttl': '15s'}, 'lock_ttl'),
    ],
)
def test_a_bad_option_is_named_with_its_fix(args, named):
    with pytest.raises(ValueError, match='^%s' % named):
        nomad_events.settings(args, {})


def test_the_query_names_each_topic_and_resumes_only_from_a_known_index():
    conf = nomad_events.settings({'topics': ['Node', 'Job:web'], 'namespace': 'demo'}, {})
    assert nomad_events.stream_query(conf, 0) == [('topic', 'Node'), ('topic', 'Job:web'), ('namespace', 'demo')]
    conf = nomad_events.settings({'region': 'eu'}, {})
    assert nomad_events.stream_query(conf, 13) == [
        ('topic', 'Node'),
        ('namespace', '*'),
        ('region', 'eu'),
        ('index', '13'),
    ]


def test_each_event_of_a_captured_drain_goes_on_the_queue_once_and_a_heartbeat_adds_none():
    assert FRAMES[0] == {}  # Nomad's first line: the heartbeat of an accepted stream
    events = [event for frame in FRAMES for event in nomad_events.events_after(frame, 0)]
    assert [(e['index'], e['type']) for e in events] == [
        (8, 'NodeRegistration'), (9, 'NodeStreamEvent'), (10, 'NodeRegistration'),
        (11, 'NodeDrain'), (12, 'NodeDrain'), (13, 'NodeDrain'),
    ]  # fmt: skip
    drain = events[3]
    assert drain['topic'] == 'Node' and drain['key'] == drain['payload']['Node']['ID']
    assert drain['payload']['Node']['DrainStrategy']['Deadline'] == 60 * 10**9
    # After a reconnect from index 12, Nomad may send 11 and 12 again: only what comes after the last goes on.
    assert [e['index'] for f in FRAMES for e in nomad_events.events_after(f, 12)] == [13]


def test_a_refusal_names_the_token_and_what_each_topic_needs():
    conf = nomad_events.settings({'nomad_addr': 'https://n:4646', 'topics': ['Node', 'Job:web', 'HostVolume']}, {})
    said = nomad_events.refusal('403 Forbidden', conf)
    assert 'https://n:4646' in said and '403 Forbidden' in said and 'nomad_token' in said
    assert 'host-volume-read in the namespaces streamed; node read; read-job in the namespaces streamed' in said
    conf = nomad_events.settings({'topics': ['NodePool']}, {})
    assert 'a management token' in nomad_events.refusal('403 Forbidden', conf)
    said = nomad_events.refusal('400 Bad Request', conf, token=False)
    assert 'topics' in said and 'nomad_token' not in said


def test_the_tls_options_are_documented_as_the_modules_fragment_documents_them():
    # An event source cannot use a doc fragment: this keeps the two texts one.
    source = yaml.safe_load(nomad_events.DOCUMENTATION)['options']
    modules = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)['options']
    for name in ('validate_certs', 'ca_cert', 'client_cert', 'client_key', 'tls_server_name'):
        assert source[name] == modules[name], name


def test_the_follow_rulebooks_rules_name_event_types_that_nomad_sends():
    """Each rule of the follow rulebook acts on a type of event that the captured stream of Nomad v1.11.3 holds, and
    on the source's own NodeSnapshot: a node's change of status comes as a NodeStreamEvent (a first version waited
    for "NodeEvent", which never came)."""
    rulebook = yaml.safe_load((Path(__file__).resolve().parents[3] / 'extensions/eda/rulebooks/follow.yml').read_text())
    sent = set((e['Topic'], e['Type']) for frame in FRAMES for e in frame.get('Events') or [])
    assert rulebook[0]['sources'][0]['nomad_zfs.csi.nomad_events']['node_snapshot'] is True
    *follows, back, said = rulebook[0]['rules']
    for rule in follows + [back]:
        [topic] = re.findall(r'event\.topic == "(\w+)"', rule['condition'])
        kinds = re.findall(r'event\.type == "(\w+)"', rule['condition'])
        assert topic == 'Node' and all((topic, kind) in sent for kind in kinds if kind != 'NodeSnapshot'), (
            rule['name'],
            sorted(sent),
        )
        # A drain or a loss is followed from the snapshot too, and its outcome comes back as an event.
        assert (
            ('NodeSnapshot' in kinds) == (rule in follows) == rule['action']['run_playbook'].get('post_events', False)
        )
    # The last rule prints that outcome: the stats the follow sets last.
    follow = yaml.safe_load(
        (Path(__file__).resolve().parents[3] / 'roles/host_volume_move/tasks/follow.yml').read_text()
    )
    [key] = [task for task in follow if 'ansible.builtin.set_stats' in task][-1]['ansible.builtin.set_stats']['data']
    assert 'event.%s is defined' % key in said['condition'] and 'print_event' in said['action'], said


def test_a_node_snapshot_is_an_event_as_a_rule_reads_one_and_needs_the_node_topic():
    node = {'ID': 'n1', 'Status': 'down', 'DrainStrategy': None}
    assert nomad_events.node_snapshot_event(node, 42) == {
        'topic': 'Node',
        'type': 'NodeSnapshot',
        'key': 'n1',
        'namespace': '',
        'index': 42,
        'payload': {'Node': node},
    }
    assert nomad_events.settings({'node_snapshot': True, 'topics': ['Node:n1']}, {})['node_snapshot'] is True
    with pytest.raises(ValueError, match='node_snapshot needs topic Node'):
        nomad_events.settings({'node_snapshot': True, 'topics': ['Job']}, {})
    with pytest.raises(ValueError, match="node_snapshot 'yes': give true or false"):
        nomad_events.settings({'node_snapshot': 'yes'}, {})


def test_after_a_snapshot_a_stream_with_nowhere_to_go_on_from_starts_after_it_and_replays_no_older_node_event():
    nodes = nomad_events.settings({'topics': ['Node', 'Node:n1']}, {})
    # The captured drain's stream, from a snapshot at index 11: only the drain's later updates go on.
    last = nomad_events.after_snapshot(nodes, 0, 11)
    assert [e['index'] for f in FRAMES for e in nomad_events.events_after(f, last)] == [12, 13]
    # A cursor (or an index given) is where it goes on from; other topics' older events are in no snapshot.
    assert nomad_events.after_snapshot(nodes, 7, 11) == 7
    assert nomad_events.after_snapshot(nomad_events.settings({'topics': ['Node', 'Job']}, {}), 0, 11) == 0


def test_a_node_event_whose_node_id_is_no_uuid_is_dropped_before_a_rule_hands_it_to_a_playbook(caplog):
    """A client may register any ID, and a rule passes it to a playbook as an extra var, which Ansible renders."""
    planted = "{{ lookup('pipe', 'id') }}"
    good = '0fc4b0a8-7a25-5f4e-2ad5-2e8b4ff0c5d1'
    frame = {
        'Index': 7,
        'Events': [
            {'Topic': 'Node', 'Type': 'NodeStreamEvent', 'Key': planted, 'Payload': {'Node': {'ID': planted}}},
            {'Topic': 'Node', 'Type': 'NodeDrain', 'Key': good, 'Payload': {'Node': {'ID': good}}},
            {'Topic': 'Node', 'Type': 'NodeDrain', 'Key': good.upper(), 'Payload': {'Node': {'ID': good.upper()}}},
            {'Topic': 'Job', 'Type': 'JobRegistered', 'Key': 'web', 'Payload': {'Job': {'ID': 'web'}}},
        ],
    }
    with caplog.at_level('WARNING'):
        kept = nomad_events.events_after(frame, 0)
    assert [(e['type'], e['key']) for e in kept] == [('NodeDrain', good), ('JobRegistered', 'web')]
    assert 'Dropped a NodeStreamEvent event at index 7: its node ID is no UUID' in caplog.text
    assert planted not in caplog.text
    assert not nomad_events.trusted_node(nomad_events.node_snapshot_event({'ID': planted}, 3))


def test_tls_server_name_verifies_the_name_it_gives_in_place_of_the_addresss_host(tmp_path):
    """The source's reads of an agent whose certificate names server.global.nomad alone, at 127.0.0.1: refused as
    the address, and done with tls_server_name (or NOMAD_TLS_SERVER_NAME), as the modules do."""
    import asyncio

    import aiohttp

    async def read(conf):
        session, base = nomad_events.session_for(conf)
        async with session:
            return await nomad_events.Stream(session, base, conf, nomad_events.Lease()).read('/v1/jobs')

    with https_server_named('server.global.nomad', tmp_path) as (addr, ca):
        conf = nomad_events.settings({'nomad_addr': addr, 'ca_cert': ca}, {})
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            asyncio.run(read(conf))
        named = nomad_events.settings(
            {'nomad_addr': addr, 'ca_cert': ca}, {'NOMAD_TLS_SERVER_NAME': 'server.global.nomad'}
        )
        assert asyncio.run(read(named)) == ([], 0)
    assert 'not client.global.nomad' in nomad_events.certificate_name_fix(
        dict(conf, tls_server_name='client.global.nomad')
    )
