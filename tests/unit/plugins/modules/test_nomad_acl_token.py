"""nomad_acl_token's main() with a fake Nomad client: found by name, updated with its own secret, the secret
returned only by the run that made it."""

import json

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_acl_token
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

SECRET = '7a6f2d8e-0c1b-4a5e-9f3d-1e2c3b4a5d6f'
ACCESSOR = 'b1f0c5a2-7d1e-4c1b-8a53-2f9d0e6c4a11'
# An entry of GET /v1/acl/tokens on Nomad v1.11.3 (times dropped).
STUB = {'AccessorID': ACCESSOR, 'Name': 'ci', 'Type': 'client', 'Policies': ['p1'], 'Roles': None, 'Global': False}


@pytest.fixture
def nomad(monkeypatch):
    fake = FakeNomad().install(monkeypatch)
    fake.handlers[('get', 'acl/tokens')] = lambda body, params: [
        dict(STUB, **dict((k, v) for k, v in t.items() if k != 'SecretID')) for t in fake.tokens
    ]
    fake.handlers[('get', 'acl/policies')] = lambda body, params: [{'Name': 'p1'}, {'Name': 'p2'}]
    fake.tokens = []

    def create(body, params):
        fake.tokens.append(dict(body, AccessorID=ACCESSOR, SecretID=SECRET))
        return fake.tokens[-1]

    def update(body, params):
        fake.tokens[0] = dict(body)
        return fake.tokens[0]

    fake.handlers[('put', 'acl/token')] = create
    fake.handlers[('put', 'acl/token/' + ACCESSOR)] = update
    fake.handlers[('get', 'acl/token/' + ACCESSOR)] = lambda body, params: dict(fake.tokens[0])
    return fake


def test_created_once_with_its_secret_then_nothing_to_do(run_main, nomad):
    made = run_main(nomad_acl_token, {'name': 'ci', 'policies': ['p1']})
    assert made['changed'] and made['secret_id'] == SECRET and made['token']['accessor_id'] == ACCESSOR
    again = run_main(nomad_acl_token, {'name': 'ci', 'policies': ['p1']})
    assert again['changed'] is False and 'secret_id' not in again and len(nomad.writes()) == 1
    assert [c[1] for c in nomad.calls[-1:]] == ['acl/tokens']  # a re-run is one list call


def test_an_update_sends_the_token_back_with_its_secret(run_main, nomad):
    run_main(nomad_acl_token, {'name': 'ci', 'policies': ['p1']})
    updated = run_main(nomad_acl_token, {'name': 'ci', 'policies': ['p1', 'p2']})
    method, path, body = nomad.writes()[-1]
    assert (method, path) == ('put', 'acl/token/' + ACCESSOR)
    assert body['SecretID'] == SECRET and body['Policies'] == ['p1', 'p2']
    assert updated['changed_fields'] == ['policies'] and SECRET not in repr(updated)


def test_the_variable_gets_the_secret_and_the_result_never_does(run_main, nomad):
    run_main(nomad_acl_token, {'name': 'ci', 'policies': ['p1']})
    put = run_main(nomad_acl_token, {'name': 'ci', 'policies': ['p1'], 'variable': {'path': 'nomad/jobs/ci'}})
    method, path, body = nomad.writes()[-1]
    assert (method, path) == ('put', 'var/nomad/jobs/ci') and body['Items'] == {'token': SECRET}
    assert put['changed'] and put['variable_changed'] and SECRET not in repr(put)


def test_check_mode_writes_nothing_and_predicts_the_variable(run_main, nomad):
    checked = run_main(nomad_acl_token, {'name': 'ci', 'policies': ['p1'], 'variable': {'path': 'x'}}, check=True)
    assert checked['changed'] and checked['variable_changed'] and nomad.writes() == []
    assert checked['token']['accessor_id'] is None


def test_an_unknown_policy_is_refused_before_the_write(run_main, nomad):
    failed = run_main(nomad_acl_token, {'name': 'ci', 'policies': ['p1', 'nope']})
    assert failed['failed'] and 'policies: nope is not an ACL policy' in failed['msg'] and nomad.writes() == []


def test_check_mode_predicts_a_token_whose_policy_an_earlier_task_makes(run_main, nomad):
    checked = run_main(nomad_acl_token, {'name': 'ci', 'policies': ['p1', 'nope']}, check=True)
    assert checked['changed'] and 'failed' not in checked and nomad.writes() == []
    assert 'nope is not an ACL policy in Nomad yet' in json.dumps(checked['warnings'])
