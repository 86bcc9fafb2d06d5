"""inventories/example, the production inventory docs/deploy.md has users copy: every variable it sets is one a
role's argument spec knows (with the keys of its items and dictionaries, where they are literal), or a connection
variable; and ansible-playbook accepts it for each playbook with --syntax-check."""

import json
import os
import re
import shutil
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
    files = sorted(EXAMPLE.glob('group_vars/**/*.yml')) + sorted(EXAMPLE.glob('host_vars/*.yml'))
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


def test_the_move_asks_each_agent_with_the_files_its_client_holds():
    """The move calls each node's agent from the node's host: with the TLS files that the host volume plugin reads
    there, since a client holds no CLI certificate (deploy.md)."""
    nomad = yaml.safe_load((EXAMPLE / 'group_vars' / 'nomad' / 'main.yml').read_text())
    clients = yaml.safe_load((EXAMPLE / 'group_vars' / 'host_volume_clients.yml').read_text())
    for leaf in ('ca_cert', 'client_cert', 'client_key'):
        assert nomad['host_volume_move_agent_' + leaf] == clients['host_volume_plugin_nomad_' + leaf], leaf


def ansible(program, *argv):
    """An Ansible program of the venv on this checkout's collection; its output, once it succeeded."""
    # Without colour, which ansible-test's --color auto forces on a terminal: rendered() parses the output.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_FORCE_COLOR='false', ANSIBLE_NOCOLOR='1')
    run = subprocess.run(
        [str(BIN / program)] + list(argv), capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return run


@pytest.mark.parametrize('playbook', ['site.yml', 'move_host_volume.yml', 'failover_host_volume.yml'])
def test_the_playbooks_accept_it(playbook):
    run = ansible(
        'ansible-playbook', '--syntax-check', '-i', str(EXAMPLE / 'hosts.yml'), str(REPO / 'playbooks' / playbook)
    )
    assert '[WARNING]' not in run.stderr, run.stderr


def rendered(sources, expression):
    """expression templated for every host of the inventory sources, as the roles see it: {host: value}."""
    run = ansible('ansible', 'all', *('-i%s' % s for s in sources), '-m', 'debug', '-a', 'msg=' + expression)
    # `<host> | SUCCESS => {...}` a host, its JSON on the lines that follow (-o, the oneline callback that put it on
    # one, goes in ansible-core 2.23).
    decoder = json.JSONDecoder()
    starts = re.finditer(r'^(\S+) \| SUCCESS => ', run.stdout, re.M)
    return {start.group(1): decoder.raw_decode(run.stdout, start.end())[0]['msg'] for start in starts}


def test_each_pull_is_of_a_parent_its_primary_snapshots_into_the_parent_its_plugin_adopts_from(tmp_path):
    """The parents are set once (the plugin's, the storage contract's, the backup host's replica parent) and the
    replication's read them, where a second inventory source can override them: so a copy that changes a pool
    changes its snapshots and pulls with it, as on separate hosts (tests/integration/cluster/topology.py)."""
    example = tmp_path / 'prod'
    shutil.copytree(EXAMPLE, example)
    (example / 'files' / 'host_keys').mkdir(parents=True)
    for host in ('storage-1', 'client-1', 'client-2'):
        (example / 'files' / 'host_keys' / (host + '.pub')).write_text('ssh-ed25519 AAAA %s\n' % host)
    pools = {
        'client-2.example.internal': {
            'host_volume_plugin_parent': 'fast/volumes',
            'host_volume_plugin_replica_parent': 'fast/replica',
        },
        'backup-1.example.internal': {'zfs_replication_replica_parent': 'cold/replica'},
    }
    (example / 'pools.yml').write_text(json.dumps({'all': {'hosts': pools}}))
    hosts = rendered(
        (example / 'hosts.yml', example / 'pools.yml'),
        '{{ {"snapshots": zfs_replication_snapshots | default([]) | map(attribute="parent"),'
        ' "pulls": zfs_replication_pulls | default([]) | items2dict(key_name="host", value_name="parent"),'
        ' "replicas": zfs_replication_replica_parent | default(""),'
        ' "adopts": host_volume_plugin_replica_parent | default("")} }}',
    )
    assert hosts['storage-1.example.internal']['snapshots'] == ['tank/nomad/csi']
    assert hosts['client-2.example.internal']['snapshots'] == ['fast/volumes']
    assert hosts['client-2.example.internal']['replicas'] == 'fast/replica'
    assert hosts['client-1.example.internal']['pulls'] == {'client-2.example.internal': 'fast/volumes'}
    assert hosts['backup-1.example.internal']['replicas'] == 'cold/replica'
    assert hosts['backup-1.example.internal']['pulls']['client-2.example.internal'] == 'fast/volumes'
    for host, said in hosts.items():
        for primary, parent in said['pulls'].items():
            assert parent in hosts[primary]['snapshots'], (host, primary, parent)
        if host.startswith('client-'):
            assert said['replicas'] == said['adopts'], host


def test_the_vault_deploy_md_has_users_make_hides_none_of_the_admin_hosts_variables(tmp_path):
    """deploy.md has users create group_vars/nomad/vault.yml. Ansible reads a group's directory and then no file of
    the same name beside it (DataLoader.find_vars_files stops at the first match), so the admin host's variables are
    in group_vars/nomad/ too: with a nomad.yml beside the directory, the vault alone was read, and the admin host was
    reached by SSH."""
    example = tmp_path / 'prod'
    shutil.copytree(EXAMPLE, example)
    (example / 'group_vars' / 'nomad' / 'vault.yml').write_text('vault_nomad_mover_token: from-the-vault\n')
    hosts = rendered(
        (example / 'hosts.yml',),
        '{{ [ansible_connection | default("ssh"), host_volume_move_nomad_addr | default(""),'
        ' vault_nomad_mover_token | default("")] }}',
    )
    assert hosts['nomad-admin.example.internal'] == [
        'local',
        'https://nomad.example.internal:4646',
        'from-the-vault',
    ], hosts
