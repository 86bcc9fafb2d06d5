"""site.yml after the Nomad agent was killed: check mode on the fresh Nomad predicts and writes nothing, a re-run
converges without clean-up, and a third run changes nothing, tokens included."""

import subprocess

from conftest import NOMAD_DEV, PARENT
from zfsvm_client import changed


def test_rerun_after_the_agent_was_killed(stack, vm):
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
    assert vm.sh('cat /%s/demo/recovery.txt' % PARENT).stdout.strip() == 'survives'
    assert changed(stack.site()) == {'nomad-dev': 0, 'zfsvm': 0}
