"""The zfs_csi pack's outputs.tpl: its next steps, run exactly as printed (with YOUR.hcl filled in), create the
volumes of the pack's volumes variable on the stack."""

import shlex
import subprocess

import pytest
from stack_layout import CACHE_BIN, PARENT, REPO

# The extended tier (docs/testing.md, Tiers): make test leaves it out.
pytestmark = pytest.mark.extended

# The controller job's own variable, where site.yml stores the SSH key and the printed steps put it again.
SECRETS = ('nomad/jobs/zfs-controller',)
STACK_VARS = REPO / 'packs' / 'zfs_csi' / '.ci' / 'vars-zfs-generic-nfs-local-stack.hcl'
VOLUMES = """volumes = [{
  id           = "t-out-a"
  capacity_min = "1G"
  capacity_max = "1G"
  }, {
  id           = "t-out-b"
  capacity_min = "1G"
  capacity_max = "1G"
  capabilities = [{ access_mode = "multi-node-multi-writer", attachment_mode = "file-system" }]
}]
"""


def printed_steps(stack, cwd, var_files):
    """The indented command lines of the pack's output, as nomad-pack prints them after the rendered jobs."""
    argv = [str(CACHE_BIN / 'nomad-pack'), 'render', 'packs/zfs_csi', '--render-output-template']
    for f in var_files:
        argv += ['-f', f]
    out = subprocess.run(argv, cwd=cwd, env=stack.env, capture_output=True, text=True, timeout=300, check=True).stdout
    outputs = out.split('\noutputs.tpl:\n', 1)[1]
    return [line.strip() for line in outputs.splitlines() if line.startswith('     ') and line.strip()]


def plugin_restarts(stack):
    """Each running plugin allocation's task restarts: a re-rendered template restarts democratic-csi, and a
    volume created meanwhile fails."""
    running = [
        stack.get('/v1/allocation/' + a['ID'])
        for job in ('zfs-controller', 'zfs-node')
        for a in stack.get('/v1/job/%s/allocations' % job)
        if a['ClientStatus'] == 'running'
    ]
    return {a['ID']: {t: s['Restarts'] for t, s in a['TaskStates'].items()} for a in running}


def test_the_printed_next_steps_create_the_volumes(stack, vm, tmp_path):
    (tmp_path / 'packs').symlink_to(REPO / 'packs')
    (tmp_path / 'stack.hcl').write_text(STACK_VARS.read_text() + VOLUMES)
    steps = printed_steps(stack, tmp_path, ['stack.hcl'])
    # One var put (the controller's own variable: the node job reads no key), plugin status, render, the module.
    assert [s.split()[0] for s in steps] == ['nomad', 'nomad', 'nomad-pack', 'ansible'], steps
    # The key file the stack's plugin uses already, as ssh-keygen wrote it: site.yml stored it without the
    # final newline, and the plugin's templates render both alike, so the var puts restart nothing.
    (tmp_path / 'id_ed25519').write_text(open(stack.env['ZFSVM_KEY']).read())
    restarts = plugin_restarts(stack)
    stored = {path: stack.get('/v1/var/' + path)['Items'] for path in SECRETS}
    try:
        run_the_steps(stack, tmp_path, steps, vm)
    finally:
        # As site.yml stored them, so that its check mode in a later test has nothing to do.
        for path, items in stored.items():
            stack.module('nomad_variable', {'path': path, 'items': items})
    # Last, some seconds after the var puts: Nomad re-renders a changed template after a short wait.
    assert plugin_restarts(stack) == restarts


def run_the_steps(stack, tmp_path, steps, vm):
    env = dict(stack.env, PATH='%s:%s:%s' % (CACHE_BIN, REPO / '.venv' / 'bin', stack.env['PATH']))
    for step in steps:
        ran = subprocess.run(
            shlex.split(step.replace('YOUR.hcl', 'stack.hcl')),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert ran.returncode == 0, '%s\n%s%s' % (step, ran.stdout, ran.stderr)
    for volume in ('t-out-a', 't-out-b'):
        assert vm.zfs('get', '-Hp', '-o', 'value', 'refquota', PARENT + '/' + volume).stdout.strip() == str(1024**3)
    modes = {v['ID']: v['RequestedCapabilities'][0]['AccessMode'] for v in map(stack.get, ('/v1/volume/csi/t-out-b',))}
    assert modes == {'t-out-b': 'multi-node-multi-writer'}
    again = subprocess.run(
        shlex.split(steps[-1]), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert again.returncode == 0 and '"changed": false' in again.stdout, again.stdout
