"""nomad_acl_policy against a real ACL-enabled Nomad: Nomad's strict parser, idempotence on the stored text, and a
policy that really limits a token to its namespace."""

RULES = (
    'namespace "nzc-team-a" {\n'
    '  capabilities = ["submit-job", "list-jobs", "read-job", "csi-read-volume", "csi-mount-volume"]\n'
    '}\n'
)


def stored(acl, name):
    return acl.api('GET', '/v1/acl/policy/' + name)


def test_check_mode_then_create_then_nothing_to_do(acl):
    args = {'name': 'nzc-submit-a', 'description': 'team a', 'rules': RULES}
    checked = acl.module('nomad_acl_policy', args, check=True, diff=True)
    assert checked['changed'] and checked['policy']['rules'] == RULES, checked
    assert 'csi-mount-volume' in checked.output and stored(acl, 'nzc-submit-a')[0] == 404

    made = acl.module('nomad_acl_policy', args)
    assert made['changed'] and stored(acl, 'nzc-submit-a')['Rules'] == RULES, made
    again = acl.module('nomad_acl_policy', args)
    assert again['changed'] is False and again['changed_fields'] == [], again

    index = stored(acl, 'nzc-submit-a')['ModifyIndex']
    narrower = RULES.replace(', "csi-mount-volume"', '')
    checked = acl.module('nomad_acl_policy', dict(args, rules=narrower), check=True, diff=True)
    assert checked['changed_fields'] == ['rules'] and stored(acl, 'nzc-submit-a')['ModifyIndex'] == index
    assert acl.module('nomad_acl_policy', dict(args, rules=narrower))['changed']
    assert stored(acl, 'nzc-submit-a')['Rules'] == narrower


def test_a_bad_rule_fails_with_nomads_reason_and_nothing_changes(acl):
    acl.module('nomad_acl_policy', {'name': 'nzc-strict', 'rules': RULES})
    index = stored(acl, 'nzc-strict')['ModifyIndex']
    for rules, reason in (
        (RULES + 'namspace "x" {\n  policy = "read"\n}\n', "unknown key 'namspace' at the top level"),
        ('namespace "x" {\n  capabilities = ["fly"]\n}\n', "Invalid namespace capability 'fly'"),
        ('namespace "x" {\n  policy = "read"\n', 'Failed to parse ACL Policy'),
    ):
        refused = acl.module('nomad_acl_policy', {'name': 'nzc-strict', 'rules': rules})
        assert refused.failed and reason in refused['msg'], refused
    assert stored(acl, 'nzc-strict')['ModifyIndex'] == index


def test_a_misspelt_key_nomad_would_store_is_refused_before_any_write(acl):
    typo = 'namespace "nzc-typo" {\n  capabilites = ["read-job"]\n}\n'
    # Nomad itself stores it, and the policy then grants nothing.
    assert acl.api('POST', '/v1/acl/policy/nzc-typo-direct', {'Name': 'nzc-typo-direct', 'Rules': typo}) is None
    assert stored(acl, 'nzc-typo-direct')['Rules'] == typo
    refused = acl.module('nomad_acl_policy', {'name': 'nzc-typo', 'rules': typo})
    assert refused.failed and 'unknown key \'capabilites\' in namespace "nzc-typo"' in refused['msg'], refused
    assert stored(acl, 'nzc-typo')[0] == 404


def test_every_key_the_check_allows_nomad_takes(acl):
    every = (
        'namespace "nzc-every" {\n  policy = "read"\n  capabilities = ["submit-job"]\n'
        '  variables {\n    path "nzc/*" {\n      capabilities = ["read"]\n    }\n  }\n}\n'
        'node_pool "default" {\n  policy = "read"\n}\nhost_volume "pg*" {\n  policy = "write"\n}\n'
        'agent {\n  policy = "read"\n}\nnode {\n  policy = "read"\n}\noperator {\n  policy = "read"\n}\n'
        'quota {\n  policy = "read"\n}\nplugin {\n  policy = "read"\n}\n'
    )
    made = acl.module('nomad_acl_policy', {'name': 'nzc-every', 'rules': every})
    assert made['changed'] and stored(acl, 'nzc-every')['Rules'] == every, made


def test_the_policy_limits_a_token_to_its_namespace(acl):
    for ns in ('nzc-team-a', 'nzc-team-b'):
        acl.module('nomad_namespace', {'name': ns})
    acl.module('nomad_acl_policy', {'name': 'nzc-submit-a', 'rules': RULES})
    token = acl.api('PUT', '/v1/acl/token', {'Name': 'nzc-a', 'Type': 'client', 'Policies': ['nzc-submit-a']})
    assert acl.api('GET', '/v1/jobs?namespace=nzc-team-a', token=token['SecretID']) == []
    assert acl.api('GET', '/v1/volumes?type=csi&namespace=nzc-team-a', token=token['SecretID']) == []
    denied = acl.api('GET', '/v1/volumes?type=csi&namespace=nzc-team-b', token=token['SecretID'])
    assert denied[0] == 403, denied


def test_missing_rules_and_a_bad_name_are_refused_before_any_call(acl):
    before = acl.api('GET', '/v1/acl/policies')
    for args, message in (
        ({'name': 'nzc-empty'}, 'rules is required with state=present'),
        ({'name': 'has space', 'rules': RULES}, "name 'has space' is not a Nomad policy name"),
        (
            {'name': 'nzc-wi', 'rules': RULES, 'job_acl': {'job_id': 'j', 'task': 't'}},
            'job_acl.task needs job_acl.group',
        ),
    ):
        result = acl.module('nomad_acl_policy', args)
        assert result.failed and message in result['msg'], (args, result)
    assert acl.api('GET', '/v1/acl/policies') == before


def test_absent_removes_then_nothing_to_do(acl):
    acl.module('nomad_acl_policy', {'name': 'nzc-gone', 'rules': RULES})
    assert acl.module('nomad_acl_policy', {'name': 'nzc-gone', 'state': 'absent'})['changed']
    assert stored(acl, 'nzc-gone')[0] == 404
    assert acl.module('nomad_acl_policy', {'name': 'nzc-gone', 'state': 'absent'})['changed'] is False
