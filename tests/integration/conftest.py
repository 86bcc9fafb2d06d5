"""Shared fixtures: the real ZFS VM, and running collection modules on it with Ansible."""

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from zfsvm_client import BIN, ZFS_WRAPPER, ZFSVM, Vm, ansible_env


@pytest.fixture(scope='session')
def vm(tmp_path_factory):
    already = subprocess.run(['bash', str(ZFSVM), 'status'], capture_output=True, text=True, check=False).returncode == 0
    started = subprocess.run(['bash', str(ZFSVM), 'start'], capture_output=True, text=True, check=False)
    if started.returncode != 0:
        pytest.fail('ZFS VM did not start:\n%s' % started.stderr)
    facts = dict(line.split('=', 1) for line in started.stdout.split() if '=' in line)
    machine = Vm(facts, tmp_path_factory.mktemp('zfsvm'))
    machine.sh("cat > /usr/local/sbin/zfs <<'EOF'\n%sEOF\nchmod 755 /usr/local/sbin/zfs" % ZFS_WRAPPER)
    yield machine
    if not already and not os.environ.get('ZFSVM_KEEP'):
        subprocess.run(['bash', str(ZFSVM), 'stop'], check=False)


class Result(dict):
    """A module result, plus the text Ansible printed and the zfs processes it started."""
    output = ''
    zfs_calls = ()
    rc = 0

    @property
    def failed(self):
        # --tree drops the `failed` key; ansible exits 2 when a host failed.
        return bool(self.get('failed')) or self.rc == 2


@pytest.fixture(scope='session')
def run_module(vm):
    env = ansible_env()

    def run(module, args, check=False, diff=False, verbosity=0):
        before = len(vm.zfs_calls())
        with tempfile.TemporaryDirectory() as tree:
            argv = [str(BIN / 'ansible'), 'zfsvm', '-i', str(vm.inventory), '-m', 'nomad_zfs.csi.%s' % module,
                    '-a', json.dumps(args), '--tree', tree]
            argv += ['--check'] * check + ['--diff'] * diff + (['-' + 'v' * verbosity] if verbosity else [])
            proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
            path = Path(tree) / 'zfsvm'
            if not path.exists():
                raise AssertionError('ansible gave no result (rc=%s):\n%s\n%s' % (proc.returncode, proc.stdout, proc.stderr))
            result = Result(json.loads(path.read_text()))
        result.output = proc.stdout + proc.stderr
        result.rc = proc.returncode
        result.zfs_calls = vm.zfs_calls()[before:]
        return result

    return run
