"""The README and the guides in docs/ link only to files (and headings) that exist."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / 'README.md'] + sorted((REPO / 'docs').glob('*.md'))


def anchors(page):
    """GitHub's anchors of a page's headings."""
    headings = re.findall(r'^#+ (.+)$', page.read_text(), re.M)
    return set(re.sub(r'[^a-z0-9 _-]', '', h.lower()).replace(' ', '-') for h in headings)


def broken_links(pages, root):
    """Each relative link of the pages to a file or heading that does not exist, as `page: target`."""
    broken = []
    for page in pages:
        for target in re.findall(r'\]\(([^)\s]+)\)', page.read_text()):
            if re.match(r'^[a-z]+://', target):
                continue
            path, _hash, anchor = target.partition('#')
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists() or (anchor and anchor not in anchors(resolved)):
                broken.append('%s: %s' % (page.relative_to(root), target))
    return broken


def test_every_relative_link_resolves():
    assert broken_links(PAGES, REPO) == []
