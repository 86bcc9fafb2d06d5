"""The Nomad API of the local stack, read with the management token that scripts/nomad-dev.sh bootstrapped."""

import json
import os
import urllib.request
from pathlib import Path

import pytest

NOMAD = 'http://127.0.0.1:4646'
CACHE = Path(os.environ.get('NOMAD_ZFS_CSI_CACHE', Path.home() / '.cache' / 'nomad-zfs-csi'))


@pytest.fixture(scope='session')
def nomad_api():
    token = (CACHE / 'nomad-dev' / 'management.token').read_text().strip()

    def get(path, token=token):
        request = urllib.request.Request(NOMAD + path, headers={'X-Nomad-Token': token})
        with urllib.request.urlopen(request, timeout=10) as resp:
            return json.loads(resp.read())

    return get
