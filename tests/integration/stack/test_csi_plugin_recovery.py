"""site.yml after the Nomad agent was killed: a re-run converges without clean-up, and a third run changes nothing,
tokens included."""

import re
import subprocess

from conftest import NOMAD_DEV, PARENT


def changed(site):
    """changed= for each host of the play recap."""
    assert site.returncode == 0, site.stdout[-5000:] + site.stderr[-2000:]
    return {host: int(n) for host, n in re.findall(r'^(\S+)\s+: ok=\d+\s+changed=(\d+)', site.stdout, re.M)}


def test_rerun_after_the_agent_was_killed(stack, vm):
    vm.sh('echo survives > /%s/demo/recovery.txt' % PARENT)
    # SIGKILL, as a crash: a dev agent keeps its state in memory, so Nomad forgets the plugin jobs,
    # the secret and the volume, while the datasets stay in ZFS.
    vm.sh('systemctl kill -s KILL nzc-nomad; while systemctl is-active -q nzc-nomad; do sleep 1; done')
    started = subprocess.run(['bash', str(NOMAD_DEV), 'start'], capture_output=True, text=True, check=False)
    assert started.returncode == 0, started.stderr
    assert stack.get('/v1/jobs') == []

    # Namespace, policies and tokens (the agent bootstrapped anew), jobs, secret and volume again.
    assert changed(stack.site())['nomad-dev'] > 0
    assert stack.get('/v1/plugin/csi/zfs')['NodesHealthy'] == 1
    assert stack.get('/v1/volume/csi/demo?namespace=demo')['ExternalID'] == 'demo'
    assert vm.sh('cat /%s/demo/recovery.txt' % PARENT).stdout.strip() == 'survives'
    assert changed(stack.site()) == {'nomad-dev': 0, 'zfsvm': 0}
