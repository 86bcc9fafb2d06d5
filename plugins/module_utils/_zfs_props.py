# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""ZFS property catalog and value normalisation.

Desired values are turned into the exact strings that ``zfs get -p`` prints,
so a comparison is a string comparison and ``quota: 10G`` is equal to
``10737418240`` instead of causing a ``zfs set`` on every run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from decimal import Decimal, InvalidOperation

ALIASES = {
    'compress': 'compression',
    'recsize': 'recordsize',
    'volblock': 'volblocksize',
    'reserv': 'reservation',
    'refreserv': 'refreservation',
    'dnsize': 'dnodesize',
}

# Byte sizes; ZFS units are powers of 1024 whatever the suffix says.
SIZE_PROPERTIES = frozenset(
    (
        'quota',
        'refquota',
        'reservation',
        'refreservation',
        'volsize',
        'recordsize',
        'volblocksize',
        'special_small_blocks',
    )
)
SIZE_PREFIXES = ('userquota@', 'groupquota@', 'projectquota@')
# `none` means zero for these, and `zfs get -p` prints 0.
NONE_IS_ZERO = frozenset(('quota', 'refquota', 'reservation', 'refreservation'))

# Fixed when the dataset is created: passed to `zfs create -o`, never to `zfs set`.
CREATION_ONLY = frozenset(
    (
        'encryption',
        'keyformat',
        'pbkdf2iters',
        'casesensitivity',
        'normalization',
        'utf8only',
        'volblocksize',
    )
)

# Only meaningful on volumes, so the pool root's property list lacks them.
VOLUME_ONLY = frozenset(('volsize', 'volblocksize'))

READ_ONLY = frozenset(
    (
        'available',
        'clones',
        'compressratio',
        'createtxg',
        'creation',
        'defer_destroy',
        'encryptionroot',
        'filesystem_count',
        'guid',
        'inconsistent',
        'keystatus',
        'logicalreferenced',
        'logicalused',
        'mounted',
        'objsetid',
        'origin',
        'receive_resume_token',
        'redact_snaps',
        'referenced',
        'refcompressratio',
        'snapshot_count',
        'snapshots_changed',
        'type',
        'used',
        'usedbychildren',
        'usedbydataset',
        'usedbyrefreservation',
        'usedbysnapshots',
        'userrefs',
        'written',
    )
)

_UNITS = {'': 0, 'B': 0, 'K': 1, 'M': 2, 'G': 3, 'T': 4, 'P': 5, 'E': 6}
_SIZE = re.compile(r'^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGTPE]?)(I?B)?\s*$', re.IGNORECASE)
_PROPERTY_NAME = re.compile(r'^[a-z][a-z0-9_]*(@[A-Za-z0-9_.:-]+)?$')
_USER_PROPERTY = re.compile(r'^[a-z0-9_.+-]*:[a-z0-9_.:+-]+$')


class PropertyError(ValueError):
    """A desired property or value that cannot be used; the message names the field."""


def canonical_name(name):
    return ALIASES.get(name, name)


def is_user_property(name):
    return ':' in name


def is_size_property(name):
    return name in SIZE_PROPERTIES or name.startswith(SIZE_PREFIXES)


def check_name_format(name):
    if is_user_property(name):
        if not _USER_PROPERTY.match(name) or len(name) > 256:
            raise PropertyError('user property %r must be lower-case module:property, e.g. com.example:owner' % name)
    elif not _PROPERTY_NAME.match(name):
        raise PropertyError('property name %r is not a ZFS property name' % name)


def check_property_name(name):
    """A name that can be set: well formed and not read-only."""
    check_name_format(name)
    if name in READ_ONLY:
        raise PropertyError('property %r is read-only and cannot be set' % name)


def parse_size(text):
    """Bytes in ``text`` (``10G``, ``10GiB``, ``1.5T``, ``4k``, ``10737418240``) as an int."""
    if isinstance(text, bool):
        raise PropertyError('%r is not a size' % (text,))
    if isinstance(text, int):
        if text < 0:
            raise PropertyError('size %d is negative' % text)
        return text
    match = _SIZE.match(str(text))
    if not match:
        raise PropertyError(
            '%r is not a size; write a number with an optional unit K, M, G, T, P or E '
            "(e.g. 10G, 10GiB, 1.5T, 10737418240) or 'none'" % (text,)
        )
    number, unit = match.group(1), match.group(2).upper()
    try:
        value = Decimal(number) * (1024 ** _UNITS[unit])
    except InvalidOperation:
        raise PropertyError('%r is not a size' % (text,))
    if value != value.to_integral_value() and unit == '':
        raise PropertyError('%r is a fraction of a byte' % (text,))
    result = int(value)
    if result >= 2**64:
        raise PropertyError('%r is larger than ZFS can store' % (text,))
    return result


def normalize_value(name, value):
    """The string ``zfs get -p`` would print once ``name`` is set to ``value``."""
    if value is None:
        raise PropertyError('property %r has no value; use inherit to clear it' % name)
    if isinstance(value, bool):
        text = 'on' if value else 'off'
    elif isinstance(value, (int, float)) and not is_size_property(name):
        text = str(value)
    elif isinstance(value, (dict, list)):
        raise PropertyError('property %r must be a scalar, not %s' % (name, type(value).__name__))
    else:
        text = value if isinstance(value, str) else str(value)
    if any(c in text for c in ('\n', '\r', '\0')):
        raise PropertyError('property %r has a newline or NUL in its value; ZFS values are one line' % name)
    if is_size_property(name):
        if str(text).strip().lower() == 'none':
            if name in NONE_IS_ZERO or name.startswith(SIZE_PREFIXES):
                return '0'
            raise PropertyError("property %r cannot be 'none'" % name)
        try:
            return str(parse_size(value if isinstance(value, int) and not isinstance(value, bool) else text))
        except PropertyError as e:
            raise PropertyError('property %r: %s' % (name, e))
    return text


def values_equal(name, desired, actual):
    """Compare a normalised desired value with what `zfs get -p` printed."""
    if name == 'encryption' and desired == 'on':
        return actual not in ('off', '-', None)
    return desired == actual


def normalize_properties(properties):
    """Canonical names and normalised values; duplicates through aliases are an error."""
    result = {}
    for raw_name, value in (properties or {}).items():
        name = canonical_name(str(raw_name))
        check_property_name(name)
        if name in result:
            raise PropertyError('property %r is given twice (once through an alias)' % name)
        result[name] = normalize_value(name, value)
    return result


def parse_source(source):
    """Split the source column into (kind, inherited_from)."""
    if source.startswith('inherited from '):
        return 'inherited', source[len('inherited from ') :]
    if source == '-':
        return 'none', None
    return source, None
