# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a value is one SSH public key, as a .pub file holds it, with no options and no second line.

The roles write such a key after options of their own (restrict, a forced command, from=): a second line would
log in without them, and options of the key's own would come before the roles' or break the line."""

import re

# The key types OpenSSH 9 accepts in authorized_keys, base64, and a comment without a line break.
PUBLIC_KEY = re.compile(
    r'^(ssh-ed25519|ecdsa-sha2-nistp(256|384|521)|ssh-rsa|sk-ssh-ed25519@openssh\.com'
    r'|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( [^\r\n]*)?\Z'
)


def ssh_public_key(value):
    """One key, as a file read whole holds it: one line, and at most the newline that ends it."""
    if not isinstance(value, str):
        return False
    return bool(PUBLIC_KEY.match(value[:-1] if value.endswith('\n') else value))


class TestModule(object):
    def tests(self):
        return {'ssh_public_key': ssh_public_key}
