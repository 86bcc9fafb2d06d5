"""The roles' one rule for a public key they write after their own options: one line, one key, no options."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.test.ssh_public_key import ssh_public_key

KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0x/+y= csi@nomad'


@pytest.mark.parametrize('value', [KEY, KEY + '\n', 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0', 'ssh-rsa AAAAB3== c'])
def test_one_key_as_a_pub_file_holds_it(value):
    assert ssh_public_key(value)


@pytest.mark.parametrize(
    'value',
    [
        KEY + '\n' + KEY,  # a second key, which would log in without the role's options
        '\n' + KEY,  # a line break before it, which would leave the role's options on a line of their own
        KEY + '\n\n',
        KEY + '\r\nssh-ed25519 AAAA x',
        'command="/bin/sh" ' + KEY,
        'from="*" ' + KEY,
        'ssh-dss AAAAB3 old',
        '',
        None,
        ['ssh-ed25519', 'AAAA'],
    ],
)
def test_anything_else_is_not(value):
    assert not ssh_public_key(value)
