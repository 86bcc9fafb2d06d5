"""nomad_namespace against a real ACL-enabled Nomad: check mode, idempotence, capabilities Nomad enforces,
refusals that change nothing."""

RAW_EXEC_JOB = {
    'Job': {
        'ID': 'raw',
        'Namespace': 'nzc-team-a',
        'Datacenters': ['*'],
        'TaskGroups': [
            {
                'Name': 'g',
                'Tasks': [{'Name': 't', 'Driver': 'raw_exec', 'Config': {'command': '/bin/true'}}],
            }
        ],
    }
}


def namespaces(acl):
    return sorted((n['Name'], n['ModifyIndex']) for n in acl.api('GET', '/v1/namespaces'))


def test_check_mode_then_create_then_nothing_to_do(acl):
    args = {'name': 'nzc-team-a', 'description': 'Team A', 'meta': {'owner': 'a'}, 'enabled_task_drivers': ['exec']}
    before = namespaces(acl)
    checked = acl.module('nomad_namespace', args, check=True, diff=True)
    assert checked['changed'] and checked['namespace']['enabled_task_drivers'] == ['exec'], checked
    assert '+    "description": "Team A"' in checked.output and namespaces(acl) == before

    made = acl.module('nomad_namespace', args)
    assert made['changed'] and made['namespace']['meta'] == {'owner': 'a'}, made
    stored = acl.api('GET', '/v1/namespace/nzc-team-a')
    assert stored['Capabilities']['EnabledTaskDrivers'] == ['exec'] and stored['Description'] == 'Team A'
    again = acl.module('nomad_namespace', args)
    assert again['changed'] is False and again['changed_fields'] == [], again

    edited = acl.module('nomad_namespace', dict(args, description='Team A, storage'), diff=True)
    assert edited['changed_fields'] == ['description'], edited
    assert '-    "description": "Team A"' in edited.output, edited.output


def test_nomad_enforces_the_namespaces_task_drivers(acl):
    acl.module('nomad_namespace', {'name': 'nzc-team-a', 'enabled_task_drivers': ['exec']})
    refused = acl.api('PUT', '/v1/jobs?namespace=nzc-team-a', RAW_EXEC_JOB)
    assert refused[0] == 500 and 'raw_exec' in refused[1] and 'not allowed' in refused[1], refused


def test_an_update_keeps_the_settings_made_elsewhere(acl):
    # Nomad CE's own fields that the module does not manage, set through the API as another tool would.
    acl.module('nomad_namespace', {'name': 'nzc-kept', 'enabled_task_drivers': ['exec']})
    stored = acl.api('GET', '/v1/namespace/nzc-kept')
    stored['Capabilities'].update(EnabledNetworkModes=['host'], DisabledNetworkModes=['bridge'])
    acl.api('PUT', '/v1/namespace/nzc-kept', stored)
    edited = acl.module(
        'nomad_namespace', {'name': 'nzc-kept', 'description': 'kept', 'enabled_task_drivers': ['exec']}
    )
    assert edited['changed_fields'] == ['description'], edited
    caps = acl.api('GET', '/v1/namespace/nzc-kept')['Capabilities']
    assert (caps['EnabledNetworkModes'], caps['DisabledNetworkModes']) == (['host'], ['bridge']), caps
    assert caps['EnabledTaskDrivers'] == ['exec'], caps


def test_node_pool_config_is_refused_by_nomad_ce_and_nothing_changes(acl):
    acl.module('nomad_namespace', {'name': 'nzc-pools'})
    before = acl.api('GET', '/v1/namespace/nzc-pools')
    refused = acl.module('nomad_namespace', {'name': 'nzc-pools', 'node_pool_config': {'default': 'storage'}})
    assert refused.failed and 'Node Pools Governance is unlicensed' in refused['msg'], refused
    assert acl.api('GET', '/v1/namespace/nzc-pools')['ModifyIndex'] == before['ModifyIndex']


def test_bad_input_is_named_and_nothing_changes(acl):
    before = namespaces(acl)
    cases = [
        ({'name': 'no_underscores'}, "name 'no_underscores' is not a Nomad namespace"),
        ({'name': 'default', 'state': 'absent'}, 'the default namespace cannot be removed'),
        ({'name': 'nzc-x', 'meta': {'n': 1}}, 'meta: values must be strings; quote the value of n'),
        (
            {'name': 'nzc-x', 'enabled_task_drivers': ['exec'], 'disabled_task_drivers': ['exec']},
            'exec is in enabled_task_drivers and disabled_task_drivers',
        ),
    ]
    for args, message in cases:
        result = acl.module('nomad_namespace', args)
        assert result.failed and message in result['msg'], (args, result)
    assert namespaces(acl) == before


def test_a_client_token_gets_403_named_with_the_fix(acl):
    policy = acl.api(
        'PUT', '/v1/acl/policy/nzc-read', {'Name': 'nzc-read', 'Rules': 'namespace "*" { policy = "read" }'}
    )
    assert policy is None or not isinstance(policy, tuple), policy
    token = acl.api('PUT', '/v1/acl/token', {'Name': 'nzc-reader', 'Type': 'client', 'Policies': ['nzc-read']})
    refused = acl.module('nomad_namespace', {'name': 'nzc-denied'}, token=token['SecretID'])
    assert refused.failed and 'answered 403' in refused['msg'] and 'nomad_token' in refused['msg'], refused
    assert token['SecretID'] not in refused.output
    assert 'nzc-denied' not in [pair[0] for pair in namespaces(acl)]


def test_absent_removes_then_nothing_to_do(acl):
    acl.module('nomad_namespace', {'name': 'nzc-gone'})
    gone = acl.module('nomad_namespace', {'name': 'nzc-gone', 'state': 'absent'})
    assert gone['changed'] and 'nzc-gone' not in [pair[0] for pair in namespaces(acl)]
    assert acl.module('nomad_namespace', {'name': 'nzc-gone', 'state': 'absent'})['changed'] is False
