"""nomad_namespace's main() with a fake Nomad client: Nomad's nulls read as empty, check mode predicts with the
planner that writes, and bad input makes no call."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_namespace
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

# GET /v1/namespace/team-a on Nomad v1.11.3, after `nomad namespace apply -description "Team A" team-a`.
READ = {
    'Name': 'team-a',
    'Description': 'Team A',
    'Quota': '',
    'Capabilities': None,
    'NodePoolConfiguration': None,
    'VaultConfiguration': None,
    'ConsulConfiguration': None,
    'Meta': None,
    'CreateIndex': 12,
    'ModifyIndex': 12,
}


@pytest.fixture
def nomad(monkeypatch):
    fake = FakeNomad().install(monkeypatch)
    # Nomad stores the body as sent: a field it lacks reads back as null.
    fake.handlers[('put', 'namespace/team-a')] = lambda body, params: fake.objects.update(
        {'namespace/team-a': dict(dict.fromkeys(READ), **body)}
    )
    return fake


def test_nomads_nulls_equal_the_defaults(run_main, nomad):
    nomad.objects['namespace/team-a'] = READ
    same = run_main(nomad_namespace, {'name': 'team-a', 'description': 'Team A'})
    assert same['changed'] is False and nomad.writes() == []
    assert same['namespace'] == dict(
        name='team-a', description='Team A', meta={}, enabled_task_drivers=[], disabled_task_drivers=[]
    )


def test_check_mode_predicts_and_writes_nothing_then_the_write_matches(run_main, nomad):
    args = {'name': 'team-a', 'enabled_task_drivers': ['exec']}
    checked = run_main(nomad_namespace, args, check=True, diff=True)
    assert checked['changed'] and 'enabled_task_drivers' in checked['changed_fields']
    assert checked['namespace']['enabled_task_drivers'] == ['exec'] and nomad.writes() == []
    made = run_main(nomad_namespace, args)
    [(method, path, body)] = nomad.writes()
    assert (method, path) == ('put', 'namespace/team-a') and body['Capabilities']['EnabledTaskDrivers'] == ['exec']
    assert made['namespace'] == checked['namespace']
    assert run_main(nomad_namespace, args)['changed'] is False


def test_node_pools_are_sent_only_when_given(run_main, nomad):
    run_main(nomad_namespace, {'name': 'team-a'})
    assert 'NodePoolConfiguration' not in nomad.writes()[0][2]
    run_main(nomad_namespace, {'name': 'team-a', 'node_pool_config': {'default': 'storage'}})
    pools = nomad.writes()[1][2]['NodePoolConfiguration']
    assert pools == {'Default': 'storage', 'Allowed': [], 'Denied': []}


@pytest.mark.parametrize(
    'args, message',
    [
        ({'name': 'a_b'}, "name 'a_b' is not a Nomad namespace"),
        ({'name': 'default', 'state': 'absent'}, 'the default namespace cannot be removed'),
        ({'name': 'a', 'meta': {'k': 1}}, 'meta: values must be strings'),
    ],
)
def test_bad_input_makes_no_call(run_main, nomad, args, message):
    failed = run_main(nomad_namespace, args)
    assert failed['failed'] and message in failed['msg'] and nomad.calls == []


def test_an_update_keeps_what_the_module_does_not_manage(run_main, nomad):
    # Set elsewhere (the API, or Nomad Enterprise): the write would drop them, since Nomad stores the body as sent.
    unmanaged = dict(
        Quota='team-a-quota',
        NodePoolConfiguration={'Default': 'gpu', 'Allowed': ['gpu'], 'Denied': None},
        VaultConfiguration={'Default': 'default', 'Allowed': None, 'Denied': None},
    )
    caps = {'EnabledTaskDrivers': None, 'DisabledTaskDrivers': None, 'EnabledNetworkModes': ['host']}
    nomad.objects['namespace/team-a'] = dict(READ, Capabilities=caps, **unmanaged)
    result = run_main(nomad_namespace, {'name': 'team-a', 'description': 'Team A, renamed', 'meta': {'o': 'a'}})
    [(method, path, body)] = nomad.writes()
    assert result['changed'] and (method, path) == ('put', 'namespace/team-a')
    assert dict((k, body[k]) for k in unmanaged) == unmanaged
    assert body['Capabilities'] == caps
    assert (body['Description'], body['Meta']) == ('Team A, renamed', {'o': 'a'})
    assert 'CreateIndex' not in body and 'ModifyIndex' not in body


def test_options_left_out_keep_what_was_set_elsewhere(run_main, nomad):
    """A run that names only the task drivers (as the nomad_access role's does) keeps the meta and description that
    someone else set; an empty meta given on purpose removes it."""
    nomad.objects['namespace/team-a'] = dict(READ, Meta={'owner': 'team-a@example.com'})
    drivers = run_main(nomad_namespace, {'name': 'team-a', 'enabled_task_drivers': ['exec']}, diff=True)
    assert drivers['changed_fields'] == ['enabled_task_drivers']
    [(_method, _path, body)] = nomad.writes()
    assert (body['Meta'], body['Description']) == ({'owner': 'team-a@example.com'}, 'Team A')
    assert drivers['namespace']['meta'] == {'owner': 'team-a@example.com'}
    assert run_main(nomad_namespace, {'name': 'team-a'})['changed'] is False
    cleared = run_main(nomad_namespace, {'name': 'team-a', 'meta': {}})
    assert cleared['changed_fields'] == ['meta'] and nomad.writes()[-1][2]['Meta'] == {}
