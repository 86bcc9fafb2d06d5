"""A fault an operator meets: the plugin's SSH key replaced by one the storage host never authorised. The
controller's template re-renders, democratic-csi exits on its first SSH connection, and the health check names the
reason; the right key stored again brings the plugin back. Recovering from a killed Nomad agent is Molecule's
csi_plugin scenario (make test-extended): site.yml under --check, then converged, then its idempotence, on a fresh
agent beside a converged storage host; in make test, the stack's own site.yml converges a fresh agent and
test_site_check_mode.py runs it again on the converged stack."""

import subprocess

from zfsvm_client import wait_until

SECRETS = 'nomad/jobs/zfs-controller'  # the controller job's own variable, where the csi_plugin role stores the key


def test_a_wrong_key_is_named_and_the_right_one_brings_the_plugin_back(stack, vm):
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

    stack.module('nomad_variable', {'path': SECRETS, 'items': {'ssh_private_key': open(stack.env['ZFSVM_KEY']).read()}})
    stack.wait_healthy()  # the controller too: it reaches the storage host with the right key again
