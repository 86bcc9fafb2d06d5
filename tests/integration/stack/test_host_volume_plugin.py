"""ZFS without CSI: the zfs-dataset host volume plugin that site.yml installed in the VM, driven by Nomad itself
through nomad_host_volume, on real OpenZFS."""

import json
import re
import shlex

import pytest
from stack_layout import HOST_VOLUME_CONF, HOST_VOLUMES, STACK, dataset, host_volume_conf
from stack_layout import HOST_VOLUME_PLUGIN as PLUGIN

from zfsvm_client import VERSION, changed

MARK = 'nomad-zfs-csi:host-volume-id'
# A snapshot as sanoid names it on the zfs_replication role's schedule.
SCHEDULED = '@autosnap_2026-11-25_09:00:00_hourly'


def props(vm, name, *names):
    out = vm.zfs('get', '-Hp', '-o', 'property,value', ','.join(names), name).stdout
    return dict(line.split('\t') for line in out.splitlines())


def test_site_installed_the_plugin_and_the_node_reports_it(stack):
    [node] = stack.get('/v1/nodes')
    attributes = stack.get('/v1/node/' + node['ID'])['Attributes']
    assert attributes['plugins.host_volume.zfs-dataset.version'] == VERSION
    assert stack.vm.sh('stat -c %a:%U ' + PLUGIN).stdout.strip() == '755:root'
    assert stack.vm.sh('cat ' + HOST_VOLUME_CONF).stdout == host_volume_conf()
    assert props(stack.vm, HOST_VOLUMES, 'setuid', 'devices') == {'setuid': 'off', 'devices': 'off'}


def test_a_volume_is_a_quotad_marked_dataset_that_a_job_writes_into(stack, host_volume):
    made = host_volume('t-hv', parameters={'compression': 'zstd', 'recordsize': '16K'})
    assert made['changed'] and made['volume']['state'] == 'ready', made
    assert made['volume']['host_path'] == '/' + dataset('t-hv')
    assert made['volume']['capacity_bytes'] == 64 << 20
    got = props(stack.vm, dataset('t-hv'), 'refquota', 'quota', 'compression', 'recordsize', MARK, 'mounted')
    assert got == {
        'refquota': str(64 << 20),
        'quota': str(128 << 20),
        'compression': 'zstd',
        'recordsize': '16384',
        MARK: made['volume']['id'],
        'mounted': 'yes',
    }

    written = stack.workload('t-hv', 'write', volume_type='host')
    assert stack.vm.sh('cat /%s/proof.txt' % dataset('t-hv')).stdout.strip() == written
    assert stack.workload('t-hv', 'read', volume_type='host') == written

    again = host_volume('t-hv', parameters={'compression': 'zstd', 'recordsize': '16K'})
    assert again['changed'] is False and again['volume'] == made['volume']


def test_a_raised_capacity_raises_refquota_and_keeps_the_data(stack, host_volume):
    host_volume('t-hv-grow')
    stack.vm.sh('echo kept > /%s/kept.txt' % dataset('t-hv-grow'))
    grown = host_volume('t-hv-grow', capacity_max='128M')
    assert grown['changed'] and grown['volume']['capacity_bytes'] == 128 << 20
    assert props(stack.vm, dataset('t-hv-grow'), 'refquota', 'quota') == {
        'refquota': str(128 << 20),
        'quota': str(256 << 20),
    }
    assert stack.vm.sh('cat /%s/kept.txt' % dataset('t-hv-grow')).stdout == 'kept\n'
    shrink = host_volume('t-hv-grow', capacity_max='64M')
    assert shrink.failed and 'a volume cannot shrink' in shrink['msg']


def test_a_workload_cannot_grow_its_volume_past_twice_its_capacity_around_snapshots(stack, host_volume):
    """refquota leaves snapshots out: on the VM a workload that wrote 7 MiB, deleted it and wrote again twice,
    around scheduled snapshots, made an 8 MiB volume hold 22 MiB. The quota (200 % of the capacity by default)
    counts the snapshots: the third write of 6 MiB fails, and the volume holds at most 16 MiB (and what one
    transaction in flight adds), where it would hold 18."""
    host_volume('t-hv-snap', capacity_max='8M')
    name, path = dataset('t-hv-snap'), '/' + dataset('t-hv-snap')
    # Writes of 1 MiB: near its quota zfs makes each write wait for a transaction group, and 128 KiB writes made
    # this test take two minutes.
    rewrite = 'rm -f {p}/data && dd if=/dev/urandom of={p}/data bs=1M count=6 status=none && sync'
    rounds = []
    for n in (1, 2, 3):
        wrote = stack.vm.sh(rewrite.format(p=path) + ' && zfs snapshot %s@autosnap_%d' % (name, n), check=False)
        rounds.append((wrote.returncode, wrote.stderr))
    assert [rc for rc, _err in rounds] == [0, 0, 1], rounds
    assert 'Disk quota exceeded' in rounds[2][1], rounds
    assert int(props(stack.vm, name, 'used')['used']) <= 17 << 20


@pytest.mark.parametrize(
    'args, message',
    [
        ({'parameters': {'mountpoint': '/etc'}}, "parameter 'mountpoint' is not allowed"),
        ({'name': 't-hv bad'}, "volume name 't-hv bad' cannot name a dataset"),
        ({'capacity_max': None}, 'set capacity_min or capacity_max'),
    ],
)
def test_the_plugin_refuses_bad_requests_with_its_reason_and_makes_nothing(stack, host_volume, args, message):
    before = stack.vm.zfs('list', '-H', '-r', '-o', 'name', HOST_VOLUMES).stdout
    failed = host_volume(**dict({'name': 't-hv-bad'}, **args))
    assert failed.failed and message in failed['msg'], failed
    assert stack.vm.zfs('list', '-H', '-r', '-o', 'name', HOST_VOLUMES).stdout == before
    assert [v['Name'] for v in stack.get('/v1/volumes?type=host')].count(args.get('name', 't-hv-bad')) == 0


def test_a_dataset_the_plugin_did_not_make_is_neither_taken_nor_destroyed(stack, host_volume):
    stack.vm.zfs('create', '-p', dataset('t-hv-foreign'))
    try:
        failed = host_volume('t-hv-foreign')
        assert failed.failed and 'exists with no nomad-zfs-csi mark' in failed['msg'], failed
        assert stack.vm.zfs('list', dataset('t-hv-foreign'), check=False).returncode == 0
    finally:
        stack.vm.zfs('destroy', dataset('t-hv-foreign'))


def test_delete_refuses_a_volume_with_snapshots_until_the_volume_says_to_take_them(stack, host_volume):
    made = host_volume('t-hv-snap')
    stack.vm.zfs('snapshot', dataset('t-hv-snap') + '@before')
    stack.vm.zfs('snapshot', dataset('t-hv-snap') + SCHEDULED)  # the zfs_replication role's, which is not counted
    refused = stack.module('nomad_host_volume', {'name': 't-hv-snap', 'state': 'deleted'})
    assert refused.failed and 'has 1 snapshot(s) (%s@before)' % dataset('t-hv-snap') in refused['msg'], refused
    assert stack.vm.zfs('list', '-t', 'all', dataset('t-hv-snap') + '@before', check=False).returncode == 0
    assert stack.get('/v1/volume/host/' + made['volume']['id'])['ID'] == made['volume']['id']

    allowed = host_volume('t-hv-snap', parameters={'delete_snapshots': 'true'})
    assert allowed['changed_fields'] == ['parameters']
    gone = stack.module('nomad_host_volume', {'name': 't-hv-snap', 'state': 'deleted'})
    assert gone['changed'], gone
    assert stack.vm.zfs('list', '-t', 'all', dataset('t-hv-snap'), check=False).returncode == 1


def test_delete_takes_the_schedules_snapshots_with_the_volume(stack, host_volume):
    host_volume('t-hv-sched')
    stack.vm.zfs('snapshot', dataset('t-hv-sched') + SCHEDULED)
    gone = stack.module('nomad_host_volume', {'name': 't-hv-sched', 'state': 'deleted'})
    assert gone['changed'], gone
    assert stack.vm.zfs('list', '-t', 'all', dataset('t-hv-sched'), check=False).returncode == 1


def test_a_repeated_create_as_nomad_sends_at_agent_start_changes_nothing(stack, host_volume):
    """Nomad re-runs create for each volume when the agent starts: the same call, directly, with no PATH."""
    made = host_volume('t-hv-again')
    env = {
        'DHV_OPERATION': 'create',
        'DHV_NAMESPACE': 'default',
        'DHV_VOLUME_NAME': 't-hv-again',
        'DHV_VOLUME_ID': made['volume']['id'],
        'DHV_CAPACITY_MIN_BYTES': '0',
        'DHV_CAPACITY_MAX_BYTES': str(64 << 20),
        'DHV_PARAMETERS': '{}',
    }
    command = 'env -i %s %s create' % (' '.join(shlex.quote('%s=%s' % kv) for kv in env.items()), PLUGIN)
    written = props(stack.vm, dataset('t-hv-again'), 'written', 'creation')
    answer = json.loads(stack.vm.sh(command).stdout)
    assert answer == {'path': made['volume']['host_path'], 'bytes': 64 << 20}
    assert props(stack.vm, dataset('t-hv-again'), 'written', 'creation') == written
    fingerprint = stack.vm.sh('env -i %s fingerprint' % PLUGIN).stdout
    assert json.loads(fingerprint) == {'version': VERSION}


def test_each_namespace_has_its_own_dataset_under_the_parent(stack):
    assert stack.module('nomad_namespace', {'name': 't-hv-ns'})['rc'] == 0
    args = {'name': 't-hv-in-ns', 'namespace': 't-hv-ns', 'capacity_max': '32M'}
    try:
        made = stack.module('nomad_host_volume', args)
        assert made['changed'] and made['volume']['host_path'] == '/' + dataset('t-hv-in-ns', 't-hv-ns'), made
        assert props(stack.vm, dataset('t-hv-in-ns', 't-hv-ns'), MARK)[MARK] == made['volume']['id']
    finally:
        stack.module('nomad_host_volume', dict(args, state='deleted'))
        stack.module('nomad_namespace', {'name': 't-hv-ns', 'state': 'absent'})
    assert stack.vm.zfs('list', dataset('t-hv-in-ns', 't-hv-ns'), check=False).returncode == 1


def test_the_parent_changes_only_with_no_volume_left_behind_and_is_made_with_its_ancestors(stack, vm, host_volume):
    """A new parent while a volume is under the old one is refused, since the agent would make the volume anew,
    empty, under the new one. With none left, host_volume_plugin_create_parent makes tank/t-deep/a/volumes although
    tank/t-deep does not exist (zfs create -p); the role is then run again with the stack's parent, which the
    plugin's configuration names once more."""
    deep = 't-deep/a/volumes'
    playbook = STACK / 'host_volume_plugin_only.yml'
    # site.yml's nomad_access play hands the role this token; alone, it gets it here.
    token = {'host_volume_plugin_nomad_token': stack.secret('host-volume-operator')}
    assert host_volume('t-hv-stay')['changed']
    kept = stack.playbook(playbook, extra=dict(token, host_volume_plugin_parent='%s/%s' % (vm.pool, deep)))
    assert kept.returncode != 0 and 'holds the volumes %s. At its next start' % dataset('t-hv-stay') in kept.stdout
    assert re.search(r'^zfsvm\s+: ok=\d+\s+changed=0\s', kept.stdout, re.M), kept.stdout[-2000:]
    assert vm.sh('cat ' + HOST_VOLUME_CONF).stdout == host_volume_conf()
    assert stack.module('nomad_host_volume', {'name': 't-hv-stay', 'state': 'deleted'})['rc'] == 0
    try:
        made = stack.playbook(playbook, extra=dict(token, host_volume_plugin_parent='%s/%s' % (vm.pool, deep)))
        assert changed(made)['zfsvm'] > 0
        assert props(vm, '%s/%s' % (vm.pool, deep), 'setuid', 'devices') == {'setuid': 'off', 'devices': 'off'}
        assert vm.sh('cat ' + HOST_VOLUME_CONF).stdout == host_volume_conf('%s/%s' % (vm.pool, deep))
    finally:
        restored = stack.playbook(playbook, extra=token)
        vm.zfs('destroy', '-r', '%s/t-deep' % vm.pool, check=False)
    assert changed(restored)['zfsvm'] > 0
    assert vm.sh('cat ' + HOST_VOLUME_CONF).stdout == host_volume_conf()
