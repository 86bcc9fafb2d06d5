# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The standby hosts' replication keys, read from each host, as the zfs_replication role's {key, from} items.

A primary that reads its standbys' keys from the standbys themselves keeps them when a run leaves the standbys out
(--limit): a key handed over as a fact of the same run would be missing, and the primary would revoke it."""

import base64

from ansible.errors import AnsibleFilterError


def standby_host_keys(slurps, hostvars, check_mode=False):
    """{key, from} for each standby host, from the registered results of ansible.builtin.slurp delegated to each
    (item: the inventory host), bound to the address Ansible reaches it at (its ansible_host, else its name).

    A host without a key is refused, but in check mode, where this run's standbys made none yet."""
    keys, missing = [], []
    for result in slurps:
        host = result['item']
        content = result.get('content')
        if not content:
            missing.append(host)
            continue
        key = base64.b64decode(content).decode('utf-8').strip()
        keys.append({'key': key, 'from': str(hostvars[host].get('ansible_host') or host)})
    if missing and not check_mode:
        raise AnsibleFilterError(
            'zfs_replication_standby_hosts: %s has no replication key: run the zfs_replication role on it first, '
            "with its zfs_replication_pulls, which makes the key (in this run, or before it). This primary's "
            'authorised keys were left as they were.' % ', '.join(sorted(missing))
        )
    return keys


class FilterModule(object):
    def filters(self):
        return {'standby_host_keys': standby_host_keys}
