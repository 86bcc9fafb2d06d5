"""The ansible-core lines the collection claims (meta/runtime.yml) are the lines the tests run: the venv's
(requirements.txt) and each of scripts/controller-line.sh's, and the README's support table names them all."""

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def minor(version):
    return tuple(int(n) for n in version.split('.')[:2])


def lines_under_test():
    venv = re.search(r'^ansible-core==(\S+)', (REPO / 'requirements.txt').read_text(), re.M).group(1)
    script = (REPO / 'scripts' / 'controller-line.sh').read_text()
    lines = re.search(r'^LINES="([^"]+)"', script, re.M).group(1).split()
    return [venv] + lines


def test_requires_ansible_spans_exactly_the_lines_under_test():
    claimed = yaml.safe_load((REPO / 'meta' / 'runtime.yml').read_text())['requires_ansible']
    lines = sorted(lines_under_test(), key=lambda line: tuple(map(int, line.split('.'))))
    lowest, highest = minor(lines[0]), minor(lines[-1])
    assert claimed == '>=%d.%d.0,<%d.%d.0' % (lowest + (highest[0], highest[1] + 1))
    # No line is skipped between them.
    assert sorted({minor(line) for line in lines}) == [(lowest[0], m) for m in range(lowest[1], highest[1] + 1)]


def test_the_readme_names_each_tested_line():
    table = re.search(r'^\| Controller .*$', (REPO / 'README.md').read_text(), re.M).group(0)
    named = set(re.findall(r'ansible-core (\d+\.\d+)(?: and (\d+\.\d+))?', table))
    named = {line for pair in named for line in pair if line}
    assert named == {'%d.%d' % minor(line) for line in lines_under_test()}, table
