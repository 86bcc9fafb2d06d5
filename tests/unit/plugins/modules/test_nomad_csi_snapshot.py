"""nomad_csi_snapshot and nomad_csi_snapshot_info: main() against a fake Nomad that keeps a plugin's snapshot list."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils import _csi_retry, _poll
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import NomadError
from ansible_collections.nomad_zfs.csi.plugins.modules import nomad_csi_snapshot, nomad_csi_snapshot_info
from ansible_collections.nomad_zfs.csi.tests.unit.plugins.modules.fake_nomad import FakeNomad

VOLUME = {'ID': 'pgdata', 'PluginID': 'zfs', 'ExternalID': 'pgdata'}
# Shaped as Nomad v1.11.3 lists democratic-csi's snapshots: no names, no Nomad volume ID.
LISTED = {
    'ID': 'cache@nightly',
    'ExternalSourceVolumeID': 'cache',
    'SizeBytes': 65536,
    'CreateTime': 1795425600,
    'IsReady': True,
    'SourceVolumeID': '',
    'PluginID': 'zfs',
    'Name': '',
}
ARGS = {'plugin_id': 'zfs', 'source_volume_id': 'pgdata', 'name': 'before-upgrade'}


@pytest.fixture
def nomad(monkeypatch):
    fake = FakeNomad(**{'volume/csi/pgdata': VOLUME})
    fake.snapshots = [dict(LISTED)]

    def listing(body, params):
        # Two pages, to prove the module follows NextToken.
        if params.get('next_token') == 'p2':
            return {'Snapshots': fake.snapshots[1:], 'NextToken': ''}
        return {'Snapshots': fake.snapshots[:1], 'NextToken': 'p2' if len(fake.snapshots) > 1 else ''}

    def take(body, params):
        want = body['Snapshots'][0]
        snap = dict(LISTED, ID='%s@%s' % (want['SourceVolumeID'], want['Name']), SourceVolumeID='pgdata')
        snap['ExternalSourceVolumeID'] = want['SourceVolumeID']
        fake.snapshots.append(snap)
        return {'Snapshots': [snap]}

    def delete(headers, params):
        fake.deleted_with = params
        fake.snapshots = [s for s in fake.snapshots if s['ID'] != params['snapshot_id']]

    fake.handlers.update(
        {
            ('get', 'volumes/snapshot'): listing,
            ('put', 'volumes/snapshot'): take,
            ('delete', 'volumes/snapshot'): delete,
        }
    )
    return fake.install(monkeypatch)


def test_check_mode_takes_nothing_then_take_then_nothing_to_do(run_main, nomad):
    checked = run_main(nomad_csi_snapshot, ARGS, check=True, diff=True)
    assert checked['changed'] and 'snapshot' not in checked and nomad.writes() == []
    assert checked['diff']['after'] == 'snapshot before-upgrade of volume pgdata: present\n'
    taken = run_main(nomad_csi_snapshot, dict(ARGS, secrets={'k': 'hush'}))
    assert taken['changed'] and taken['snapshot']['id'] == 'pgdata@before-upgrade', taken
    [(method, path, body)] = nomad.writes()
    assert (method, path) == ('put', 'volumes/snapshot') and body['Snapshots'][0]['Secrets'] == {'k': 'hush'}
    assert 'hush' not in repr(taken)
    again = run_main(nomad_csi_snapshot, ARGS)
    assert again['changed'] is False and again['snapshot']['name'] == 'before-upgrade' and len(nomad.writes()) == 1


def test_a_rerun_costs_the_volume_read_and_the_listed_pages(run_main, nomad):
    run_main(nomad_csi_snapshot, ARGS)
    nomad.calls[:] = []
    run_main(nomad_csi_snapshot, ARGS)
    assert [c[:2] for c in nomad.calls] == [('get', 'volume/csi/pgdata')] + [('get', 'volumes/snapshot')] * 2


def test_absent_deletes_by_name_or_id_and_sends_secrets_only_in_the_header(run_main, nomad):
    run_main(nomad_csi_snapshot, ARGS)
    checked = run_main(nomad_csi_snapshot, dict(ARGS, state='absent'), check=True)
    assert checked['changed'] and len(nomad.writes()) == 1
    gone = run_main(nomad_csi_snapshot, dict(ARGS, state='absent', secrets={'k': 'hush'}))
    assert gone['changed'] and 'snapshot' not in gone
    assert nomad.writes()[-1] == ('delete', 'volumes/snapshot', {'X-Nomad-CSI-Secrets': 'k=hush'})
    assert nomad.deleted_with == {'plugin_id': 'zfs', 'snapshot_id': 'pgdata@before-upgrade'}
    assert nomad.headers[-1] == {'X-Nomad-CSI-Secrets': 'k=hush'}  # the list's
    by_id = run_main(nomad_csi_snapshot, {'plugin_id': 'zfs', 'id': 'cache@nightly', 'state': 'absent'})
    assert by_id['changed'] and nomad.snapshots == []


def test_deleting_what_the_plugin_does_not_list_sends_nothing(run_main, nomad):
    """democratic-csi answers DeleteSnapshot of an unknown id with zfs destroy of its snapshots parent."""
    gone = run_main(nomad_csi_snapshot, {'plugin_id': 'zfs', 'id': 'no-such@snap', 'state': 'absent'})
    assert gone['changed'] is False and nomad.writes() == []


@pytest.mark.parametrize(
    'args, message',
    [
        (dict(ARGS, name='bad name'), "name 'bad name': use up to 128 letters"),
        (dict(ARGS, id='pgdata@x'), 'id is for state=absent'),
        ({'plugin_id': 'zfs', 'name': 'x'}, 'source_volume_id and name are required'),
        (dict(ARGS, id='pgdata@x', state='absent'), 'give id, or source_volume_id and name, not both'),
    ],
)
def test_bad_input_fails_before_any_call(run_main, nomad, args, message):
    failed = run_main(nomad_csi_snapshot, args)
    assert failed['failed'] and message in failed['msg'], failed
    assert nomad.calls == []


def test_a_missing_volume_or_another_plugin_is_refused_without_a_write(run_main, nomad):
    missing = run_main(nomad_csi_snapshot, dict(ARGS, source_volume_id='nope'))
    assert missing['failed'] and 'source_volume_id nope: no such CSI volume in namespace default' in missing['msg']
    other = run_main(nomad_csi_snapshot, dict(ARGS, plugin_id='zfs-local'))
    assert other['failed'] and 'belongs to plugin zfs, not plugin_id zfs-local' in other['msg']
    assert nomad.writes() == []


def test_info_filters_by_volume_and_name(run_main, nomad):
    run_main(nomad_csi_snapshot, ARGS)
    everything = run_main(nomad_csi_snapshot_info, {'plugin_id': 'zfs'})['snapshots']
    assert [s['id'] for s in everything] == ['cache@nightly', 'pgdata@before-upgrade']
    assert everything[0] == dict(
        id='cache@nightly',
        name='nightly',
        plugin_id='zfs',
        source_volume_id='',
        external_source_volume_id='cache',
        size_bytes=65536,
        create_time=1795425600,
        is_ready=True,
    )
    ours = run_main(nomad_csi_snapshot_info, {'plugin_id': 'zfs', 'source_volume_id': 'pgdata'})['snapshots']
    assert [s['id'] for s in ours] == ['pgdata@before-upgrade']
    # A volume Nomad forgot is matched by its ID as the storage ID.
    assert [
        s['id']
        for s in run_main(nomad_csi_snapshot_info, {'plugin_id': 'zfs', 'source_volume_id': 'cache'})['snapshots']
    ] == ['cache@nightly']
    assert run_main(nomad_csi_snapshot_info, {'plugin_id': 'zfs', 'name': 'weekly'})['snapshots'] == []


def test_a_snapshot_write_retries_while_the_controller_is_unavailable(run_main, nomad, monkeypatch):
    monkeypatch.setattr(_csi_retry, 'RETRY_SECONDS', 5)
    monkeypatch.setattr(_poll.time, 'sleep', lambda seconds: None)
    take = nomad.handlers[('put', 'volumes/snapshot')]
    answers = [NomadError('Nomad at fake refused (500): rpc error: code = Unavailable', 500, 'code = Unavailable')]

    def flaky(body, params):
        if answers:
            raise answers.pop()
        return take(body, params)

    nomad.handlers[('put', 'volumes/snapshot')] = flaky
    taken = run_main(nomad_csi_snapshot, ARGS)
    assert taken['changed'] and taken['snapshot']['id'] == 'pgdata@before-upgrade', taken
    assert [c[1] for c in nomad.writes()] == ['volumes/snapshot', 'volumes/snapshot']
