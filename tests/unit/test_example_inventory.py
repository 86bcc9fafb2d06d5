"""inventories/example, the production inventory docs/deploy.md has users copy: every variable it sets is one a
role's argument spec knows (with the keys of its items and dictionaries, where they are literal), or a connection
variable; and ansible-playbook accepts it for each playbook with --syntax-check."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / 'inventories' / 'example'
BIN = Path(sys.executable).parent
# The collections path that holds this checkout: its build link, or, under ansible-test units, the tree it runs in.
COLLECTIONS = REPO.parents[2] if REPO.parents[1].name == 'ansible_collections' else REPO / 'build' / 'collections'


def role_options():
    """{variable: its argument spec} over every role's entry points."""
    options = {}
    for spec in (REPO / 'roles').glob('*/meta/argument_specs.yml'):
        for entry in yaml.safe_load(spec.read_text())['argument_specs'].values():
            options.update(entry.get('options') or {})
    return options


def unknown(value, spec, where):
    """The keys of value (a literal dict, or a list of them) that spec's suboptions lack, as where.key paths."""
    subs = spec.get('options')
    if not subs:
        return []
    items = value if isinstance(value, list) else [value]
    found = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        label = '%s[%d]' % (where, i) if isinstance(value, list) else where
        for key, inner in item.items():
            found += ['%s.%s' % (label, key)] if key not in subs else unknown(inner, subs[key], '%s.%s' % (label, key))
    return found


def test_every_variable_is_one_a_role_knows():
    options = role_options()
    files = sorted(EXAMPLE.glob('group_vars/*.yml')) + sorted(EXAMPLE.glob('host_vars/*.yml'))
    assert len(files) >= 5
    problems = []
    for path in files:
        for name, value in (yaml.safe_load(path.read_text()) or {}).items():
            if name.startswith('ansible_'):
                continue
            if name not in options:
                problems.append('%s: %s is no role variable' % (path.name, name))
            else:
                problems += [
                    '%s: %s is not an option' % (path.name, key) for key in unknown(value, options[name], name)
                ]
    assert problems == []


@pytest.mark.parametrize('playbook', ['site.yml', 'move_host_volume.yml', 'failover_host_volume.yml'])
def test_the_playbooks_accept_it(playbook):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS))
    run = subprocess.run(
        [
            str(BIN / 'ansible-playbook'),
            '--syntax-check',
            '-i',
            str(EXAMPLE / 'hosts.yml'),
            str(REPO / 'playbooks' / playbook),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert '[WARNING]' not in run.stderr, run.stderr
