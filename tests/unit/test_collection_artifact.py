"""`ansible-galaxy collection build` ships what a collection user needs, and none of the development files."""

import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_artifact_holds_the_collection_and_no_development_files(tmp_path):
    galaxy = Path(sys.executable).parent / 'ansible-galaxy'
    subprocess.run(
        [str(galaxy), 'collection', 'build', '--output-path', str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
        text=True,
    )
    [artifact] = tmp_path.glob('nomad_zfs-csi-*.tar.gz')
    with tarfile.open(artifact) as tar:
        names = set(tar.getnames())
    tops = set(name.split('/')[0] for name in names)
    assert tops == {
        'FILES.json',
        'MANIFEST.json',
        'README.md',
        'LICENSE',
        'changelogs',
        'docs',
        'meta',
        'packs',
        'playbooks',
        'plugins',
        'roles',
    }, tops
    assert 'plugins/modules/zfs_dataset.py' in names and 'packs/zfs_csi/metadata.hcl' in names
    assert not [n for n in names if n.startswith('changelogs/fragments') or n.endswith('.tar.gz')]
