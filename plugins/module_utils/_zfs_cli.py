# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""The one place that runs ``zfs``: argv lists only, never a shell."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_props import parse_source

_INTEGER = re.compile(r'^-?[0-9]+$')
_MISSING = re.compile(r"cannot open '([^']+)': dataset does not exist")


def is_missing(stderr):
    """Whether zfs said the dataset it was given does not exist."""
    return bool(_MISSING.search(stderr or ''))


class ZfsError(Exception):
    def __init__(self, argv, rc, stderr):
        self.argv, self.rc, self.stderr = argv, rc, (stderr or '').strip()
        super(ZfsError, self).__init__('%s failed (rc=%s): %s' % (' '.join(argv[:3]), rc, self.stderr))


def parse_get(stdout):
    """``zfs get -Hp -o name,property,value,source`` into {name: {property: (value, source)}}."""
    result = {}
    for line in stdout.splitlines():
        if not line:
            continue
        fields = line.split('\t')
        if len(fields) < 4:
            continue
        name, prop, source = fields[0], fields[1], fields[-1]
        value = '\t'.join(fields[2:-1])
        result.setdefault(name, {})[prop] = (value, source)
    return result


def typed_value(value):
    """Integers for numeric values and None for '-', as zfs_info returns them."""
    if value == '-':
        return None
    return int(value) if _INTEGER.match(value) else value


def properties_with_sources(props, typed=False):
    """{property: (value, source)} into the structure the modules return."""
    out = {}
    for prop, (value, source) in sorted(props.items()):
        kind, inherited_from = parse_source(source)
        entry = {'value': typed_value(value) if typed else value, 'source': kind}
        if inherited_from:
            entry['inherited_from'] = inherited_from
        out[prop] = entry
    return out


class Zfs(object):
    """Runs zfs for one module invocation."""

    def __init__(self, module):
        self.module = module
        self._bin = None

    @property
    def bin(self):
        if self._bin is None:
            self._bin = self.module.get_bin_path('zfs', required=False)
            if not self._bin:
                self.module.fail_json(
                    msg='zfs was not found on the target host: install zfsutils-linux (OpenZFS) '
                    'and make sure zfs is on PATH, /sbin or /usr/sbin'
                )
        return self._bin

    def run(self, args, check=True):
        argv = [self.bin] + list(args)
        rc, out, err = self.module.run_command(argv, environ_update={'LC_ALL': 'C'})
        if check and rc != 0:
            raise ZfsError(['zfs'] + list(args), rc, err)
        return rc, out, err

    def listing(self, args, names):
        """`zfs <args> <names>` (a list), whose output names only those of names that exist: zfs reports each missing
        one on stderr and exits 1, which is no error here. Other errors raise ZfsError."""
        rc, out, err = self.run(list(args) + list(names), check=False)
        if rc != 0 and not all(is_missing(line) for line in err.splitlines() if line.strip()):
            raise ZfsError(['zfs'] + list(args) + list(names), rc, err)
        return out

    def get(self, names, properties='all', types=None, depth=None):
        """Read properties of existing datasets in one process.

        Returns (found, missing): parsed properties for names that exist, and
        the names that zfs reported as missing. Other errors raise ZfsError.
        """
        args = ['get', '-Hp', '-o', 'name,property,value,source']
        if types:
            args += ['-t', ','.join(types)]
        if depth is not None:
            args += ['-r'] if depth < 0 else ['-d', str(depth)]
        args += [properties if isinstance(properties, str) else ','.join(properties)]
        args += list(names)
        rc, out, err = self.run(args, check=False)
        missing = _MISSING.findall(err)
        leftover = [line for line in err.splitlines() if line.strip() and not _MISSING.search(line)]
        if rc != 0 and (leftover or not missing):
            raise ZfsError(['zfs'] + args, rc, err)
        return parse_get(out), missing
