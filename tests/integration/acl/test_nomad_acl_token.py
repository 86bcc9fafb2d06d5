"""nomad_acl_token against a real ACL-enabled Nomad: the secret once, no rotation on re-runs, updates that keep
the secret, the secret in a Nomad Variable, and refusals that change nothing."""

import pytest

RULES = 'namespace "default" {\n  capabilities = ["list-jobs"]\n}\n'


@pytest.fixture(scope='module')
def policies(acl):
    for name in ('nzc-list', 'nzc-list-2'):
        assert acl.module('nomad_acl_policy', {'name': name, 'rules': RULES})['rc'] == 0


def tokens_named(acl, name):
    return [t for t in acl.api('GET', '/v1/acl/tokens') if t['Name'] == name]


def works(acl, secret):
    answer = acl.api('GET', '/v1/acl/token/self', token=secret)
    return not isinstance(answer, tuple) and answer['SecretID'] == secret


def test_the_secret_is_given_once_and_a_rerun_keeps_it(acl, policies):
    args = {'name': 'nzc-submitter', 'policies': ['nzc-list']}
    checked = acl.module('nomad_acl_token', args, check=True)
    assert checked['changed'] and 'secret_id' not in checked and tokens_named(acl, 'nzc-submitter') == []

    made = acl.module('nomad_acl_token', args)
    secret, accessor = made['secret_id'], made['token']['accessor_id']
    assert made['changed'] and works(acl, secret), made
    assert made['token']['policies'] == ['nzc-list'] and made['token']['type'] == 'client'

    again = acl.module('nomad_acl_token', args)
    assert again['changed'] is False and 'secret_id' not in again and secret not in again.output, again
    assert [t['AccessorID'] for t in tokens_named(acl, 'nzc-submitter')] == [accessor]

    widened = acl.module('nomad_acl_token', dict(args, policies=['nzc-list', 'nzc-list-2']), diff=True)
    assert widened['changed'] and widened['changed_fields'] == ['policies'] and 'secret_id' not in widened
    assert secret not in widened.output and works(acl, secret)
    assert sorted(acl.api('GET', '/v1/acl/token/' + accessor)['Policies']) == ['nzc-list', 'nzc-list-2']

    gone = acl.module('nomad_acl_token', {'name': 'nzc-submitter', 'state': 'absent'})
    assert gone['changed'] and not works(acl, secret) and tokens_named(acl, 'nzc-submitter') == []
    assert acl.module('nomad_acl_token', {'name': 'nzc-submitter', 'state': 'absent'})['changed'] is False


def test_the_secret_goes_into_a_variable_and_stays_hidden(acl, policies):
    acl.api('PUT', '/v1/var/nzc/deployer', {'Path': 'nzc/deployer', 'Items': {'other': 'kept'}})
    args = {'name': 'nzc-deployer', 'policies': ['nzc-list'], 'variable': {'path': 'nzc/deployer'}}
    made = acl.module('nomad_acl_token', args)
    assert made['changed'] and made['variable_changed'], made
    items = acl.api('GET', '/v1/var/nzc/deployer')['Items']
    assert items == {'other': 'kept', 'token': made['secret_id']}

    again = acl.module('nomad_acl_token', args)
    assert again['changed'] is False and again['variable_changed'] is False, again

    # The variable lost the secret: the next run puts it back without a new token, and never prints it.
    acl.api('PUT', '/v1/var/nzc/deployer', {'Path': 'nzc/deployer', 'Items': {'other': 'kept'}})
    mended = acl.module('nomad_acl_token', args, diff=True)
    assert mended['changed'] and mended['variable_changed'] and mended['changed_fields'] == [], mended
    assert made['secret_id'] not in mended.output and 'secret_id' not in mended
    assert acl.api('GET', '/v1/var/nzc/deployer')['Items']['token'] == made['secret_id']


def test_refusals_name_the_field_and_change_nothing(acl, policies):
    for name in ('nzc-twin', 'nzc-twin'):
        acl.api('PUT', '/v1/acl/token', {'Name': name, 'Type': 'client', 'Policies': ['nzc-list']})
    acl.module('nomad_acl_token', {'name': 'nzc-local', 'policies': ['nzc-list']})
    before = sorted((t['AccessorID'], t['ModifyIndex']) for t in acl.api('GET', '/v1/acl/tokens'))
    cases = [
        ({'name': 'nzc-twin', 'policies': ['nzc-list']}, '2 tokens are named nzc-twin'),
        ({'name': 'nzc-x'}, 'policies is required for a client token'),
        ({'name': 'nzc-x', 'type': 'management', 'policies': ['nzc-list']}, 'a management token has no policies'),
        ({'name': 'nzc-local', 'policies': ['nzc-list'], 'global': True}, 'Nomad cannot change that'),
        ({'name': 'nzc-x', 'policies': ['nzc-list'], 'variable': {'path': 'a b'}}, "variable.path 'a b'"),
        ({'name': 'nzc-x', 'policies': ['no-such-policy']}, 'policies: no-such-policy is not an ACL policy'),
    ]
    for args, message in cases:
        result = acl.module('nomad_acl_token', args)
        assert result.failed and message in result['msg'], (args, result)
    assert sorted((t['AccessorID'], t['ModifyIndex']) for t in acl.api('GET', '/v1/acl/tokens')) == before
