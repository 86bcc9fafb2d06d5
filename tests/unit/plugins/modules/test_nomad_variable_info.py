"""nomad_variable_info's main() with a fake Nomad client: one read, the items as Nomad holds them, a missing
variable reported as such, and a bad path refused before any call."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_variable_info
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

# GET /v1/var/nomad-access/tokens/csi-operator on Nomad v1.11.3 (the secret replaced).
READ = {
    'Namespace': 'default',
    'Path': 'nomad-access/tokens/csi-operator',
    'CreateIndex': 40,
    'ModifyIndex': 42,
    'Items': {'secret': '1f0e9c6a-0000-4000-8000-000000000000'},
}


@pytest.fixture
def nomad(monkeypatch):
    return FakeNomad(**{'var/nomad-access/tokens/csi-operator': READ}).install(monkeypatch)


def test_the_items_of_a_variable_in_one_read(run_main, nomad):
    found = run_main(nomad_variable_info, {'path': '/nomad-access/tokens/csi-operator'}, check=True)
    assert found['exists'] and found['changed'] is False and found['modify_index'] == 42
    assert found['item_values'] == READ['Items'] and found['path'] == 'nomad-access/tokens/csi-operator'
    assert [c[:2] for c in nomad.calls] == [('get', 'var/nomad-access/tokens/csi-operator')]


def test_a_missing_variable_is_not_an_error(run_main, nomad):
    missing = run_main(nomad_variable_info, {'path': 'nomad-access/tokens/nobody'})
    assert missing['exists'] is False and missing['item_values'] == {} and missing['modify_index'] == 0


def test_a_bad_path_is_refused_before_any_call(run_main, nomad):
    refused = run_main(nomad_variable_info, {'path': 'no spaces/here'})
    assert refused['failed'] and "path 'no spaces/here' is not a Nomad variable path" in refused['msg']
    assert nomad.calls == []
