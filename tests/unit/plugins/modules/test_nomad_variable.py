"""nomad_variable's main() with a fake Nomad client: check-and-set writes, and values that never show."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_variable
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

SECRET = 'ssh-ed25519-PRIVATE-do-not-print-4242'
PATH = 'nomad/jobs/zfs-csi'


@pytest.fixture
def nomad(monkeypatch):
    return FakeNomad().install(monkeypatch)


def test_create_writes_with_cas_zero_and_check_mode_writes_nothing(run_main, nomad):
    checked = run_main(nomad_variable, {'path': PATH, 'items': {'key': SECRET}}, check=True, diff=True)
    assert checked['changed'] and checked['changed_keys'] == ['key'] and nomad.writes() == []
    assert checked['diff']['after'] == {'key': '<hidden, after>'}
    nomad.handlers[('put', 'var/' + PATH)] = lambda body, params: {'ModifyIndex': 42}
    made = run_main(nomad_variable, {'path': PATH, 'items': {'key': SECRET}})
    assert made['changed'] and made['modify_index'] == 42 and made['item_keys'] == ['key']
    assert [(c[0], c[1]) for c in nomad.writes()] == [('put', 'var/' + PATH)]
    assert nomad.writes()[0][2]['Items'] == {'key': SECRET}
    assert SECRET not in repr(checked) + repr(made)


def test_same_items_change_nothing_and_a_rotation_names_only_the_key(run_main, nomad):
    nomad.objects['var/' + PATH] = {'Path': PATH, 'Items': {'key': SECRET, 'other': 'x'}, 'ModifyIndex': 7}
    same = run_main(nomad_variable, {'path': PATH, 'items': {'key': SECRET, 'other': 'x'}})
    assert same['changed'] is False and same['modify_index'] == 7 and nomad.writes() == []
    seen = {}
    nomad.handlers[('put', 'var/' + PATH)] = lambda body, params: seen.update(params) or {'ModifyIndex': 8}
    rotated = run_main(nomad_variable, {'path': PATH, 'items': {'key': SECRET + '2', 'other': 'x'}}, diff=True)
    assert rotated['changed_keys'] == ['key'] and seen == {'cas': 7}
    assert rotated['diff']['before'] == {'key': '<hidden, before>', 'other': '<hidden>'}


def test_absent_deletes_with_the_index_it_read(run_main, nomad):
    nomad.objects['var/' + PATH] = {'Path': PATH, 'Items': {'key': SECRET}, 'ModifyIndex': 7}
    gone = run_main(nomad_variable, {'path': PATH, 'state': 'absent'})
    assert gone['changed'] and nomad.writes() == [('delete', 'var/' + PATH, {'cas': 7})]
    assert run_main(nomad_variable, {'path': PATH, 'state': 'absent'})['changed'] is False


@pytest.mark.parametrize(
    'args, message',
    [
        ({'path': 'bad path!', 'items': {'k': 'a-secret'}}, "path 'bad path!' is not a Nomad variable path"),
        ({'path': PATH, 'items': {'k': 1}}, 'items: values must be strings; quote the value of k'),
        ({'path': PATH}, 'items is empty'),
    ],
)
def test_bad_input_fails_before_any_call(run_main, nomad, args, message):
    failed = run_main(nomad_variable, args)
    assert failed['failed'] and message in failed['msg'] and nomad.calls == []
