#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: file_set
short_description: Make a set of files and directories, each with its content, owner, group and mode, in one call
version_added: 0.2.0
description:
  - Makes each listed directory and file as given, or removes a listed file, in the order listed, in one run of
    Python on the host. The collection's roles install their programs, units and settings with it, one task for
    what C(ansible.builtin.copy), C(ansible.builtin.template) and C(ansible.builtin.file) would do in one or two
    module runs per file.
  - A file whose content, owner, group or mode differs is written anew beside it and renamed into place, so a
    reader never sees half a file and an inode linked elsewhere is never written or given away.
  - Never follows a symbolic link that a user other than root owns, anywhere in a path, and never writes through a
    link at the path itself; such a path fails the task, naming it, before anything changes. A user who owns a
    directory on the path (a service user's home) cannot have root write or chown where the link points.
  - Everything is read and planned, and each O(files[].validate) command has passed, before the first change; a
    second run changes nothing.
  - Not for secrets; the diff shows each file's content.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
options:
  files:
    description:
      - The directories and files, in the order they are made. A file's directory must exist or be an item before
        it.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description:
          - Absolute path, or C(~user/...) under a user's home.
        type: path
        required: true
      state:
        description:
          - V(file) writes O(files[].content); V(directory) makes a directory, and like C(mkdir -p) the missing
            ones above it, root's with mode C(0755) (it never removes what a directory holds); V(absent) removes a
            file (never a directory).
        type: str
        choices: [file, directory, absent]
        default: file
      content:
        description:
          - The file's content, for O(files[].state=file). Use the C(ansible.builtin.template) or
            C(ansible.builtin.file) lookup (with C(rstrip=false)) for a role's templates and files.
        type: str
      owner:
        description:
          - User name. In check mode, a user that an earlier task makes is taken as made.
        type: str
        default: root
      group:
        description:
          - Group name; by default the owner's own group. In check mode, a group that an earlier task makes is
            taken as made.
        type: str
      mode:
        description:
          - Octal permissions, for example C("0644"). Required for files and directories.
        type: str
      validate:
        description:
          - An argument list that checks the new content before anything changes, C(%s) standing for a private copy
            of it, for example C([/usr/sbin/visudo, -cf, "%s"]). A non-zero exit fails the task.
        type: list
        elements: str
      purge:
        description:
          - With O(files[].state=directory), removes the files and symbolic links directly in it that no item lists,
            after everything else; never a subdirectory, never recursively. For a directory that the set alone
            fills, such as one configuration file per instance.
        type: bool
        default: false
notes:
  - Runs as root, or as a user that may write the paths and give them the owners.
seealso:
  - module: ansible.builtin.copy
  - module: ansible.builtin.template
  - module: ansible.builtin.file
"""

EXAMPLES = r"""
- name: Install the root helper, its settings and its sudo rule
  nomad_zfs.csi.file_set:
    files:
      - path: /usr/local/lib/nomad-zfs-csi
        state: directory
        mode: "0755"
      - path: /usr/local/lib/nomad-zfs-csi/zfs-root.py
        content: "{{ lookup('ansible.builtin.file', 'zfs-root.py', rstrip=false) }}"
        mode: "0755"
      - path: /etc/sudoers.d/nomad-zfs-csi-csi
        content: "{{ lookup('ansible.builtin.template', 'sudoers.j2') }}"
        mode: "0440"
        validate: [/usr/sbin/visudo, -cf, "%s"]
      - path: /etc/nomad-zfs-csi/old.conf
        state: absent
  register: installed
  become: true

- name: Restart what reads a file that changed
  when: "'/etc/sudoers.d/nomad-zfs-csi-csi' in installed.paths"
  ansible.builtin.debug:
    msg: the sudo rule changed
"""

RETURN = r"""
paths:
  description: The paths that changed (in check mode, would change), in the order listed.
  returned: always
  type: list
  elements: str
  sample: [/usr/local/lib/nomad-zfs-csi/zfs-root.py]
removed:
  description: The paths removed (in check mode, that would be), by O(files[].state=absent) or O(files[].purge).
  returned: always
  type: list
  elements: str
  sample: [/etc/nomad-zfs-csi/pulls/old.conf]
"""

import grp
import os
import pwd
import re
import stat
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nomad_zfs.csi.plugins.module_utils._file_set_plan import (
    ABSENT,
    DIRECTORY,
    FILE,
    Current,
    Wanted,
    plan,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError


def owner_ids(item, field, check_mode):
    """The uid and gid of an item's owner and group (by default the owner's own); None in check mode for one an
    earlier task makes."""

    def unknown(key, name):
        if not check_mode:
            raise PlanError(
                '%s.%s %r is not a %s on this host: make it first (an earlier task), or correct the name. Nothing was '
                'changed.' % (field, key, name, 'user' if key == 'owner' else 'group')
            )

    try:
        user = pwd.getpwnam(item['owner'])
    except KeyError:
        user = unknown('owner', item['owner'])
    if not item['group']:
        return (user.pw_uid, user.pw_gid) if user else (None, None)
    try:
        gid = grp.getgrnam(item['group']).gr_gid
    except KeyError:
        gid = unknown('group', item['group'])
    return (user.pw_uid if user else None), gid


def wanted(params, check_mode):
    """The items, checked and with their ids; PlanError naming the field for a bad one."""
    items = []
    for index, item in enumerate(params['files']):
        field = 'files[%d]' % index
        path = item['path']  # type path: ~user is expanded where the user exists
        if path.startswith('~') and not check_mode:
            raise PlanError('%s.path %s: no such user on this host. Nothing was changed.' % (field, item['path']))
        if not path.startswith(('/', '~')) or os.path.normpath(path) != path:
            raise PlanError(
                '%s.path %r is not an absolute, normal path such as /etc/nomad-zfs-csi/x.conf. Nothing was changed.'
                % (field, item['path'])
            )
        state, content, mode = item['state'], item['content'], item['mode']
        if (content is not None) != (state == FILE):
            raise PlanError('%s: content goes with state file, and only with it. Nothing was changed.' % field)
        if state != ABSENT and (mode is None or not _is_octal_mode(mode)):
            raise PlanError('%s.mode %r: give octal permissions such as "0644". Nothing was changed.' % (field, mode))
        if item['purge'] and state != DIRECTORY:
            raise PlanError('%s.purge goes with state directory. Nothing was changed.' % field)
        if item['validate'] and (state != FILE or '%s' not in item['validate']):
            raise PlanError(
                '%s.validate goes with state file and names the copy to check as %%s. Nothing was changed.' % field
            )
        uid, gid = owner_ids(item, field, check_mode) if state != ABSENT else (None, None)
        items.append(
            Wanted(
                index,
                path,
                state,
                None if content is None else content.encode('utf-8'),
                item['owner'],
                item['group'] or item['owner'],
                uid,
                gid,
                None if mode is None else int(mode, 8),
                item['validate'],
                item['purge'],
            )
        )
    return items


def _is_octal_mode(mode):
    return re.match(r'\A[0-7]{3,4}\Z', mode) is not None


class UserLink(Exception):
    """A symbolic link on the way to a path that a user other than root owns."""

    def __init__(self, path, uid):
        super(UserLink, self).__init__(path)
        self.path, self.uid = path, uid


def open_dir(path, make=False):
    """A descriptor of directory path, reached from / one name at a time; None where it does not exist, unless
    make, which makes the missing directories, root's with mode 0755. A symbolic link on the way is followed only
    when root owns it (UserLink otherwise): a user's link could point root at any directory."""
    fd = os.open('/', os.O_RDONLY | os.O_DIRECTORY)
    walked = ''
    try:
        for name in [n for n in path.split('/') if n]:
            walked += '/' + name
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not make:
                    os.close(fd)
                    return None
                os.mkdir(name, 0o700, dir_fd=fd)
                made_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.fchmod(made_fd, 0o755)
                os.close(made_fd)
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode) and st.st_uid != 0:
                raise UserLink(walked, st.st_uid)
            flags = os.O_RDONLY | os.O_DIRECTORY | (0 if stat.S_ISLNK(st.st_mode) else os.O_NOFOLLOW)
            next_fd = os.open(name, flags, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def read(path):
    """What the host has at path, read without following a link at it."""
    if path.startswith('~'):
        # Check mode only (wanted() refuses it otherwise): the home of a user an earlier task makes.
        return Current()
    parent, name = os.path.split(path)
    try:
        fd = open_dir(parent)
    except UserLink as e:
        return Current('link', e.uid, through=e.path)
    if fd is None:
        return Current(parent_exists=False)
    try:
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return Current()
        kind = {stat.S_IFREG: FILE, stat.S_IFDIR: DIRECTORY, stat.S_IFLNK: 'link'}.get(stat.S_IFMT(st.st_mode), 'other')
        content, entries = None, ()
        if kind == DIRECTORY:
            entries = _entries(name, fd)
        if kind == FILE:
            file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
            with os.fdopen(file_fd, 'rb') as f:
                content = f.read()
        return Current(kind, st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode), content, entries=entries)
    finally:
        os.close(fd)


def _entries(name, parent_fd):
    """A directory's (name, kind) pairs, kind being file, directory, link or other."""
    dir_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent_fd)
    try:
        with os.scandir(dir_fd) as listing:
            return [
                (
                    e.name,
                    'link'
                    if e.is_symlink()
                    else FILE
                    if e.is_file(follow_symlinks=False)
                    else DIRECTORY
                    if e.is_dir(follow_symlinks=False)
                    else 'other',
                )
                for e in listing
            ]
    finally:
        os.close(dir_fd)


def validate(module, items):
    """Run each item's validate command on a private copy of its new content; PlanError where one fails."""
    for item in items:
        if not item.validate:
            continue
        copy = os.path.join(module.tmpdir, 'validate-%d' % item.index)
        with open(copy, 'wb') as f:
            f.write(item.content)
        argv = [copy if arg == '%s' else arg for arg in item.validate]
        rc, out, err = module.run_command(argv)
        if rc != 0:
            raise PlanError(
                '%s: %s refused the new content of %s (rc %d): %s. Nothing was changed.'
                % (item.field, item.validate[0], item.path, rc, (err or out).strip())
            )


def apply(step, item):
    parent, name = os.path.split(item.path)
    try:
        fd = open_dir(parent, make=step == 'mkdir')
    except UserLink as e:
        raise PlanError(
            '%s.path %s: %s became a symbolic link that uid %d owns while the task ran; it stopped there. '
            'Remove the link.' % (item.field, item.path, e.path, e.uid)
        )
    if fd is None:
        raise PlanError('%s.path %s: its directory went missing. Run the task again.' % (item.field, item.path))
    try:
        if step == 'remove':
            os.unlink(name, dir_fd=fd)
        elif step == 'write':
            _write(fd, name, item)
        else:
            if step == 'mkdir':
                os.mkdir(name, 0o700, dir_fd=fd)
            dir_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            try:
                os.fchown(dir_fd, item.uid, item.gid)
                os.fchmod(dir_fd, item.mode)
            finally:
                os.close(dir_fd)
    finally:
        os.close(fd)


def _write(dir_fd, name, item):
    """Write the new file beside the old one, with its owner and mode before it has content, and rename it in."""
    temp = '.%s.%d.new' % (name, os.getpid())
    file_fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
    try:
        os.fchown(file_fd, item.uid, item.gid)
        os.fchmod(file_fd, item.mode)
        with os.fdopen(file_fd, 'wb') as f:
            f.write(item.content)
            f.flush()
            os.fsync(f.fileno())
        os.rename(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def work(module):
    items = wanted(module.params, module.check_mode)
    steps, diff = plan(items, dict((item.path, read(item.path)) for item in items))
    result = dict(
        changed=bool(steps),
        paths=[item.path for step, item in steps],
        removed=[item.path for step, item in steps if step == 'remove'],
    )
    if module._diff:
        result['diff'] = diff
    if steps and not module.check_mode:
        validate(module, [item for step, item in steps])
        done = []
        try:
            for step, item in steps:
                apply(step, item)
                done.append(item.path)
        except (OSError, PlanError) as e:
            module.fail_json(
                msg='%s: %s' % (item.path, e), changed=bool(done), paths=done, exception=traceback.format_exc()
            )
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(
                type='list',
                elements='dict',
                required=True,
                options=dict(
                    path=dict(type='path', required=True),
                    state=dict(type='str', default=FILE, choices=[FILE, DIRECTORY, ABSENT]),
                    content=dict(type='str'),
                    owner=dict(type='str', default='root'),
                    group=dict(type='str'),
                    mode=dict(type='str'),
                    validate=dict(type='list', elements='str'),
                    purge=dict(type='bool', default=False),
                ),
            ),
        ),
        supports_check_mode=True,
    )
    try:
        module.exit_json(**work(module))
    except PlanError as e:
        module.fail_json(msg=str(e))


if __name__ == '__main__':
    main()
