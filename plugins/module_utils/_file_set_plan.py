# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""What a set of files and directories needs, decided from what the host has: file_set's planner.

Pure: the module reads each path without following a user's symbolic link, and this decides; so check mode
predicts with the code that works. A file whose content, owner, group or mode differs is written anew and renamed
into place, never changed in place: an inode a user linked elsewhere is never written or chowned.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

FILE, DIRECTORY, ABSENT = 'file', 'directory', 'absent'


class Wanted(object):
    """One item: path (absolute, after ~user), state, content (bytes, files only), owner and group (names, with
    their ids, None where the host has no such user or group yet), mode (int) and validate (argv or None)."""

    def __init__(
        self,
        index,
        path,
        state,
        content=None,
        owner='root',
        group='root',
        uid=0,
        gid=0,
        mode=None,
        validate=None,
        purge=False,
    ):
        self.index, self.path, self.state, self.content = index, path, state, content
        self.owner, self.group, self.uid, self.gid, self.mode, self.validate = owner, group, uid, gid, mode, validate
        self.purge = purge

    @property
    def field(self):
        return 'files[%d]' % self.index


class Current(object):
    """What the host has at a path: kind (file, directory, link, other, or None when missing), uid, gid, mode,
    content (files), whether the directory it lies in exists, through: the symbolic link that a user owns on the
    way to it, where there is one (kind is then link), and entries: a directory's (name, kind) pairs."""

    def __init__(
        self, kind=None, uid=None, gid=None, mode=None, content=None, parent_exists=True, through=None, entries=()
    ):
        self.kind, self.uid, self.gid, self.mode, self.content = kind, uid, gid, mode, content
        self.parent_exists, self.through, self.entries = parent_exists, through, entries


def _check_kind(item, current):
    if current.through:
        raise PlanError(
            '%s.path %s lies under %s, a symbolic link that uid %d owns: root never follows a link a user made. '
            'Replace the link with a directory, or correct the path. Nothing was changed.'
            % (item.field, item.path, current.through, current.uid)
        )
    if current.kind == 'link':
        raise PlanError(
            '%s.path %s is a symbolic link: root never writes through a link, which whoever made it can point at any '
            'file. Remove the link. Nothing was changed.' % (item.field, item.path)
        )
    wanted_kind = 'file' if item.state == ABSENT else item.state
    if current.kind not in (None, wanted_kind):
        raise PlanError(
            '%s.path %s is a %s, not a %s: move it aside, or correct the path. Nothing was changed.'
            % (item.field, item.path, current.kind, wanted_kind)
        )


def _diff(item, current, step):
    """One entry of the diff list: the path with its owner, group and mode in the headers; the content as the text,
    or where the content stays (a directory, or only the owner, group or mode changes) those, which a diff would
    otherwise not show."""

    def text(data):
        return '' if data is None else data.decode('utf-8', 'replace')

    if not current.kind:
        before_meta = 'absent'
    elif current.mode is None:  # a file purge removes, which was listed but not read
        before_meta = 'present'
    else:
        before_meta = '%s:%s %04o' % (current.uid, current.gid, current.mode)
    after_meta = (
        'absent'
        if step == 'remove'
        else '%s:%s %04o'
        % (
            item.uid if item.uid is not None else item.owner,
            item.gid if item.gid is not None else item.group,
            item.mode,
        )
    )
    content_changes = item.state == FILE and current.kind == FILE and current.content != item.content
    if content_changes or (item.state == FILE and not current.kind):
        before, after = text(current.content), text(item.content)
    elif step == 'remove' and current.content is not None:
        before, after = text(current.content), ''
    else:
        before, after = before_meta + '\n', after_meta + '\n'
    return dict(
        before_header='%s (%s)' % (item.path, before_meta),
        after_header='%s (%s)' % (item.path, after_meta),
        before=before,
        after=after,
    )


def plan(items, currents):
    """The steps (step, item) in the items' order, and the diff: 'mkdir' (a directory, and like mkdir -p the
    missing ones above it, root's with mode 0755), 'chmod' (a directory's owner, group and mode), 'write' (a file,
    written anew and renamed into place) and 'remove' (a file); last, the removal of what a directory with purge
    holds and no item lists. Raises PlanError, naming the item, before any step: a symbolic link at a path, a file
    where a directory is wanted or the other way, a path listed twice with other settings (the same item twice
    counts once), a file whose directory neither exists nor is made by an item before it."""
    seen, made_dirs, steps, diff = {}, set(), [], []
    for item in items:
        if item.path in seen:
            if seen[item.path] != _settings(item):
                raise PlanError(
                    '%s.path %s is listed twice, with other settings: list each path once. Nothing was changed.'
                    % (item.field, item.path)
                )
            continue
        seen[item.path] = _settings(item)
        current = currents[item.path]
        _check_kind(item, current)
        parent = item.path.rsplit('/', 1)[0] or '/'
        if item.state == FILE and not current.parent_exists and parent not in made_dirs:
            raise PlanError(
                '%s.path %s: its directory %s does not exist. List the directory (state: directory) before it. '
                'Nothing was changed.' % (item.field, item.path, parent)
            )
        step = _step(item, current)
        if item.state == DIRECTORY:
            made_dirs.add(item.path)
        if step:
            steps.append((step, item))
            diff.append(_diff(item, current, step))
    for item in items:
        if item.purge:
            for stale in _unlisted(item, currents[item.path], seen):
                steps.append(('remove', stale))
                diff.append(_diff(stale, Current(FILE), 'remove'))
    return steps, diff


def _unlisted(directory, current, listed):
    """The files and links directly in a purged directory that no item lists, as items to remove; never a
    subdirectory."""
    return [
        Wanted(directory.index, directory.path.rstrip('/') + '/' + name, ABSENT)
        for name, kind in sorted(current.entries)
        if kind in (FILE, 'link') and directory.path.rstrip('/') + '/' + name not in listed
    ]


def _settings(item):
    return (item.state, item.content, item.owner, item.group, item.mode, item.validate)


def _step(item, current):
    if item.state == ABSENT:
        return 'remove' if current.kind else None
    same_meta = (current.uid, current.gid, current.mode) == (item.uid, item.gid, item.mode)
    if item.state == DIRECTORY:
        return 'mkdir' if current.kind is None else (None if same_meta else 'chmod')
    return None if current.kind and same_meta and current.content == item.content else 'write'
