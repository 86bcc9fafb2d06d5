"""file_set's main() on a real directory tree of this host: what it makes, what check mode predicts, and the
links, inodes and refusals a hostile user could use against root."""

import grp
import os
import pwd

import pytest

from ansible_collections.nomad_zfs.csi.plugins.modules import file_set

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name
NOBODY = pwd.getpwnam('nobody').pw_uid
root_only = pytest.mark.skipif(os.getuid() != 0, reason='gives a link to another user, which only root can')


def item(path, **kw):
    defaults = dict(owner=ME, group=MY_GROUP)
    if kw.get('state', 'file') != 'absent':
        defaults['mode'] = '0755' if kw.get('state') == 'directory' else '0644'
    return dict(defaults, path=str(path), **kw)


def snapshot(root):
    """Every path under root with its kind, mode, owner and content: what 'nothing changed' compares."""
    seen = {}
    for base, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(base, name)
            st = os.lstat(path)
            content = open(path, 'rb').read() if os.path.isfile(path) and not os.path.islink(path) else None
            seen[path] = (st.st_mode, st.st_uid, st.st_gid, st.st_ino, content)
    return seen


def test_check_mode_predicts_the_run_which_makes_each_item_once(run_main, tmp_path):
    files = [
        item(tmp_path / 'etc', state='directory'),
        item(tmp_path / 'etc' / 'a.conf', content='parent=tank/nomad\n', mode='0640'),
        item(tmp_path / 'gone.conf', state='absent'),
    ]
    (tmp_path / 'gone.conf').write_text('old\n')
    before = snapshot(tmp_path)
    checked = run_main(file_set, {'files': files}, check=True, diff=True)
    assert snapshot(tmp_path) == before
    wanted = [str(tmp_path / 'etc'), str(tmp_path / 'etc' / 'a.conf'), str(tmp_path / 'gone.conf')]
    assert (checked['changed'], checked['paths']) == (True, wanted)
    ids = '%d:%d' % (os.getuid(), os.getgid())
    assert [d['after'] for d in checked['diff']] == ['%s 0755\n' % ids, 'parent=tank/nomad\n', '']
    assert checked['diff'][0]['before'] == 'absent\n'
    assert checked['diff'][2]['before'] == 'old\n' and checked['diff'][2]['after_header'].endswith('(absent)')
    made = run_main(file_set, {'files': files})
    assert (made['changed'], made['paths']) == (True, wanted)
    assert (tmp_path / 'etc' / 'a.conf').read_text() == 'parent=tank/nomad\n'
    assert oct(os.stat(tmp_path / 'etc' / 'a.conf').st_mode & 0o7777) == '0o640'
    assert oct(os.stat(tmp_path / 'etc').st_mode & 0o7777) == '0o755'
    assert not (tmp_path / 'gone.conf').exists()
    again = run_main(file_set, {'files': files}, check=True)
    assert (again['changed'], again['paths']) == (False, [])
    assert run_main(file_set, {'files': files})['changed'] is False


def test_a_change_replaces_the_inode_so_a_hard_link_elsewhere_keeps_its_content(run_main, tmp_path):
    target = tmp_path / 'settings.conf'
    target.write_text('old\n')
    os.chmod(target, 0o644)
    elsewhere = tmp_path / 'elsewhere'
    os.link(target, elsewhere)
    result = run_main(file_set, {'files': [item(target, content='old\n', mode='0600')]}, diff=True)
    assert result['paths'] == [str(target)]
    # Only the mode changes, which the diff's text says, since a diff of the same content would show nothing.
    ids = '%d:%d' % (os.getuid(), os.getgid())
    assert (result['diff'][0]['before'], result['diff'][0]['after']) == (ids + ' 0644\n', ids + ' 0600\n')
    assert os.stat(target).st_ino != os.stat(elsewhere).st_ino
    assert oct(os.stat(elsewhere).st_mode & 0o7777) == '0o644'
    run_main(file_set, {'files': [item(target, content='new\n', mode='0600')]})
    assert (target.read_text(), elsewhere.read_text()) == ('new\n', 'old\n')
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith('.')] == []


@root_only
def test_a_link_a_user_made_on_the_path_is_never_followed_and_nothing_changes(run_main, tmp_path):
    """The service user owns its home; a .ssh there that links to root's directory must not be chowned to it or
    written into."""
    home, roots = tmp_path / 'home', tmp_path / 'root-ssh'
    home.mkdir()
    roots.mkdir(mode=0o700)
    (roots / 'authorized_keys').write_text('root key\n')
    os.chown(home, NOBODY, NOBODY)
    (home / '.ssh').symlink_to(roots)
    os.lchown(home / '.ssh', NOBODY, NOBODY)
    before = snapshot(tmp_path)
    files = [
        item(home / '.ssh', state='directory', mode='0700'),
        item(home / '.ssh' / 'authorized_keys', content='restrict ssh-ed25519 AAAA csi\n', mode='0600'),
    ]
    for check in (True, False):
        refused = run_main(file_set, {'files': files}, check=check)
        assert refused['failed'] and 'files[0].path %s is a symbolic link' % (home / '.ssh') in refused['msg']
        assert 'Nothing was changed' in refused['msg']
    below = run_main(file_set, {'files': files[1:]})
    assert below['failed'] and 'a symbolic link that uid %d owns' % NOBODY in below['msg']
    assert snapshot(tmp_path) == before


def test_a_link_at_a_file_path_is_refused_whoever_made_it(run_main, tmp_path):
    (tmp_path / 'real').write_text('kept\n')
    (tmp_path / 'unit.service').symlink_to(tmp_path / 'real')
    refused = run_main(file_set, {'files': [item(tmp_path / 'unit.service', content='x\n')]})
    assert refused['failed'] and 'is a symbolic link' in refused['msg']
    assert (tmp_path / 'real').read_text() == 'kept\n'


def test_a_failed_validation_changes_nothing_even_before_it(run_main, tmp_path):
    files = [
        item(tmp_path / 'first.conf', content='fine\n'),
        item(tmp_path / 'sudoers', content='broken\n', mode='0440', validate=['/bin/grep', '-q', '^ok$', '%s']),
    ]
    refused = run_main(file_set, {'files': files})
    assert refused['failed'] and refused['msg'].startswith('files[1]: /bin/grep refused the new content of')
    assert list(tmp_path.iterdir()) == []
    files[1]['content'] = 'ok\n'
    assert run_main(file_set, {'files': files})['paths'] == [str(tmp_path / 'first.conf'), str(tmp_path / 'sudoers')]


@pytest.mark.parametrize(
    'bad, message',
    [
        (dict(mode='644x'), 'files[0].mode \'644x\': give octal permissions such as "0644"'),
        (dict(mode=None), 'files[0].mode None: give octal permissions'),
        (dict(owner='no-such-user-nzc'), "files[0].owner 'no-such-user-nzc' is not a user on this host"),
        (dict(path='relative/x.conf'), "files[0].path 'relative/x.conf' is not an absolute, normal path"),
        (dict(path='/tmp/../etc/x.conf'), "files[0].path '/tmp/../etc/x.conf' is not an absolute, normal path"),
        (dict(state='directory'), 'files[0]: content goes with state file, and only with it'),
        (dict(validate=['/bin/true']), 'files[0].validate goes with state file and names the copy to check as %s'),
    ],
)
def test_bad_input_names_the_field_and_the_fix(run_main, tmp_path, bad, message):
    args = dict(item(tmp_path / 'x.conf', content='x\n'), **bad)
    refused = run_main(file_set, {'files': [args]})
    assert refused['failed'] and message in refused['msg'] and 'Nothing was changed' in refused['msg']
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_made_with_the_missing_ones_above_it(run_main, tmp_path):
    deep = tmp_path / 'usr' / 'local' / 'libexec'
    files = [item(deep, state='directory', mode='0750'), item(deep / 'x', content='x\n')]
    assert run_main(file_set, {'files': files}, check=True)['paths'] == [str(deep), str(deep / 'x')]
    assert not (tmp_path / 'usr').exists()
    assert run_main(file_set, {'files': files})['changed']
    assert (
        oct(os.stat(tmp_path / 'usr').st_mode & 0o7777) == '0o755' and os.stat(tmp_path / 'usr').st_uid == os.getuid()
    )
    assert oct(os.stat(deep).st_mode & 0o7777) == '0o750' and (deep / 'x').read_text() == 'x\n'


def test_a_missing_directory_a_listed_twice_path_and_a_wrong_kind_are_refused(run_main, tmp_path):
    missing = run_main(file_set, {'files': [item(tmp_path / 'no' / 'x.conf', content='x\n')]})
    assert 'its directory %s does not exist. List the directory' % (tmp_path / 'no') in missing['msg']
    twice = [item(tmp_path / 'x.conf', content='x\n'), item(tmp_path / 'x.conf', content='y\n')]
    assert (
        'files[1].path %s is listed twice, with other settings' % (tmp_path / 'x.conf')
        in run_main(file_set, {'files': twice})['msg']
    )
    same = [item(tmp_path / 'd2', state='directory')] * 2
    assert run_main(file_set, {'files': same}, check=True)['paths'] == [str(tmp_path / 'd2')]
    (tmp_path / 'd').mkdir()
    wrong = run_main(file_set, {'files': [item(tmp_path / 'd', state='absent')]})
    assert 'files[0].path %s is a directory, not a file' % (tmp_path / 'd') in wrong['msg']
    assert (tmp_path / 'd').is_dir() and not (tmp_path / 'x.conf').exists()


def test_check_mode_takes_an_owner_or_home_an_earlier_task_makes_as_made(run_main, tmp_path):
    files = [
        item('~no-such-user-nzc/.ssh', state='directory', owner='no-such-user-nzc', mode='0700'),
        item(tmp_path / 'k', content='x\n', owner='no-such-user-nzc', group='no-such-group-nzc'),
    ]
    checked = run_main(file_set, {'files': files}, check=True, diff=True)
    assert (checked['changed'], checked['paths']) == (True, ['~no-such-user-nzc/.ssh', str(tmp_path / 'k')])
    assert checked['diff'][1]['after_header'] == '%s (no-such-user-nzc:no-such-group-nzc 0644)' % (tmp_path / 'k')
    refused = run_main(file_set, {'files': files})
    assert refused['failed'] and 'files[0].path ~no-such-user-nzc/.ssh: no such user on this host' in refused['msg']


def test_purge_removes_the_unlisted_files_and_links_of_a_directory_and_never_a_subdirectory(run_main, tmp_path):
    pulls = tmp_path / 'pulls'
    pulls.mkdir()
    for name in ('kept.conf', 'stale.conf'):
        (pulls / name).write_text('x\n')
    (pulls / 'link.conf').symlink_to(tmp_path / 'elsewhere')
    (pulls / 'sub').mkdir()
    (pulls / 'sub' / 'inner.conf').write_text('x\n')
    files = [item(pulls, state='directory', purge=True), item(pulls / 'kept.conf', content='x\n')]
    checked = run_main(file_set, {'files': files}, check=True)
    stale = [str(pulls / 'link.conf'), str(pulls / 'stale.conf')]
    assert (checked['removed'], len(list(pulls.iterdir()))) == (stale, 4)
    assert run_main(file_set, {'files': files})['removed'] == stale
    assert sorted(p.name for p in pulls.iterdir()) == ['kept.conf', 'sub'] and (pulls / 'sub' / 'inner.conf').exists()
    assert run_main(file_set, {'files': files})['changed'] is False
    refused = run_main(file_set, {'files': [item(pulls / 'kept.conf', content='x\n', purge=True)]})
    assert 'files[0].purge goes with state directory' in refused['msg']
