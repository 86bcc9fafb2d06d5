import re

import pytest

from zfsvm_client import STOP_BACKUPS


@pytest.fixture(scope='session', autouse=True)
def no_backups(vm):
    """The stack's site.yml, whose tests run before these, leaves sanoid's and the pulls' timers on. Their zfs
    processes would land in the wrapper's log that these tests count, and their snapshots in the pool they compare."""
    vm.sh(STOP_BACKUPS, check=False)


@pytest.fixture
def base(vm, request):
    """A fresh, empty dataset for one test: tank/it/<test name>."""
    name = '%s/it/%s' % (vm.pool, re.sub(r'[^A-Za-z0-9_]', '_', request.node.name)[:60])
    vm.zfs('destroy', '-r', name, check=False)
    vm.zfs('create', '-p', name)
    yield name
    vm.zfs('destroy', '-r', name, check=False)
