"""Two faults an operator meets, one after the other, and site.yml recovering from both. The plugin's SSH key
replaced by one the storage host never authorised: the controller's template re-renders, democratic-csi exits on its
first SSH connection, and the health check names the reason. Then the Nomad agent killed: check mode on the fresh
Nomad predicts and writes nothing, and a re-run converges without clean-up (the right key stored again, the plugin
healthy). That a run after it changes nothing, tokens included, Molecule's csi_plugin scenario proves on the same
kind of stack: site.yml on a fresh agent beside a converged storage host, then its idempotence step."""

import subprocess

from conftest import NOMAD_DEV, PARENT
from zfsvm_client import changed, wait_until

SECRETS = 'nomad/jobs/zfs-controller'  # the controller job's own variable, where the csi_plugin role stores the key


def test_a_wrong_key_is_named_then_site_recovers_from_a_killed_agent(stack, vm):
    key = vm.workdir / 'id_wrong'
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', str(key)], check=True)
    stack.module('nomad_variable', {'path': SECRETS, 'items': {'ssh_private_key': key.read_text()}})
    # Under emulation the restarted task may take a minute to log it, and until then the newest error line is an
    # older one.
    check = {'plugin_id': 'zfs', 'jobs': ['zfs-controller', 'zfs-node']}
    refused = wait_until(
        lambda: stack.module('nomad_csi_plugin_info', dict(check, wait_timeout=20)),
        lambda r: r['rc'] != 0 and 'All configured authentication methods failed' in r['msg'],
        timeout=300,
        why=lambda r: 'no SSH reason: %s' % r.get('msg', r),
        pause=5,
    )
    assert 'controller allocation' in refused['msg'], refused['msg']

    vm.sh('echo survives > /%s/demo/recovery.txt' % PARENT)
    # SIGKILL, as a crash: a dev agent keeps its state in memory, so Nomad forgets the plugin jobs,
    # the secret and the volume, while the datasets stay in ZFS.
    vm.sh('systemctl kill -s KILL nzc-nomad; while systemctl is-active -q nzc-nomad; do sleep 1; done')
    started = subprocess.run(['bash', str(NOMAD_DEV), 'start'], capture_output=True, text=True, check=False)
    assert started.returncode == 0, started.stderr
    assert stack.get('/v1/jobs') == []

    # Check mode on this fresh Nomad (the storage host converged): every role predicts its writes and makes none.
    checked = changed(stack.site('--check', '--diff'))
    assert checked['nomad-dev'] > 0 and checked['zfsvm'] == 0, checked
    assert stack.get('/v1/jobs') == [] and stack.get('/v1/acl/policies') == []
    assert [n['Name'] for n in stack.get('/v1/namespaces')] == ['default']

    # Namespace, policies and tokens (the agent bootstrapped anew), jobs, secret and volume again.
    assert changed(stack.site())['nomad-dev'] > 0
    assert stack.get('/v1/plugin/csi/zfs')['NodesHealthy'] == 1
    assert stack.get('/v1/volume/csi/demo?namespace=demo')['ExternalID'] == 'demo'
    stack.wait_healthy()  # the controller too: it reaches the storage host with the key stored again
    assert vm.sh('cat /%s/demo/recovery.txt' % PARENT).stdout.strip() == 'survives'
