"""nomad_acl_policy's main() with a fake Nomad client: the stored text is what is compared."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_acl_policy
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

RULES = 'namespace "team-a" {\n  capabilities = ["submit-job"]\n}\n'
# GET /v1/acl/policy/team-a on Nomad v1.11.3 (Hash shortened).
READ = {
    'Name': 'team-a',
    'Description': '',
    'Rules': RULES,
    'JobACL': None,
    'Hash': 'c2Vl',
    'CreateIndex': 20,
    'ModifyIndex': 20,
}


@pytest.fixture
def nomad(monkeypatch):
    fake = FakeNomad().install(monkeypatch)
    fake.handlers[('put', 'acl/policy/team-a')] = lambda body, params: fake.objects.update(
        {'acl/policy/team-a': dict(READ, **body)}
    )
    return fake


def test_same_text_is_no_change_and_other_text_is_one_write(run_main, nomad):
    nomad.objects['acl/policy/team-a'] = READ
    assert run_main(nomad_acl_policy, {'name': 'team-a', 'rules': RULES})['changed'] is False
    wider = RULES.replace('"submit-job"', '"submit-job", "read-job"')
    checked = run_main(nomad_acl_policy, {'name': 'team-a', 'rules': wider}, check=True, diff=True)
    assert checked['changed_fields'] == ['rules'] and nomad.writes() == []
    assert checked['diff']['after'] == 'rules:\n' + wider and checked['policy']['rules'] == wider
    run_main(nomad_acl_policy, {'name': 'team-a', 'rules': wider})
    assert len(nomad.writes()) == 1
    body = nomad.writes()[0][2]
    assert body == {'Name': 'team-a', 'Description': '', 'Rules': wider}


def test_a_workload_identity_binding_is_sent_and_compared(run_main, nomad):
    args = {'name': 'team-a', 'rules': RULES, 'job_acl': {'job_id': 'zfs-controller', 'group': 'controller'}}
    run_main(nomad_acl_policy, args)
    acl = nomad.writes()[0][2]['JobACL']
    assert acl == {'Namespace': 'default', 'JobID': 'zfs-controller', 'Group': 'controller', 'Task': ''}
    assert run_main(nomad_acl_policy, args)['changed'] is False


def test_absent_of_a_missing_policy_makes_no_write(run_main, nomad):
    assert run_main(nomad_acl_policy, {'name': 'team-a', 'state': 'absent'})['changed'] is False
    assert nomad.writes() == []
