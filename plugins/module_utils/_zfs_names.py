# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""Dataset name validation and the parent guard.

Names are checked before any zfs process runs, so bad input changes nothing.
OpenZFS also allows spaces in names; we refuse them on purpose because they
break the tools around ZFS (exports, sudoers rules, CSI volume ids).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_COMPONENT = re.compile(r'^[A-Za-z0-9_.:-]+$')
_POOL = re.compile(r'^[A-Za-z][A-Za-z0-9_.:-]*$')
_RESERVED_POOLS = ('mirror', 'raidz', 'draid', 'spare', 'log')
MAX_NAME_LEN = 255


def dataset_name_error(name):
    """Return a sentence explaining why ``name`` is not a valid dataset name, or None."""
    if not isinstance(name, str) or not name:
        return 'must be a non-empty dataset name such as tank/nomad/csi'
    if len(name) > MAX_NAME_LEN:
        return 'is longer than %d characters' % MAX_NAME_LEN
    if name.startswith('/') or name.endswith('/'):
        return "must not start or end with '/' (write it as pool/path, e.g. tank/nomad/csi)"
    if '@' in name or '#' in name:
        return 'names a snapshot or bookmark; give a filesystem or volume name'
    parts = name.split('/')
    for part in parts:
        if part == '':
            return "has an empty component ('//'); remove the doubled slash"
        if part in ('.', '..'):
            return "has a '%s' component; dataset names are not paths" % part
        if not _COMPONENT.match(part):
            return "component %r may only contain letters, digits, '_', '-', '.' and ':'" % part
    pool = parts[0]
    if not _POOL.match(pool):
        return 'pool name %r must start with a letter' % pool
    if pool.startswith(_RESERVED_POOLS) or re.match(r'^c[0-9]', pool):
        return 'pool name %r starts with a reserved word' % pool
    return None


def is_snapshot_short_name(name):
    """Whether name can be what follows '@' in a snapshot's name (one component, no '@' or '/')."""
    return bool(re.match(r'^[A-Za-z0-9_.:-]+$', name))


def pool_of(name):
    return name.split('/', 1)[0]


def parent_of(name):
    return name.rsplit('/', 1)[0] if '/' in name else None


def is_under(name, parent, allow_equal=False):
    """True when ``name`` is ``parent`` itself (if allowed) or one of its descendants."""
    return (allow_equal and name == parent) or name.startswith(parent.rstrip('/') + '/')
