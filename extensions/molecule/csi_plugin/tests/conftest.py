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
    # scripts/nomad-dev.sh keeps it in the VM's run dir, beside the key scripts/molecule.sh exports.
    key = Path(os.environ.get('ZFSVM_KEY') or CACHE / 'zfsvm' / 'run' / 'id_ed25519')
    token = (key.parent / 'nomad-management.token').read_text().strip()

    def get(path, token=token):
        request = urllib.request.Request(NOMAD + path, headers={'X-Nomad-Token': token})
        with urllib.request.urlopen(request, timeout=10) as resp:
            return json.loads(resp.read())

    return get
