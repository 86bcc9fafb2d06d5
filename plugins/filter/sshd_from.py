# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sshd's from= pattern lists with host names resolved to the addresses sshd compares.

sshd matches a from= host name only with UseDNS yes; its default, no, compares the client's address alone, so a
key bound to a name logs in from nowhere. The zfs_replication role resolves each name on the primary, whose
resolver is the one sshd would ask, and binds the key to the addresses."""

import ipaddress
import re

from ansible.errors import AnsibleFilterError

# An address pattern: IPv4 digits and dots, or IPv6 hex and colons, with sshd's wildcards; a network has /bits.
ADDRESS_PATTERN = re.compile(r'^([0-9.*?]+|[0-9A-Fa-f:.*?]*:[0-9A-Fa-f:.*?]*)(/[0-9]+)?\Z')
WILDCARDS = re.compile(r'[*?]')


def _patterns(text):
    """Each pattern of a from= list, without its negation: (negated, pattern)."""
    for pattern in (text or '').split(','):
        if pattern.lstrip('!'):
            yield pattern.startswith('!'), pattern.lstrip('!')


def _is_name(pattern):
    return not ADDRESS_PATTERN.match(pattern)


def sshd_from_names(keys):
    """The host names, sorted and each once, in the from of a list of {key, from}: what the primary resolves.

    A name with wildcards is refused: no resolver lists what it matches."""
    names = set()
    for item in keys:
        for _negated, pattern in _patterns(item.get('from')):
            if not _is_name(pattern):
                continue
            if WILDCARDS.search(pattern):
                raise AnsibleFilterError(
                    'zfs_replication_standby_keys: from has the host name pattern %r. sshd matches host names only '
                    "with UseDNS yes, and its default is no: give the standby's addresses or networks, such as "
                    '"10.0.0.2,10.0.1.0/24", or its host name without wildcards, which the primary resolves. '
                    'Nothing was changed.' % pattern
                )
            names.add(pattern)
    return sorted(names)


def _addresses(lookup):
    """The addresses of one ansible.builtin.getent ahosts result, IPv4 first. A name not found (fail_key false)
    comes back as a key of its own, with None."""
    addresses = []
    for key in (lookup.get('ansible_facts') or {}).get('getent_ahosts') or {}:
        try:
            addresses.append(ipaddress.ip_address(key))
        except ValueError:
            continue
    return [str(a) for a in sorted(addresses, key=lambda a: (a.version, a))]


def sshd_from_addresses(keys, lookups):
    """keys ({key, from} each) with every host name in from replaced by its addresses, from lookups: the
    registered results of ansible.builtin.getent (database ahosts) looped over sshd_from_names(keys), on the host
    whose sshd reads the keys. A name that resolved to nothing is refused."""
    resolved = {result['item']: _addresses(result) for result in lookups}
    unresolved = sorted(name for name in sshd_from_names(keys) if not resolved.get(name))
    if unresolved:
        raise AnsibleFilterError(
            'zfs_replication_standby_keys or _hosts: from names %s, which this host cannot resolve to an address '
            '(getent ahosts). sshd compares addresses only (UseDNS no): make the name resolve here, in DNS or '
            "/etc/hosts, or give the standby's address. The authorised keys were left as they were."
            % ', '.join(unresolved)
        )
    out = []
    for item in keys:
        patterns = []
        for negated, pattern in _patterns(item.get('from')):
            for address in resolved[pattern] if _is_name(pattern) else [pattern]:
                patterns.append(('!' if negated else '') + address)
        out.append(dict(item, **{'from': ','.join(dict.fromkeys(patterns))}))
    return out


class FilterModule(object):
    def filters(self):
        return {'sshd_from_names': sshd_from_names, 'sshd_from_addresses': sshd_from_addresses}
