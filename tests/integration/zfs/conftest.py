import re

import pytest


@pytest.fixture
def base(vm, request):
    """A fresh, empty dataset for one test: tank/it/<test name>."""
    name = '%s/it/%s' % (vm.pool, re.sub(r'[^A-Za-z0-9_]', '_', request.node.name)[:60])
    vm.zfs('destroy', '-r', name, check=False)
    vm.zfs('create', '-p', name)
    yield name
    vm.zfs('destroy', '-r', name, check=False)
