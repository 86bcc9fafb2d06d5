"""Make the collection importable as ansible_collections.nomad_zfs.csi from this checkout.

ansible-test units runs from a collection tree already; plain pytest on a checkout needs the link.
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if REPO.parent.name != 'nomad_zfs' or REPO.parents[1].name != 'ansible_collections':
    ROOT = REPO / 'build' / 'collections'
    LINK = ROOT / 'ansible_collections' / 'nomad_zfs' / 'csi'
    if not LINK.exists():
        LINK.parent.mkdir(parents=True, exist_ok=True)
        LINK.symlink_to(REPO)
    sys.path.insert(0, str(ROOT))
