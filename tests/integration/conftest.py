"""Shared fixtures: the real ZFS VM, and running collection modules on it with Ansible."""

import os
import subprocess

import pytest

from separate_hosts import SeparateHosts
from zfsvm_client import REPO, ZFS_WRAPPER, ZFSVM, Vm, ansible_env, run_module_on

# Whether the teardown under way is the session's last: nothing runs on the VM after it.
_LAST_TEARDOWN = [False]

# The extended tier (docs/testing.md, Tiers): what `make test` leaves out to stay within CI's time on this host,
# run with NZC_EXTENDED=1 (make test-extended).
EXTENDED = os.environ.get('NZC_EXTENDED') == '1'
CLUSTER = REPO / 'tests' / 'integration' / 'cluster'


def pytest_configure(config):
    config.addinivalue_line('markers', 'extended: in the extended tier only (NZC_EXTENDED=1; docs/testing.md)')


def pytest_collection_modifyitems(config, items):
    # The example on separate hosts last in its lane: its four hosts' set-up took 1244 s beside the other lane's
    # stack set-up and the host lane's sanity and lint, about 250 s alone (docs/testing.md).
    items.sort(key=lambda item: item.path.resolve().is_relative_to(CLUSTER))
    if EXTENDED:
        return
    skip = pytest.mark.skip(reason='extended tier: NZC_EXTENDED=1 (make test-extended) runs it')
    for item in items:
        if 'extended' in item.keywords:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    _LAST_TEARDOWN[0] = nextitem is None
    yield


@pytest.fixture(scope='session')
def vm(tmp_path_factory):
    already = (
        subprocess.run(['bash', str(ZFSVM), 'status'], capture_output=True, text=True, check=False).returncode == 0
    )
    started = subprocess.run(['bash', str(ZFSVM), 'start'], capture_output=True, text=True, check=False)
    if started.returncode != 0:
        pytest.fail('ZFS VM did not start:\n%s' % started.stderr)
    facts = dict(line.split('=', 1) for line in started.stdout.split() if '=' in line)
    machine = Vm(facts, tmp_path_factory.mktemp('zfsvm'))
    discarded = not already and not os.environ.get('ZFSVM_KEEP')
    # A VM this session booted and stops is thrown away (each start boots a fresh copy-on-write disk): the last
    # teardowns need not put back what later tests expect (the two nodes' teardown, last in the second VM's lane:
    # 87 s before, 25 s with it).
    machine.ending = lambda: discarded and _LAST_TEARDOWN[0]
    machine.sh("cat > /usr/local/sbin/zfs <<'EOF'\n%sEOF\nchmod 755 /usr/local/sbin/zfs" % ZFS_WRAPPER)
    yield machine
    if discarded:
        subprocess.run(['bash', str(ZFSVM), 'stop'], check=False)


@pytest.fixture(scope='session')
def separate_hosts(vm):
    """The VM's separate hosts (separate_hosts.py), each booted by the first test that asks for it, and all gone at
    the end unless the VM is."""
    hosts = SeparateHosts(vm)
    yield hosts
    if not vm.ending():
        hosts.down()


@pytest.fixture(scope='session')
def run_module(vm):
    """Run one collection module on the VM with Ansible; the result also lists the zfs processes it started."""
    env = ansible_env()

    def run(module, args, check=False, diff=False, verbosity=0):
        before = len(vm.zfs_calls())
        result = run_module_on(
            'zfsvm',
            ['-i', str(vm.inventory)],
            env,
            module,
            args,
            check=check,
            diff=diff,
            verbosity=verbosity,
            timeout=600,
        )
        result.zfs_calls = vm.zfs_calls()[before:]
        return result

    return run
