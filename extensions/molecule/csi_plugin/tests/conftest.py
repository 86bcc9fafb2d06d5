"""The Nomad API of the local stack, read with the management token that scripts/nomad-dev.sh bootstrapped."""

import json
import os
import urllib.request
from pathlib import Path

import pytest

NOMAD = os.environ.get('ZFSVM_NOMAD_ADDR') or 'http://127.0.0.1:4646'  # as inventories/local reads it
CACHE = Path(os.environ.get('NOMAD_ZFS_CSI_CACHE', Path.home() / '.cache' / 'nomad-zfs-csi'))


@pytest.fixture(scope='session')
def nomad_api():
    run_dir = Path(
        os.environ.get('ZFSVM_RUN_DIR') or CACHE / 'zfsvm' / 'run'
    )  # the VM's, as scripts/nomad-dev.sh keeps it
    token = (run_dir / 'nomad-management.token').read_text().strip()

    def get(path, token=token):
        request = urllib.request.Request(NOMAD + path, headers={'X-Nomad-Token': token})
        with urllib.request.urlopen(request, timeout=10) as resp:
            return json.loads(resp.read())

    return get
