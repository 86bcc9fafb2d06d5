# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""The ``zfs allow`` model: parse its output, compare grants, plan allow/unallow argv.

A grant is held per principal and per scope. ZFS prints a permission held both
locally and for descendents under "Local+Descendent", so the model keeps two
sets per principal (``local`` and ``descendent``) and the scope ``both`` means
the permission is in both.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

# Names longer than the 70-column ruler are printed with no trailing dashes.
_HEADER = re.compile(r'^---- Permissions on (\S+)(?: -*)?\s*$')
_SECTIONS = {
    'Permission sets:': 'sets',
    'Create time permissions:': 'create_time',
    'Local permissions:': ('local',),
    'Descendent permissions:': ('descendent',),
    'Local+Descendent permissions:': ('local', 'descendent'),
}
SCOPES = {'local': ('local',), 'descendents': ('descendent',), 'both': ('local', 'descendent')}

# Subcommands and properties that `zfs allow` accepts (OpenZFS 2.1-2.3).
PERMISSIONS = frozenset(
    (
        'allow',
        'bookmark',
        'clone',
        'create',
        'destroy',
        'diff',
        'hold',
        'load-key',
        'change-key',
        'mount',
        'promote',
        'receive',
        'receive:append',
        'release',
        'rename',
        'rollback',
        'send',
        'send:raw',
        'share',
        'snapshot',
        'groupquota',
        'groupused',
        'groupobjquota',
        'groupobjused',
        'userprop',
        'userquota',
        'userused',
        'userobjquota',
        'userobjused',
        'projectid',
        'projectquota',
        'projectused',
        'projectobjquota',
        'projectobjused',
        'aclinherit',
        'aclmode',
        'acltype',
        'atime',
        'canmount',
        'casesensitivity',
        'checksum',
        'compression',
        'context',
        'copies',
        'dedup',
        'defcontext',
        'devices',
        'dnodesize',
        'encryption',
        'exec',
        'filesystem_limit',
        'fscontext',
        'keyformat',
        'keylocation',
        'logbias',
        'mlslabel',
        'mountpoint',
        'nbmand',
        'normalization',
        'overlay',
        'pbkdf2iters',
        'prefetch',
        'primarycache',
        'quota',
        'readonly',
        'recordsize',
        'redundant_metadata',
        'refquota',
        'refreservation',
        'relatime',
        'reservation',
        'rootcontext',
        'secondarycache',
        'setuid',
        'sharenfs',
        'sharesmb',
        'snapdev',
        'snapdir',
        'snapshot_limit',
        'special_small_blocks',
        'sync',
        'utf8only',
        'version',
        'volblocksize',
        'volmode',
        'volsize',
        'vscan',
        'xattr',
        'zoned',
        'direct',
        'longname',
    )
)
_SET_NAME = re.compile(r'^@[A-Za-z0-9_.:-]{1,64}$')


def empty_grants():
    return {'sets': {}, 'create_time': set(), 'principals': {}}


def parse_allow(stdout):
    """Every section of ``zfs allow NAME`` output: {dataset: grants}."""
    sections, grants, section = {}, None, None
    for raw in stdout.splitlines():
        header = _HEADER.match(raw)
        if header:
            grants = sections.setdefault(header.group(1), empty_grants())
            section = None
            continue
        line = raw.strip()
        if not line or grants is None:
            continue
        if line in _SECTIONS:
            section = _SECTIONS[line]
            continue
        if section == 'sets':
            set_name, _sp, perms = line.partition(' ')
            grants['sets'].setdefault(set_name, set()).update(_split(perms))
        elif section == 'create_time':
            grants['create_time'].update(_split(line))
        elif isinstance(section, tuple):
            # "user csi perms", "group staff perms" or "everyone perms"
            words = line.split(None, 2)
            if words[0] == 'everyone':
                key, perms = ('everyone', ''), words[1] if len(words) > 1 else ''
            else:
                key, perms = (words[0], words[1]), words[2] if len(words) > 2 else ''
            held = grants['principals'].setdefault(key, {'local': set(), 'descendent': set()})
            for scope in section:
                held[scope].update(_split(perms))
    return sections


def _split(perms):
    return set(p for p in perms.split(',') if p)


def check_permission(perm):
    if perm.startswith('@'):
        if not _SET_NAME.match(perm):
            return '%r is not a permission set name (write @name)' % perm
        return None
    if perm not in PERMISSIONS and not perm.startswith(('userquota@', 'groupquota@', 'projectquota@')):
        return '%r is not a permission zfs allow knows; see `zfs allow` for the list' % perm
    return None


def to_plain(grants):
    """Sorted lists and string keys, for diff and return values."""
    principals = {}
    for (kind, who), held in sorted(grants['principals'].items()):
        entry = {}
        for scope in ('local', 'descendent'):
            if held[scope]:
                entry[scope] = sorted(held[scope])
        if entry:
            principals['everyone' if kind == 'everyone' else '%s %s' % (kind, who)] = entry
    return {
        'sets': dict((k, sorted(v)) for k, v in sorted(grants['sets'].items()) if v),
        'create_time': sorted(grants['create_time']),
        'principals': principals,
    }


def _principal_flag(kind, who):
    if kind == 'everyone':
        return ['-e']
    return ['-u' if kind == 'user' else '-g', who]


def _scope_flag(scopes):
    if scopes == ('local', 'descendent'):
        return []
    return ['-l'] if scopes == ('local',) else ['-d']


def plan(current, desired, state, prune_all, keep=frozenset()):
    """The allow/unallow argv lists (without the dataset) to go from current to desired.

    ``desired`` has the grants of the module's arguments. ``state`` is present,
    absent or exact; with exact, ``prune_all`` also removes principals, sets and
    create-time permissions the task does not name, except the principals in
    ``keep`` (("user", name) keys), whose grants another task manages.
    """
    commands = []
    for set_name, perms in sorted(desired['sets'].items()):
        have = current['sets'].get(set_name, set())
        if state == 'absent':
            drop = perms & have
            if drop:
                commands.append(['unallow', '-s', set_name, ','.join(sorted(drop))])
            continue
        add, drop = perms - have, have - perms
        if add:
            commands.append(['allow', '-s', set_name, ','.join(sorted(add))])
        if state == 'exact' and drop:
            commands.append(['unallow', '-s', set_name, ','.join(sorted(drop))])
    if state == 'exact' and prune_all:
        for set_name, have in sorted(current['sets'].items()):
            if set_name not in desired['sets'] and have:
                commands.append(['unallow', '-s', set_name])

    want_ct, have_ct = desired['create_time'], current['create_time']
    if state == 'absent':
        if want_ct & have_ct:
            commands.append(['unallow', '-c', ','.join(sorted(want_ct & have_ct))])
    else:
        if want_ct - have_ct:
            commands.append(['allow', '-c', ','.join(sorted(want_ct - have_ct))])
        if state == 'exact' and (want_ct or prune_all) and have_ct - want_ct:
            commands.append(['unallow', '-c', ','.join(sorted(have_ct - want_ct))])

    keys = set(desired['principals'])
    if state == 'exact' and prune_all:
        keys |= set(current['principals']) - set(keep)
    for key in sorted(keys):
        want = desired['principals'].get(key, {'local': set(), 'descendent': set()})
        have = current['principals'].get(key, {'local': set(), 'descendent': set()})
        flag = _principal_flag(*key)
        if state == 'absent':
            change = dict((s, want[s] & have[s]) for s in ('local', 'descendent'))
            verb = 'unallow'
        else:
            change = dict((s, want[s] - have[s]) for s in ('local', 'descendent'))
            verb = 'allow'
        commands.extend(_scoped(verb, flag, change))
        if state == 'exact':
            extra = dict((s, have[s] - want[s]) for s in ('local', 'descendent'))
            commands.extend(_scoped('unallow', flag, extra))
    return commands


def _scoped(verb, flag, change):
    """One command for permissions in both scopes, one per scope for the rest."""
    both = change['local'] & change['descendent']
    out = []
    for scopes, perms in (
        (('local', 'descendent'), both),
        (('local',), change['local'] - both),
        (('descendent',), change['descendent'] - both),
    ):
        if perms:
            out.append([verb] + flag + _scope_flag(scopes) + [','.join(sorted(perms))])
    return out


def apply_plan(current, commands):
    """Predict the grants after ``commands`` (for check mode and diff)."""
    grants = copy.deepcopy(current)
    for cmd in commands:
        verb, rest = cmd[0], cmd[1:]
        if rest[0] == '-s':
            target = grants['sets'].setdefault(rest[1], set())
            perms = _split(rest[2]) if len(rest) > 2 else set(target)
            (target.update if verb == 'allow' else target.difference_update)(perms)
            continue
        if rest[0] == '-c':
            (grants['create_time'].update if verb == 'allow' else grants['create_time'].difference_update)(
                _split(rest[1])
            )
            continue
        if rest[0] == '-e':
            key, rest = ('everyone', ''), rest[1:]
        else:
            key, rest = ('user' if rest[0] == '-u' else 'group', rest[1]), rest[2:]
        scopes = SCOPES['both']
        if rest[0] in ('-l', '-d'):
            scopes, rest = (('local',) if rest[0] == '-l' else ('descendent',)), rest[1:]
        held = grants['principals'].setdefault(key, {'local': set(), 'descendent': set()})
        for scope in scopes:
            (held[scope].update if verb == 'allow' else held[scope].difference_update)(_split(rest[0]))
    return grants
