"""The Nomad API of the local stack, read with the management token that scripts/nomad-dev.sh bootstrapped, over
HTTPS with the client certificate it made."""

import json
import os
import ssl
import urllib.request
from pathlib import Path

import pytest

NOMAD = os.environ.get('ZFSVM_NOMAD_ADDR') or 'https://127.0.0.1:4646'  # as inventories/local reads it
CACHE = Path(os.environ.get('NOMAD_ZFS_CSI_CACHE', Path.home() / '.cache' / 'nomad-zfs-csi'))


@pytest.fixture(scope='session')
def nomad_api():
    # scripts/nomad-dev.sh keeps it in the VM's run dir, beside the key scripts/molecule.sh exports.
    key = Path(os.environ.get('ZFSVM_KEY') or CACHE / 'zfsvm' / 'run' / 'id_ed25519')
    token = (key.parent / 'nomad-management.token').read_text().strip()
    tls = key.parent / 'nomad-tls'
    context = ssl.create_default_context(cafile=str(tls / 'nomad-agent-ca.pem'))
    context.load_cert_chain(str(tls / 'global-cli-nomad.pem'), str(tls / 'global-cli-nomad-key.pem'))

    def get(path, token=token):
        request = urllib.request.Request(NOMAD + path, headers={'X-Nomad-Token': token})
        with urllib.request.urlopen(request, timeout=10, context=context) as resp:
            return json.loads(resp.read())

    return get
