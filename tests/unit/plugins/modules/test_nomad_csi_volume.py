"""nomad_csi_volume: the request and Nomad's read compare alike, and main() with a fake Nomad client plans,
applies, retries and refuses as it should."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils import _csi_retry
from ansible_collections.nomad_zfs.csi.plugins.module_utils._csi_volume_plan import comparable, requested
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import NomadError
from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_csi_volume
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

GIB = 1024**3
PARAMS = dict(
    id='pgdata',
    name=None,
    plugin_id='zfs',
    mode='create',
    external_id=None,
    fs_type='',
    mount_flags=['noatime'],
    parameters={},
    context={},
    secrets={'token': 'hush'},
    capabilities=[{'access_mode': 'single-node-writer', 'attachment_mode': 'file-system'}],
)

# Trimmed from GET /v1/volume/csi/pgdata on Nomad v1.11.3: secrets dropped, mount flags redacted.
READ = {
    'ID': 'pgdata',
    'Name': 'pgdata',
    'PluginID': 'zfs',
    'ExternalID': 'pgdata',
    'RequestedCapabilities': [{'AccessMode': 'single-node-writer', 'AttachmentMode': 'file-system'}],
    'MountOptions': {'FSType': '', 'MountFlags': ['[REDACTED]']},
    'Parameters': None,
    'Context': {},
    'Secrets': None,
    'RequestedCapacityMin': GIB,
    'RequestedCapacityMax': GIB,
}
ARGS = {'id': 'pgdata', 'plugin_id': 'zfs', 'capacity_min': '1G', 'capacity_max': '1G'}


def test_request_and_read_compare_equal():
    want = requested(PARAMS, (GIB, GIB))
    assert comparable(want, 'create') == comparable(READ, 'create')


def test_secrets_are_sent_but_never_compared():
    want = requested(PARAMS, (0, 0))
    assert want['Secrets'] == {'token': 'hush'}
    assert 'hush' not in repr(comparable(want, 'create'))


def test_capability_order_does_not_matter():
    two = [
        {'AccessMode': 'single-node-writer', 'AttachmentMode': 'file-system'},
        {'AccessMode': 'single-node-reader-only', 'AttachmentMode': 'file-system'},
    ]
    assert comparable(dict(READ, RequestedCapabilities=two), 'create') == comparable(
        dict(READ, RequestedCapabilities=list(reversed(two))), 'create'
    )


@pytest.fixture
def nomad(monkeypatch):
    fake = FakeNomad().install(monkeypatch)

    def create(body, params):
        fake.objects['volume/csi/pgdata'] = dict(READ, Capacity=GIB, Secrets=None)
        return {}

    fake.handlers[('put', 'volume/csi/pgdata/create')] = create
    return fake


def test_check_mode_predicts_the_create_and_calls_nothing_that_writes(run_main, nomad):
    checked = run_main(nomad_csi_volume, ARGS, check=True, diff=True)
    assert checked['changed'] and 'capacity_min' in checked['changed_fields'] and nomad.writes() == []
    assert checked['diff']['after']['capacity_min'] == GIB


def test_create_then_nothing_to_do(run_main, nomad):
    made = run_main(nomad_csi_volume, dict(ARGS, secrets={'token': 'hush'}))
    assert made['changed'] and made['volume']['capacity'] == GIB
    [(method, path, body)] = nomad.writes()
    assert (method, path) == ('put', 'volume/csi/pgdata/create') and body['Volumes'][0]['Secrets'] == {'token': 'hush'}
    assert 'hush' not in repr(made)
    again = run_main(nomad_csi_volume, ARGS)
    assert again['changed'] is False and again['changed_fields'] == [] and len(nomad.writes()) == 1


# Nomad v1.11.3's answers while the controller is missing or restarting (the second from the stack's log).
@pytest.mark.parametrize('answer', ['plugin has no controller', 'no healthy controllers for CSI plugin: zfs'])
def test_create_retries_while_nomad_says_the_plugin_has_no_controller(run_main, nomad, monkeypatch, answer):
    monkeypatch.setattr(_csi_retry, 'RETRY_SECONDS', 5)
    create = nomad.handlers[('put', 'volume/csi/pgdata/create')]
    answers = [NomadError('Nomad at fake refused PUT volume/csi/pgdata/create (500): ' + answer, 500, answer)]

    def first_refuse(body, params):
        if answers:
            raise answers.pop()
        return create(body, params)

    nomad.handlers[('put', 'volume/csi/pgdata/create')] = first_refuse
    monkeypatch.setattr('time.sleep', lambda seconds: None)
    assert run_main(nomad_csi_volume, ARGS)['changed']
    assert [c[1] for c in nomad.writes()] == ['volume/csi/pgdata/create'] * 2


def test_other_errors_are_not_retried_and_name_nomad(run_main, nomad):
    def refuse(body, params):
        raise NomadError(
            'Nomad at fake refused PUT volume/csi/pgdata/create (500): rpc error: no space', 500, 'rpc error: no space'
        )

    nomad.handlers[('put', 'volume/csi/pgdata/create')] = refuse
    failed = run_main(nomad_csi_volume, ARGS)
    assert failed['failed'] and 'no space' in failed['msg'] and len(nomad.writes()) == 1


def test_a_volume_of_another_plugin_is_refused_unchanged(run_main, nomad):
    nomad.objects['volume/csi/pgdata'] = dict(READ, PluginID='other')
    failed = run_main(nomad_csi_volume, ARGS)
    assert failed['failed'] and 'belongs to plugin other, not zfs' in failed['msg'] and nomad.writes() == []


@pytest.mark.parametrize(
    'args, message',
    [
        (dict(ARGS, capacity_min='12XB'), "capacity_min: '12XB' is not a size"),
        (dict(ARGS, id='no/slash'), "id 'no/slash' is not a Nomad volume ID"),
        (dict(ARGS, capacity_min='2G'), 'capacity_min (2G) is above capacity_max (1G)'),
        ({'id': 'pgdata'}, 'plugin_id is required with state=present'),
        (dict(ARGS, mode='register'), 'external_id is required with mode=register'),
    ],
)
def test_bad_input_fails_before_any_call(run_main, nomad, args, message):
    failed = run_main(nomad_csi_volume, args)
    assert failed['failed'] and message in failed['msg'], failed
    assert nomad.calls == []


def test_deleted_sends_secrets_in_a_header_and_absent_only_deregisters(run_main, nomad):
    nomad.objects['volume/csi/pgdata'] = READ
    checked = run_main(nomad_csi_volume, {'id': 'pgdata', 'state': 'deleted', 'secrets': {'k': 'hush'}}, check=True)
    assert checked['changed'] and nomad.writes() == []
    deleted = run_main(nomad_csi_volume, {'id': 'pgdata', 'state': 'deleted', 'secrets': {'k': 'hush'}}, diff=True)
    assert nomad.writes() == [('delete', 'volume/csi/pgdata/delete', {'X-Nomad-CSI-Secrets': 'k=hush'})]
    assert deleted['diff']['after'] == 'volume pgdata: absent, data destroyed\n' and 'hush' not in repr(deleted)
    nomad.objects['volume/csi/pgdata'] = READ
    assert run_main(nomad_csi_volume, {'id': 'pgdata', 'state': 'absent'})['changed']
    assert nomad.writes()[-1] == ('delete', 'volume/csi/pgdata', {'force': 'false'})
    assert run_main(nomad_csi_volume, {'id': 'pgdata', 'state': 'absent'})['changed'] is False


# The claim part of GET /v1/volume/csi/t-del on Nomad v1.11.3 while a service job's allocation wrote to it
# (allocation stub trimmed to the fields read).
ALLOC = '40429978-2d4e-9b46-ead4-3553109645cb'
CLAIMED = dict(
    READ,
    ReadAllocs={},
    WriteAllocs={ALLOC: None},
    Allocations=[{'ID': ALLOC, 'JobID': 't-hold', 'ClientStatus': 'running', 'DesiredStatus': 'run'}],
)
STOPPING = dict(CLAIMED, Allocations=[dict(CLAIMED['Allocations'][0], ClientStatus='complete', DesiredStatus='stop')])


@pytest.mark.parametrize('check', [True, False])
def test_deleted_is_refused_while_a_running_allocation_claims_the_volume(run_main, nomad, check):
    """On the VM, Nomad had democratic-csi destroy such a dataset (the task read "Stale file handle") and then
    answered 500 "volume in use"."""
    nomad.objects['volume/csi/pgdata'] = CLAIMED
    refused = run_main(nomad_csi_volume, {'id': 'pgdata', 'state': 'deleted'}, check=check)
    assert refused['failed'] and nomad.writes() == []
    assert 'claimed by allocation 40429978 of job t-hold (running); stop those allocations and run' in refused['msg']
    assert [c[1] for c in nomad.calls] == ['volume/csi/pgdata']  # no wait for a running allocation


def test_deleted_waits_until_nomad_frees_the_claims_of_stopped_allocations(run_main, nomad, monkeypatch):
    monkeypatch.setattr('time.sleep', lambda seconds: None)
    reads = [STOPPING, STOPPING, dict(READ, WriteAllocs={}, Allocations=[])]
    nomad.handlers[('get', 'volume/csi/pgdata')] = lambda body, params: reads.pop(0) if reads else None
    nomad.objects['volume/csi/pgdata'] = READ
    assert run_main(nomad_csi_volume, {'id': 'pgdata', 'state': 'deleted'})['changed']
    assert [c[:2] for c in nomad.calls] == [('get', 'volume/csi/pgdata')] * 3 + [('delete', 'volume/csi/pgdata/delete')]


def test_deleted_is_refused_when_stopped_allocations_keep_their_claims(run_main, nomad, monkeypatch):
    monkeypatch.setattr(nomad_csi_volume, 'RELEASE_SECONDS', 0)
    nomad.objects['volume/csi/pgdata'] = dict(STOPPING, Allocations=[])  # the allocation garbage-collected
    refused = run_main(nomad_csi_volume, {'id': 'pgdata', 'state': 'deleted'})
    assert refused['failed'] and nomad.writes() == []
    assert (
        'allocation 40429978 of job ? (gone); stop those allocations (they stopped, but their claims were not '
        'freed within 120 s' in refused['msg']
    )


# Nomad's answer in CI when DeleteVolume reached democratic-csi while its node service still unstaged the
# volume for a workload stopped a moment before.
LOCKED = (
    'rpc error: controller delete volume: CSI.ControllerDeleteVolume: rpc error: code = Aborted desc = '
    'operation locked due to in progress operation(s): ["volume_id_pgdata"]'
)

# Nomad's answer, as democratic-csi words it (Internal, after its own 60 s of destroys), when the storage host's
# unmount of a volume whose workload had just stopped was refused (rehearsal of 2026-12-04).
BUSY = (
    'rpc error: controller delete volume: CSI.ControllerDeleteVolume: rpc error: code = Internal desc = Error: '
    "cannot unmount '/tank/nomad/csi/pgdata': pool or dataset is busy"
)


@pytest.mark.parametrize('answer', [LOCKED, BUSY], ids=['aborted', 'busy'])
def test_deleted_retries_while_the_plugin_answers_aborted_or_busy(run_main, nomad, monkeypatch, answer):
    nomad.objects['volume/csi/pgdata'] = READ
    monkeypatch.setattr('time.sleep', lambda seconds: None)
    answers = [NomadError('Nomad at fake refused DELETE (500): ' + answer, 500, answer)] * 2

    def refused_twice(body, params):
        if answers:
            raise answers.pop()

    nomad.handlers[('delete', 'volume/csi/pgdata/delete')] = refused_twice
    assert run_main(nomad_csi_volume, {'id': 'pgdata', 'state': 'deleted'})['changed']
    assert [c[1] for c in nomad.writes()] == ['volume/csi/pgdata/delete'] * 3


def test_a_create_is_not_retried_for_a_busy_dataset(run_main, nomad):
    """Busy is a passing answer to a delete only."""
    busy_create = BUSY.replace('ControllerDeleteVolume', 'ControllerCreateVolume')

    def refuse(body, params):
        raise NomadError('Nomad at fake refused PUT (500): ' + busy_create, 500, busy_create)

    nomad.handlers[('put', 'volume/csi/pgdata/create')] = refuse
    failed = run_main(nomad_csi_volume, ARGS)
    assert failed['failed'] and 'dataset is busy' in failed['msg']
    assert [c[1] for c in nomad.writes()] == ['volume/csi/pgdata/create']


# Nomad's answer in CI when the controller task restarted under a create.
RESTARTING = (
    '1 error occurred:\n\t* controller create volume: CSI.ControllerCreateVolume: rpc error: code = Unavailable '
    'desc = closing transport due to: connection error: desc = "error reading from server: EOF", received prior '
    'goaway: code: NO_ERROR'
)


def test_a_create_retries_while_the_controller_restarts(run_main, nomad, monkeypatch):
    monkeypatch.setattr('time.sleep', lambda seconds: None)
    answers = [NomadError('Nomad at fake refused PUT (500): ' + RESTARTING, 500, RESTARTING)]

    def restarting_once(body, params):
        if answers:
            raise answers.pop()
        nomad.objects['volume/csi/pgdata'] = READ

    nomad.handlers[('put', 'volume/csi/pgdata/create')] = restarting_once
    made = run_main(nomad_csi_volume, {'id': 'pgdata', 'plugin_id': 'zfs', 'capacity_min': '1G', 'capacity_max': '1G'})
    assert made['changed'] and [c[1] for c in nomad.writes()] == ['volume/csi/pgdata/create'] * 2, made


def test_other_plugin_errors_are_not_retried(run_main, nomad):
    nomad.objects['volume/csi/pgdata'] = READ
    denied = 'rpc error: code = PermissionDenied desc = cannot destroy'

    def refuse(body, params):
        raise NomadError('Nomad at fake refused DELETE (500): ' + denied, 500, denied)

    nomad.handlers[('delete', 'volume/csi/pgdata/delete')] = refuse
    failed = run_main(nomad_csi_volume, {'id': 'pgdata', 'state': 'deleted'})
    assert failed['failed'] and 'PermissionDenied' in failed['msg'] and len(nomad.writes()) == 1


def test_a_shrink_is_refused_and_nothing_is_written(run_main, nomad):
    nomad.objects['volume/csi/pgdata'] = dict(READ, Capacity=2 * GIB, RequestedCapacityMax=2 * GIB)
    failed = run_main(nomad_csi_volume, ARGS)
    assert (
        failed['failed']
        and 'capacity_max (1073741824 bytes) is below the 2147483648 bytes volume pgdata has' in failed['msg']
        and nomad.writes() == []
    )


def test_a_snapshot_source_is_sent_on_create_and_fixed_afterwards(run_main, nomad):
    made = run_main(nomad_csi_volume, dict(ARGS, snapshot_id='pgdata-src@snap1'))
    assert made['changed'] and nomad.writes()[0][2]['Volumes'][0]['SnapshotID'] == 'pgdata-src@snap1'
    nomad.objects['volume/csi/pgdata'] = dict(READ, SnapshotID='pgdata-src@snap1')
    assert run_main(nomad_csi_volume, dict(ARGS, snapshot_id='pgdata-src@snap1'))['changed'] is False
    other = run_main(nomad_csi_volume, dict(ARGS, snapshot_id='pgdata-src@snap2'))
    assert other['failed'] and 'snapshot_id applies when a volume is created' in other['msg']
    assert len(nomad.writes()) == 1


def test_the_retry_gives_up_after_its_window_with_nomads_answer(run_main, nomad, monkeypatch):
    monkeypatch.setattr(_csi_retry, 'RETRY_SECONDS', 0)

    def refuse(body, params):
        raise NomadError(
            'Nomad at fake refused PUT volume/csi/pgdata/create (500): plugin has no controller',
            500,
            'plugin has no controller',
        )

    nomad.handlers[('put', 'volume/csi/pgdata/create')] = refuse
    failed = run_main(nomad_csi_volume, ARGS)
    assert failed['failed'] and failed['msg'].endswith('(500): plugin has no controller')
    assert len(nomad.writes()) == 1


NODE_KEY = 'org.democratic-csi.topology/node'
ON_VM = {'required': [{NODE_KEY: 'nzc-vm'}]}


def test_a_topology_is_sent_as_nomads_request_and_fixed_afterwards(run_main, nomad):
    made = run_main(nomad_csi_volume, dict(ARGS, topology=ON_VM))
    sent = nomad.writes()[0][2]['Volumes'][0]['RequestedTopologies']
    assert made['changed'] and sent == {'Required': [{'Segments': {NODE_KEY: 'nzc-vm'}}], 'Preferred': []}
    nomad.objects['volume/csi/pgdata'] = dict(
        READ, RequestedTopologies=dict(sent, Preferred=None), Topologies=[{'Segments': {NODE_KEY: 'nzc-vm'}}]
    )
    again = run_main(nomad_csi_volume, dict(ARGS, topology=ON_VM))
    assert again['changed'] is False and again['volume']['topologies'] == [{NODE_KEY: 'nzc-vm'}]
    moved = run_main(nomad_csi_volume, dict(ARGS, topology={'required': [{NODE_KEY: 'other'}]}))
    assert moved['failed'] and 'topology applies when a volume is created or registered' in moved['msg']
    assert len(nomad.writes()) == 1


def test_an_update_without_topology_keeps_the_volumes_own(run_main, nomad):
    """Nomad refuses an update whose topology request differs from a volume with topologies, even a missing one."""
    own = {'Required': [{'Segments': {NODE_KEY: 'nzc-vm'}}], 'Preferred': None}
    nomad.objects['volume/csi/pgdata'] = dict(READ, Capacity=GIB, RequestedTopologies=own)
    grown = run_main(nomad_csi_volume, dict(ARGS, capacity_min='2G', capacity_max='2G'))
    assert len(nomad.writes()) == 1
    body = nomad.writes()[0][2]
    assert grown['changed'] and body['Volumes'][0]['RequestedTopologies'] == own


def test_no_topology_sends_none_rather_than_empty_lists(run_main, nomad):
    run_main(nomad_csi_volume, dict(ARGS, topology={'required': [], 'preferred': []}))
    assert nomad.writes()[0][2]['Volumes'][0]['RequestedTopologies'] is None


@pytest.mark.parametrize('segments', [{}, {NODE_KEY: ''}, {NODE_KEY: 3}])
def test_an_empty_or_non_string_segment_is_refused_before_any_call(run_main, nomad, segments):
    failed = run_main(nomad_csi_volume, dict(ARGS, topology={'preferred': [segments]}))
    assert failed['failed'] and 'topology.preferred[0] is' in failed['msg'] and nomad.calls == []
