"""The zfs_csi pack, checked with the real nomad-pack and Nomad, per examples/*.hcl (shipped: a production
cluster's values per driver) and .ci/vars-*.hcl (not shipped: the local stack's)."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import PACK, REPO

EXAMPLES = PACK / 'examples'
VARS = sorted(EXAMPLES.glob('*.hcl')) + sorted((PACK / '.ci').glob('vars-*.hcl'))
GOLDEN = Path(__file__).parent / 'golden'
NFS = EXAMPLES / 'zfs-generic-nfs.hcl'


def label(varfile):
    """The variables file's name in test IDs and golden directories: example-<driver> or vars-<...>."""
    return 'example-' + varfile.stem if varfile.parent == EXAMPLES else varfile.stem


def tool(argv, env=None):
    """nomad or nomad-pack, with its output as text; the caller checks the exit code."""
    return subprocess.run(
        argv, capture_output=True, text=True, env=env, check=False, stdin=subprocess.DEVNULL, timeout=120
    )


def render(tools, out, *args):
    return tool([tools['nomad-pack'], 'render', str(PACK), '-o', str(out)] + list(args))


def rendered(out):
    return sorted(p for p in (out / 'zfs_csi').iterdir())


def test_every_driver_has_an_example():
    drivers = {'zfs-generic-nfs', 'zfs-generic-iscsi', 'zfs-local-dataset', 'zfs-local-zvol'}
    assert {p.stem for p in EXAMPLES.glob('*.hcl')} == drivers


@pytest.mark.parametrize('varfile', VARS, ids=[label(v) for v in VARS])
def test_render_fmt_validate_plan(tools, agent, tmp_path, varfile):
    proc = render(tools, tmp_path, '-f', str(varfile))
    assert proc.returncode == 0, proc.stderr
    files = rendered(tmp_path)
    jobs = [f for f in files if f.suffix == '.nomad']
    generic = 'generic' in varfile.name
    assert [f.name for f in jobs] == (['controller.nomad', 'node.nomad'] if generic else ['node.nomad'])
    for job in jobs:
        fmt = tool([tools['nomad'], 'fmt', '-check', str(job)])
        assert fmt.returncode == 0, 'nomad fmt -check %s:\n%s' % (job.name, fmt.stdout + fmt.stderr)
        valid = tool([tools['nomad'], 'job', 'validate', str(job)], env=agent.env)
        assert valid.returncode == 0 and 'Job validation successful' in valid.stdout, valid.stdout + valid.stderr
        assert 'connection to Nomad agent couldn' not in valid.stdout + valid.stderr
    volumes = json.loads((tmp_path / 'zfs_csi' / 'volumes.json').read_text())
    assert isinstance(volumes['volumes'], list) and volumes['plugin_id']
    plan = tool([tools['nomad-pack'], 'plan', str(PACK), '-f', str(varfile)], env=agent.env)
    # Exit 255 is an error; 0 or 1 says whether allocations would change (a system job in an
    # empty node pool places none). The job diff is what must show: nothing is registered yet.
    assert plan.returncode in (0, 1), plan.stdout + plan.stderr
    prefix = re.search(r'^plugin_id\s*=\s*"([^"]+)"', varfile.read_text(), re.M)
    prefix = prefix.group(1) if prefix else 'zfs'
    expected = ['+ Job: "%s-%s"' % (prefix, job) for job in (['controller', 'node'] if generic else ['node'])]
    output = plan.stdout + plan.stderr
    assert sorted(set(re.findall(r'\+ Job: "[^"]+"', output))) == expected, output


@pytest.mark.parametrize('varfile', VARS, ids=[label(v) for v in VARS])
def test_golden_output(tools, tmp_path, varfile):
    """Rendered output is guarded; UPDATE_GOLDEN=1 rewrites it on purpose."""
    assert render(tools, tmp_path, '-f', str(varfile)).returncode == 0
    golden = GOLDEN / label(varfile)
    if os.environ.get('UPDATE_GOLDEN'):
        golden.mkdir(parents=True, exist_ok=True)
        for old in golden.iterdir():
            old.unlink()
        for f in rendered(tmp_path):
            (golden / f.name).write_text(f.read_text())
    assert sorted(p.name for p in golden.iterdir()) == [f.name for f in rendered(tmp_path)]
    for f in rendered(tmp_path):
        assert f.read_text() == (golden / f.name).read_text(), '%s differs from %s' % (f.name, golden)


def test_bad_driver_lists_valid_ones(tools, tmp_path):
    proc = render(tools, tmp_path, '-f', str(EXAMPLES / 'zfs-local-dataset.hcl'), '--var', 'driver=zfs-nfs')
    assert proc.returncode != 0
    assert (
        'variable driver = "zfs-nfs" is not a driver this pack knows; use one of zfs-generic-nfs, '
        'zfs-generic-iscsi, zfs-local-dataset, zfs-local-zvol'
    ) in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    'missing,message',
    [
        ('instance_id', 'variable instance_id is required'),
        ('dataset_parent_name', 'variable dataset_parent_name is required'),
        ('detached_snapshots_parent_name', 'variable detached_snapshots_parent_name is required'),
        ('ssh_host', 'variable ssh_host is required for driver zfs-generic-nfs'),
    ],
)
def test_missing_required_variables(tools, tmp_path, missing, message):
    proc = render(tools, tmp_path, '-f', str(NFS), '--var', '%s=' % missing)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr


@pytest.mark.parametrize(
    'override, message',
    [
        (
            'node_mount_flags=["nosuid,dev"]',
            'variable node_mount_flags has "nosuid,dev"; give one mount option per item',
        ),
        ('node_mount_flags=["-o suid"]', 'variable node_mount_flags has "-o suid"'),
        ('filesystem_root_owner=nobody', 'variable filesystem_root_owner takes numeric UID:GID'),
    ],
    ids=['two-in-one', 'not-an-option', 'root-owner-by-name'],
)
def test_a_bad_node_variable_names_itself(tools, tmp_path, override, message):
    """A bad value stops the render with the variable's name and the fix; no job is written."""
    proc = render(tools, tmp_path, '-f', str(NFS), '--var', override)
    assert proc.returncode != 0 and not (tmp_path / 'zfs_csi').exists()
    assert message in proc.stdout + proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    'override, message',
    [
        ('nfs_clients=[]', 'variable nfs_clients is required for driver zfs-generic-nfs'),
        ('nfs_clients=["10.0.0.0/8 *(rw)"]', 'variable nfs_clients has "10.0.0.0/8 *(rw)"'),
        ('nfs_share_options=rw,no_root_squash', 'variable nfs_share_options must not hold rw or ro'),
        ('nfs_share_options=sec=sys,ro=@0.0.0.0/0', 'variable nfs_share_options must not hold rw or ro'),
    ],
    ids=['no-clients', 'bad-client', 'rw-in-options', 'ro-in-options'],
)
def test_nfs_is_never_exported_to_everyone(tools, tmp_path, override, message):
    """Without nfs_clients, any host that reaches the storage host would mount every volume as root."""
    proc = render(tools, tmp_path, '-f', str(NFS), '--var', override)
    assert proc.returncode != 0
    assert message in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_secret_stays_in_the_nomad_variable(tools, agent, tmp_path):
    """The SSH key is read by the controller's template at run time; job text and the stored job never hold it,
    and the node job, which runs on every client, reads no key at all."""
    secret = 'SENTINEL-PRIVATE-KEY-%d' % os.getpid()
    varfile = NFS
    put = tool(
        [tools['nomad'], 'var', 'put', '-force', 'nomad/jobs/zfs-controller', 'ssh_private_key=' + secret],
        env=agent.env,
    )
    assert put.returncode == 0, put.stderr
    assert render(tools, tmp_path, '-f', str(varfile), '--var', 'controller_node_pool=admin').returncode == 0
    for f in rendered(tmp_path):
        assert secret not in f.read_text()
    # The controller reads its own variable, which its workload identity may read when ACLs are on.
    controller = (tmp_path / 'zfs_csi' / 'controller.nomad').read_text()
    node = (tmp_path / 'zfs_csi' / 'node.nomad').read_text()
    assert '{{ with nomadVar "nomad/jobs/zfs-controller" }}' in controller and 'sshConnection' in controller
    assert 'nomadVar' not in node and 'sshConnection' not in node
    # The key's holder runs in a pool of its own; the node plugin stays on every client of node_pool.
    assert 'node_pool   = "admin"' in controller and 'node_pool   = "default"' in node
    run = tool([tools['nomad-pack'], 'run', '--detach', str(PACK), '-f', str(varfile)], env=agent.env)
    assert run.returncode == 0, run.stdout + run.stderr
    stored = json.dumps(agent.get('/v1/job/zfs-controller'))
    assert 'nomadVar' in stored and secret not in stored
    plan = tool([tools['nomad-pack'], 'plan', str(PACK), '-f', str(varfile)], env=agent.env)
    assert plan.returncode in (0, 1), plan.stdout + plan.stderr
    output = plan.stdout + plan.stderr
    assert re.findall(r'[+-] Job: "zfs-controller"', output) == [], 'a plan right after run shows no change:\n' + output


def test_the_local_stack_vars_file_agrees_with_the_inventory_contract():
    """`nomad-pack run -f` of the file must deploy what the csi_plugin role deploys from nomad_zfs_csi_storage."""
    contract = yaml.safe_load((REPO / 'inventories' / 'local' / 'group_vars' / 'all.yml').read_text())[
        'nomad_zfs_csi_storage'
    ]
    text = (PACK / '.ci' / 'vars-zfs-generic-nfs-local-stack.hcl').read_text()
    hcl = dict(re.findall(r'^(\w+)\s*=\s*"?([^"\n]*?)"?\s*$', text, re.M))
    assert {
        'driver': hcl['driver'],
        'parent': hcl['dataset_parent_name'],
        'snapshots_parent': hcl['detached_snapshots_parent_name'],
        'zfs_cli_path': hcl['zfs_cli_path'],
    } == contract
    assert hcl['zfs_sudo'] == 'false'


def test_the_readme_variables_table_is_variables_hcl():
    """Every variable, its type and its default, as the README's table gives them."""
    text = (PACK / 'variables.hcl').read_text()
    declared = {}
    for name, body in re.findall(r'^variable "(\w+)" \{\n(.*?)^\}', text, re.M | re.S):
        kind = re.search(r'^\s*type\s*=\s*(.+)$', body, re.M).group(1).strip()
        kind = 'list(object(...))' if kind == 'list(object({' else kind  # the table abbreviates the fields
        default = re.search(r'^\s*default\s*=\s*(.+)$', body, re.M)
        declared[name] = (kind, default.group(1).strip() if default else None)
    rows = re.findall(
        r'^\| `(\w+)` \| `([^`]+)` \| (?:`([^`]*)`|required|[^|]*) \|', (PACK / 'README.md').read_text(), re.M
    )
    documented = {name: (kind, default) for name, kind, default in rows}
    assert set(documented) == set(declared)
    assert {n: (declared[n][0], declared[n][1] or '') for n in declared} == documented


def test_the_example_inventorys_pack_variables_render_as_the_role_renders_them(tools, tmp_path):
    """inventories/example's pack file, followed by what the csi_plugin role adds from nomad_zfs_csi_storage (as
    roles/csi_plugin writes its 1-role.hcl): the pinned image under Docker, exported to the clients only."""
    example = REPO / 'inventories' / 'example'
    contract = yaml.safe_load((example / 'group_vars' / 'all.yml').read_text())['nomad_zfs_csi_storage']
    role = tmp_path / '1-role.hcl'
    role.write_text(
        'driver = "%(driver)s"\ndataset_parent_name = "%(parent)s"\n'
        'detached_snapshots_parent_name = "%(snapshots_parent)s"\nzfs_cli_path = "%(zfs_cli_path)s"\n'
        'zfs_sudo = false\n' % contract
    )
    proc = render(tools, tmp_path / 'out', '-f', str(example / 'pack' / 'zfs_csi.hcl'), '-f', str(role))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    jobs = dict((p.name, p.read_text()) for p in rendered(tmp_path / 'out'))
    node = jobs['node.nomad']
    assert 'driver = "docker"' in node and 'democraticcsi/democratic-csi:v1.9.4' in node
    controller = jobs['controller.nomad']
    assert 'storage-1.example.internal' in controller and 'rw=@10.0.20.0/24' in controller


@pytest.mark.parametrize('driver', ['zfs-generic-nfs', 'zfs-generic-iscsi'])
def test_the_storage_host_examples_render_what_the_storage_host_roles_sudo_rule_allows(tools, tmp_path, driver):
    """The shipped examples for a storage host, rendered as nomad-pack renders them: democratic-csi runs zfs without
    sudo, which the storage_host role's narrow rule refuses (the pack's default, for a service user with full sudo);
    NFS runs it through the wrapper that inventories/example names, and chmod through env."""
    proc = render(tools, tmp_path, '-f', str(EXAMPLES / (driver + '.hcl')))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    controller = (tmp_path / 'zfs_csi' / 'controller.nomad').read_text()
    assert re.search(r'^ +sudoEnabled: false$', controller, re.M), controller
    if driver != 'zfs-generic-nfs':
        return
    contract = yaml.safe_load((REPO / 'inventories' / 'example' / 'group_vars' / 'all.yml').read_text())
    wrapper = contract['nomad_zfs_csi_storage']['zfs_cli_path']
    assert re.search(r'^ +zfs: "%s"$' % re.escape(wrapper), controller, re.M), controller
    assert re.search(r'^ +sudo: "/usr/bin/env"$', controller, re.M), controller
