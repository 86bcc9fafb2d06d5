"""host_volume_move's work on a node's host runs as root there, whatever the inventory's connection to that host
becomes: its zfs, systemd and agent calls need root, and the agent's TLS files are commonly root's alone. A task
delegated to a node without `become: true` would run as the inventory's ansible_user wherever that user does not
become root by default."""

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
TASKS = REPO / 'roles' / 'host_volume_move' / 'tasks'


def tasks(items):
    """Every task in a task file's list, those inside blocks included."""
    for task in items or []:
        yield task
        for key in ('block', 'rescue', 'always'):
            yield from tasks(task.get(key))


def test_every_task_delegated_to_a_node_becomes_root():
    delegated, as_login = 0, []
    for path in sorted(TASKS.glob('*.yml')):
        for task in tasks(yaml.safe_load(path.read_text())):
            if 'delegate_to' in task and 'block' not in task:
                delegated += 1
                if task.get('become') is not True:
                    as_login.append('%s: %s' % (path.name, task.get('name')))
    assert delegated >= 10
    assert as_login == []
