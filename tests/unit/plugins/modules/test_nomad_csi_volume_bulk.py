"""nomad_csi_volume's volumes and spec_file forms: one list call, reads only of listed volumes that stay, writes only
of what differs, and every item checked before Nomad is called."""

import json
from pathlib import Path

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import NomadError
from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_csi_volume
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

GIB = 1024**3
GOLDEN = Path(__file__).parents[3] / 'pack' / 'golden'
IDS = ['web-0', 'web-1', 'web-2']
ITEMS = [{'id': i, 'capacity_min': '1G', 'capacity_max': '1G'} for i in IDS]
# The zfs_csi pack's volumes.json for those three volumes, as `nomad-pack render` wrote it (one shown in full).
SPEC = {
    'Volumes': [
        {
            'ID': i,
            'Name': i,
            'PluginID': 'zfs',
            'RequestedCapacityMin': GIB,
            'RequestedCapacityMax': GIB,
            'RequestedCapabilities': [{'AccessMode': 'single-node-writer', 'AttachmentMode': 'file-system'}],
            'MountOptions': {'FSType': '', 'MountFlags': []},
            'Parameters': {},
            'Context': {},
        }
        for i in IDS
    ]
}


def read_of(body):
    """What Nomad answers to a read of a volume created with this body (secrets dropped, flags redacted)."""
    vol = dict(body, ExternalID=body['ID'], Capacity=body['RequestedCapacityMax'] or GIB, Secrets=None)
    vol['MountOptions'] = dict(
        body['MountOptions'], MountFlags=['[REDACTED]'] if body['MountOptions']['MountFlags'] else []
    )
    return vol


@pytest.fixture
def nomad(monkeypatch):
    fake = FakeNomad().install(monkeypatch)
    fake.handlers[('get', 'volumes')] = lambda body, params: [
        {'ID': path.split('/')[-1], 'PluginID': 'zfs'} for path in sorted(fake.objects)
    ]
    for vid in IDS + ['other']:

        def create(body, params, vid=vid):
            fake.objects['volume/csi/' + vid] = read_of(body['Volumes'][0])

        def delete(headers, params, vid=vid):
            fake.objects.pop('volume/csi/' + vid)

        fake.handlers[('put', 'volume/csi/%s/create' % vid)] = create
        fake.handlers[('delete', 'volume/csi/%s/delete' % vid)] = delete
        fake.handlers[('delete', 'volume/csi/%s' % vid)] = delete
    return fake


def paths(calls):
    return [c[:2] for c in calls]


def test_create_many_then_a_rerun_is_one_list_and_reads_and_no_write(run_main, nomad):
    checked = run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': ITEMS}, check=True, diff=True)
    assert checked['changed'] and nomad.writes() == [] and sorted(checked['diff']['after']) == IDS
    made = run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': ITEMS})
    assert made['changed'] and [v['id'] for v in made['volumes']] == IDS
    assert all(v['changed'] and v['volume']['capacity'] == GIB for v in made['volumes'])
    assert paths(nomad.writes()) == [('put', 'volume/csi/%s/create' % i) for i in IDS]
    nomad.calls[:] = []
    again = run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': ITEMS})
    assert again['changed'] is False and not any(v['changed'] for v in again['volumes'])
    assert paths(nomad.calls) == [('get', 'volumes')] + [('get', 'volume/csi/' + i) for i in IDS]


def test_only_what_differs_is_written_and_a_volume_to_delete_is_read_for_its_claims(run_main, nomad):
    run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': ITEMS})
    nomad.calls[:] = []
    wanted = [ITEMS[0], dict(ITEMS[1], capacity_min='2G', capacity_max='2G'), {'id': 'web-2', 'state': 'deleted'}]
    ran = run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': wanted}, diff=True)
    assert [v['changed'] for v in ran['volumes']] == [False, True, True]
    assert ran['volumes'][1]['changed_fields'] == ['capacity_max', 'capacity_min']
    assert sorted(ran['diff']['after']) == ['web-1', 'web-2']
    assert paths(nomad.calls) == [
        ('get', 'volumes'),
        ('get', 'volume/csi/web-0'),
        ('get', 'volume/csi/web-1'),
        ('get', 'volume/csi/web-2'),
        ('put', 'volume/csi/web-1/create'),
        ('get', 'volume/csi/web-1'),  # the volume as it is after the write, for the result
        ('delete', 'volume/csi/web-2/delete'),
    ]
    assert 'volume/csi/web-2' not in nomad.objects


def test_a_claimed_volume_to_delete_fails_the_task_before_any_write(run_main, nomad):
    run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': ITEMS})
    alloc = {'ID': 'a1b2c3d4-0000', 'JobID': 'web', 'ClientStatus': 'running'}
    nomad.objects['volume/csi/web-2'].update(WriteAllocs={alloc['ID']: None}, Allocations=[alloc])
    nomad.calls[:] = []
    wanted = [dict(ITEMS[0], capacity_min='2G', capacity_max='2G'), {'id': 'web-2', 'state': 'deleted'}]
    ran = run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': wanted})
    assert ran['failed'] and 'volume web-2 is claimed by allocation a1b2c3d4 of job web (running)' in ran['msg']
    assert nomad.writes() == []


@pytest.mark.parametrize(
    'items, message',
    [
        (ITEMS + [{'id': 'web-3', 'capcity_min': '1G'}], 'capcity_min'),
        (ITEMS + [{'id': 'web-3', 'capacity_min': '12XB'}], "volumes[3].capacity_min: '12XB' is not a size"),
        (ITEMS + [dict(ITEMS[0])], 'volumes[3].id web-0 is given twice'),
        ([{'id': 'web[0]', 'capacity_min': '1G'}], "volumes[0].id 'web[0]' is not a Nomad volume ID"),
    ],
)
def test_a_bad_item_fails_before_any_call(run_main, nomad, items, message):
    failed = run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': items})
    assert failed['failed'] and message in failed['msg'], failed
    assert nomad.calls == []


def test_single_volume_options_beside_volumes_are_refused(run_main, nomad):
    failed = run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': ITEMS, 'capacity_min': '1G'})
    assert failed['failed'] and 'capacity_min is an option of one volume' in failed['msg'] and nomad.calls == []


def test_the_packs_rendered_volumes_json_as_it_is(run_main, nomad):
    """The file nomad-pack v0.4.2 rendered from packs/zfs_csi/examples/zfs-generic-nfs.hcl (the golden copy)."""
    spec = GOLDEN / 'example-zfs-generic-nfs' / 'volumes.json'
    checked = run_main(nomad_csi_volume, {'spec_file': str(spec)}, check=True, diff=True)
    assert [v['id'] for v in checked['volumes']] == ['pg-data', 'pg-restored'], checked
    pg = checked['diff']['after']['pg-data']
    assert (pg['capacity_min'], pg['capacity_max'], pg['plugin_id']) == (GIB, 10 * GIB, 'zfs')
    assert pg['capabilities'] == [['single-node-writer', 'file-system']] and pg['fs_type'] == 'nfs'
    assert nomad.writes() == []


def test_the_packs_topology_reaches_nomad(run_main, nomad):
    """The golden volumes.json of packs/zfs_csi/examples/zfs-local-dataset.hcl: a registered volume on one node."""
    spec = GOLDEN / 'example-zfs-local-dataset' / 'volumes.json'
    nomad.handlers[('put', 'volume/csi/scratch')] = lambda body, params: nomad.objects.update(
        {'volume/csi/scratch': dict(body['Volumes'][0], Secrets=None)}
    )
    made = run_main(nomad_csi_volume, {'spec_file': str(spec)})
    [(method, path, body)] = nomad.writes()
    assert made['changed'] and (method, path) == ('put', 'volume/csi/scratch')
    assert body['Volumes'][0]['RequestedTopologies'] == {
        'Required': [{'Segments': {'org.democratic-csi.topology/node': 'storage-1'}}],
        'Preferred': [],
    }


def test_nomads_api_form_as_a_spec_file_and_then_nothing_to_do(run_main, nomad, tmp_path):
    spec = tmp_path / 'volumes.json'
    spec.write_text(json.dumps(SPEC))
    made = run_main(nomad_csi_volume, {'spec_file': str(spec)})
    assert made['changed'] and [v['id'] for v in made['volumes']] == IDS, made
    assert run_main(nomad_csi_volume, {'spec_file': str(spec)})['changed'] is False
    # The same volumes as items compare equal to what the file made.
    assert run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': ITEMS})['changed'] is False


@pytest.mark.parametrize(
    'content, message',
    [
        ('{"Volumes": [', 'spec_file'),
        ('{"Volume": []}', 'no "volumes" (or Nomad\'s "Volumes") list at the top'),
        (
            '{"plugin_id": "zfs", "volumes": [{"id": "web-0", "capacity_min": "12XB"}]}',
            "volumes[0].capacity_min: '12XB' is not a size",
        ),
        ('{"volumes": [{"id": "web-0", "colour": "red"}]}', 'volumes[0].colour. Supported parameters include'),
        (json.dumps({'Volumes': [dict(SPEC['Volumes'][0], Namespace='prod')]}), 'for namespace prod, not default'),
        (
            json.dumps({'Volumes': [dict(SPEC['Volumes'][0], RequestedCapabilities=[{'AccessMode': 'x'}])]}),
            'volumes[0].',
        ),
    ],
)
def test_a_bad_spec_file_changes_nothing(run_main, nomad, tmp_path, content, message):
    spec = tmp_path / 'volumes.json'
    spec.write_text(content)
    failed = run_main(nomad_csi_volume, {'spec_file': str(spec)})
    assert failed['failed'] and message in failed['msg'] and str(spec) in failed['msg'], failed
    assert nomad.calls == []


def test_secrets_of_items_are_masked_in_the_result_and_sent_to_nomad(run_main, nomad):
    items = [
        dict(ITEMS[0], secrets={'token': 'hush-4242'}),
        dict(ITEMS[1], capacity_min='12XB', secrets={'k': 'sh-77'}),
    ]
    failed = run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': items})
    assert failed['failed'] and 'hush-4242' not in repr(failed) and 'sh-77' not in repr(failed)
    made = run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': items[:1]}, diff=True)
    assert made['changed'] and 'hush-4242' not in repr(made)
    assert nomad.writes()[0][2]['Volumes'][0]['Secrets'] == {'token': 'hush-4242'}


def test_a_failed_write_after_others_reports_them_written_and_changed(run_main, nomad):
    def refuse(body, params):
        raise NomadError('Nomad at fake refused PUT volume/csi/web-2/create (500): quota exceeded', 500, 'quota')

    nomad.handlers[('put', 'volume/csi/web-2/create')] = refuse
    failed = run_main(nomad_csi_volume, {'plugin_id': 'zfs', 'volumes': ITEMS})
    assert failed['failed'] and failed['changed'] is True and 'quota exceeded' in failed['msg'], failed
    assert failed['written'] == ['PUT volume/csi/web-0/create', 'PUT volume/csi/web-1/create']
