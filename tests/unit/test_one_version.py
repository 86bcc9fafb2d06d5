"""One version: galaxy.yml's, bumped at release. The zfs-dataset plugin is a standalone script that Nomad's
fingerprint reads without the collection, and the zfs_csi pack is read by nomad-pack without it: each holds a copy,
which must agree."""

import json
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def test_the_plugins_fingerprint_says_the_collections_version():
    version = yaml.safe_load((REPO / 'galaxy.yml').read_text())['version']
    script = (REPO / 'roles' / 'host_volume_plugin' / 'files' / 'zfs-dataset.py').read_text()
    [answer] = re.findall(r"\[ \"\$1\" = fingerprint \] && \{ echo '([^']+)'", script)
    assert json.loads(answer) == {'version': version}


def test_the_packs_metadata_says_the_collections_version():
    version = yaml.safe_load((REPO / 'galaxy.yml').read_text())['version']
    metadata = (REPO / 'packs' / 'zfs_csi' / 'metadata.hcl').read_text()
    assert re.findall(r'^\s*version\s*=\s*"([^"]+)"', metadata, re.M) == [version]


def test_no_option_is_added_in_a_later_version_than_the_collections():
    version = tuple(int(n) for n in yaml.safe_load((REPO / 'galaxy.yml').read_text())['version'].split('.'))
    added = set()
    for path in (REPO / 'plugins').rglob('*.py'):
        added.update(re.findall(r'version_added: "?([0-9.]+)"?', path.read_text()))
    later = sorted(v for v in added if tuple(int(n) for n in v.split('.')) > version)
    assert later == [], 'galaxy.yml says %s' % '.'.join(map(str, version))
