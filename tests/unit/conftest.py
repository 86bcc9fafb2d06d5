"""Make the collection importable as ansible_collections.nomad_zfs.csi from this checkout."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / 'build' / 'collections'
LINK = ROOT / 'ansible_collections' / 'nomad_zfs' / 'csi'
if not LINK.exists():
    LINK.parent.mkdir(parents=True, exist_ok=True)
    LINK.symlink_to(REPO)
sys.path.insert(0, str(ROOT))
FIXTURES = Path(__file__).parent / 'fixtures'
