"""`ansible-galaxy collection build` ships what a collection user needs and none of the development files; the
tarball installs into an empty collections path and its modules run from there; the execution environment
metadata lists what the modules import."""

import ast
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from ansible_collections.nomad_zfs.csi.tests.unit.test_docs_links import broken_links

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# The modules' imports that ansible-core does not bring, as the distribution that provides each.
DISTRIBUTIONS = {'nomad': 'python-nomad'}


def build(source, out):
    """`ansible-galaxy collection build` of the tree at source into out; the tarball."""
    subprocess.run(
        [str(BIN / 'ansible-galaxy'), 'collection', 'build', '--output-path', str(out), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    [tarball] = out.glob('nomad_zfs-csi-*.tar.gz')
    return tarball


@pytest.fixture(scope='module')
def artifact(tmp_path_factory):
    return build(REPO, tmp_path_factory.mktemp('artifact'))


def test_the_artifact_holds_the_collection_and_no_development_files(artifact):
    with tarfile.open(artifact) as tar:
        names = set(tar.getnames())
    tops = set(name.split('/')[0] for name in names)
    assert tops == {
        'FILES.json',
        'MANIFEST.json',
        'README.md',
        'CHANGELOG.rst',
        'LICENSE',
        'changelogs',
        'docs',
        'extensions',
        'inventories',
        'meta',
        'packs',
        'playbooks',
        'plugins',
        'roles',
    }, tops
    assert 'plugins/modules/zfs_dataset.py' in names and 'packs/zfs_csi/metadata.hcl' in names
    # The pack's examples, one per driver, which its README links; not the local stack's .ci files.
    drivers = ('zfs-generic-nfs', 'zfs-generic-iscsi', 'zfs-local-dataset', 'zfs-local-zvol')
    assert {'packs/zfs_csi/examples/%s.hcl' % d for d in drivers} <= names
    assert 'meta/execution-environment.yml' in names
    # The follow controller's rulebook and event source; not the Molecule scenarios beside them.
    assert {'extensions/eda/rulebooks/follow.yml', 'extensions/eda/plugins/event_source/nomad_events.py'} <= names
    assert not [n for n in names if n.startswith('extensions/molecule')]
    assert not [n for n in names if n.startswith('changelogs/fragments') or n.endswith('.tar.gz')]
    assert not [n for n in names if n.startswith(('packs/zfs_csi/.ci', 'inventories/local'))]
    with tarfile.open(artifact) as tar:
        history = yaml.safe_load(tar.extractfile('changelogs/changelog.yaml'))
        manifest = json.load(tar.extractfile('MANIFEST.json'))
    # The version built is a release, or the next one, whose changes the fragments hold until it is cut
    # (antsibull-changelog release); galaxy.yml is bumped when a release is cut, and options added since say so.
    version = manifest['collection_info']['version']
    released = sorted(tuple(int(n) for n in v.split('.')) for v in history['releases'])
    assert version in history['releases'] or tuple(int(n) for n in version.split('.')) > released[-1]


def test_a_build_from_a_clone_with_the_operators_inventory_packs_none_of_it(tmp_path):
    """docs/deploy.md has the operator copy the example to inventories/prod in the clone, with its vault, keys and
    certificates, and operations.md builds upgrades from that clone: none of it goes into the artifact."""
    clone = tmp_path / 'clone'
    # The source tree without what git ignores (ansible-test units runs from a copy with no .git).
    unused = shutil.ignore_patterns('.git', '.venv', 'build', '.cache', '*_cache', '__pycache__', 'output', '*.tar.gz')
    shutil.copytree(REPO, clone, ignore=unused, symlinks=True)
    secret = clone / 'inventories' / 'prod' / 'files' / 'tls' / 'nomad-agent-ca-key.pem'
    secret.parent.mkdir(parents=True)
    secret.write_text('-----BEGIN EC PRIVATE KEY-----\n')
    with tarfile.open(build(clone, tmp_path)) as tar:
        names = tar.getnames()
    assert 'inventories/example/hosts.yml' in names
    assert not [n for n in names if n.startswith('inventories/prod')], names


def test_every_relative_link_of_the_shipped_pages_resolves_in_the_artifact(artifact, tmp_path):
    """The README, the guides and the roles' and pack's READMEs link only to what ships, and to headings there."""
    with tarfile.open(artifact) as tar:
        tar.extractall(tmp_path, filter='data')
    pages = sorted(tmp_path.rglob('*.md'))
    assert tmp_path / 'docs' / 'deploy.md' in pages and tmp_path / 'inventories' / 'example' / 'hosts.yml' in set(
        tmp_path.rglob('*.yml')
    )
    assert broken_links(pages, tmp_path) == []


def test_the_installed_tarball_runs_a_module_from_an_empty_collections_path(artifact, tmp_path):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(tmp_path), ANSIBLE_LOCAL_TEMP=str(tmp_path / 'tmp'))
    env.pop('ANSIBLE_CONFIG', None)
    subprocess.run(
        [str(BIN / 'ansible-galaxy'), 'collection', 'install', str(artifact), '-p', str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    assert (tmp_path / 'ansible_collections' / 'nomad_zfs' / 'csi' / 'MANIFEST.json').is_file()
    # zfs_dataset refuses a bad name before it looks for zfs, so it runs on any host: the module and its
    # module_utils came from the installed copy, or the message could not name the field.
    ran = subprocess.run(
        [str(BIN / 'ansible'), 'localhost', '-m', 'nomad_zfs.csi.zfs_dataset', '-a', 'name=tank//x'],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        check=False,
    )
    assert ran.returncode == 2 and "name 'tank//x'" in ran.stdout, ran.stdout + ran.stderr
    listed = subprocess.run(
        [str(BIN / 'ansible-galaxy'), 'collection', 'list', 'nomad_zfs.csi', '--format', 'json'],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert list(json.loads(listed.stdout)) == [str(tmp_path / 'ansible_collections')]
    # docs/deploy.md's commands: site.yml by its name, from the installed copy, with the example inventory; the
    # repository's own site.yml finds no role where nothing is installed.
    example = str(REPO / 'inventories' / 'example' / 'hosts.yml')
    site = [str(BIN / 'ansible-playbook'), '-i', example, '--syntax-check']
    found = subprocess.run(
        site + ['nomad_zfs.csi.site'], capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False
    )
    assert found.returncode == 0, found.stdout + found.stderr
    empty = dict(env, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / 'empty'))
    alone = subprocess.run(
        site + [str(REPO / 'playbooks' / 'site.yml')],
        capture_output=True,
        text=True,
        env=empty,
        cwd=str(tmp_path),
        check=False,
    )
    # 2.19 and 2.20 begin it with "the", 2.21 with "The".
    assert "the role 'nomad_zfs.csi.storage_host' was not found" in (alone.stdout + alone.stderr).lower(), alone.stderr


def imported_distributions():
    """The distributions of the top-level packages that plugins/ imports, beyond the standard library and ansible."""
    found = set()
    for path in (REPO / 'plugins').rglob('*.py'):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split('.')[0]
                if top not in sys.stdlib_module_names and top not in ('ansible', 'ansible_collections', '__future__'):
                    found.add(DISTRIBUTIONS.get(top, top))
    return found


def test_the_execution_environment_lists_what_the_modules_import():
    ee = yaml.safe_load((REPO / 'meta' / 'execution-environment.yml').read_text())
    listed = (REPO / ee['dependencies']['python']).read_text().splitlines()
    names = set(line.split('#')[0].split('>')[0].split('=')[0].strip() for line in listed) - {''}
    imported = imported_distributions()
    assert 'python-nomad' in imported and names == imported, (names, imported)


def test_ansible_rulebook_finds_the_follow_rulebook_and_its_source_in_the_installed_tarball(
    artifact, tmp_path, monkeypatch
):
    """ansible-rulebook -r nomad_zfs.csi.follow, as the follow controller's job runs it: its own lookup, through
    ansible-galaxy collection list. ansible-test units' environment has no ansible-rulebook; make unit's has."""
    collection = pytest.importorskip('ansible_rulebook.collection')
    from ansible_rulebook.conf import settings

    # The only collections path, or the install finds a copy elsewhere (ansible-lint's) and installs nothing.
    monkeypatch.setenv('ANSIBLE_COLLECTIONS_PATH', str(tmp_path))
    monkeypatch.delenv('ANSIBLE_CONFIG', raising=False)
    subprocess.run(
        [str(BIN / 'ansible-galaxy'), 'collection', 'install', str(artifact), '-p', str(tmp_path)],
        check=True,
        capture_output=True,
        text=True,
    )
    monkeypatch.setattr(settings, 'ansible_galaxy_path', str(BIN / 'ansible-galaxy'))
    collection.find_collection.cache_clear()
    assert collection.find_collection('nomad_zfs.csi') == str(tmp_path / 'ansible_collections' / 'nomad_zfs' / 'csi')
    assert collection.has_rulebook('nomad_zfs.csi', 'follow') and collection.has_source('nomad_zfs.csi', 'nomad_events')
