"""Talk to the ZFS VM: SSH as root, an Ansible inventory, and the zfs process log.

Shared by the integration tests and the benchmarks; it needs no pytest.
"""

import json
import os
import re
import shlex
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# What every test's Nomad agent adds to its configuration for the VM's emulated CPU (the file says why).
NOMAD_EMULATED_CPU = REPO / 'scripts' / 'nomad-emulated-cpu.hcl'
ZFSVM = REPO / 'tests' / 'zfsvm' / 'zfsvm.sh'
COLLECTIONS = REPO / 'build' / 'collections'
# The collection's one version (galaxy.yml), which the zfs-dataset plugin's fingerprint reports.
VERSION = re.search(r'^version: (\S+)$', (REPO / 'galaxy.yml').read_text(), re.M).group(1)
CACHE = Path(os.environ.get('NOMAD_ZFS_CSI_CACHE', Path.home() / '.cache' / 'nomad-zfs-csi'))
# The Ansible that belongs to the interpreter running the tests.
BIN = Path(sys.executable).parent
# The controller lines above the venv's, each in the Debian 13 root of scripts/controller-line.sh.
CONTROLLER_LINE = REPO / 'scripts' / 'controller-line.sh'
# Counts every zfs process a module starts; the modules find it first on PATH. Other users (syncoid as the
# replication user) cannot write root's log, and their zfs must print nothing of the wrapper's: syncoid reads
# `zfs get`'s first line, stderr included. A task run with NZC_CASE in its environment has its calls prefixed
# with "<NZC_CASE>: ", so that one play of many cases tells each case's calls apart.
ZFS_WRAPPER = (
    '#!/bin/sh\n{ echo "${NZC_CASE:+$NZC_CASE: }$*" >> /run/zfs-calls.log; } 2>/dev/null\nexec /usr/sbin/zfs "$@"\n'
)
# Space accounting moves on its own; everything else must stay put when nothing is changed.
VOLATILE = {
    'used',
    'available',
    'referenced',
    'written',
    'logicalused',
    'logicalreferenced',
    'usedbydataset',
    'usedbychildren',
    'usedbysnapshots',
    'usedbyrefreservation',
    'compressratio',
    'refcompressratio',
    # When a snapshot was last taken or destroyed: the stack's backups (sanoid's timer) move it on their own.
    'snapshots_changed',
}
# What the stack's backups (site.yml's zfs_replication play) write on their own timers, whatever a test is doing:
# sanoid snapshots and prunes both parents every 15 minutes, and each pull receives into pool backup and
# bookmarks what it sent.
BACKUPS = re.compile(r'[@#]autosnap_|zfs receive ')


# Stops those timers, and a run of theirs in progress.
STOP_BACKUPS = (
    "systemctl stop sanoid.timer sanoid.service 'zfs-replication-pull@*.timer' 'zfs-replication-pull@*.service'"
)


def pull(vm, instance):
    """What a zfs_replication pull's timer starts, run now: the oneshot service; its journal of this run."""
    since = vm.sh('date +%s').stdout.strip()
    ran = vm.sh('systemctl start zfs-replication-pull@%s.service' % instance, check=False, timeout=600)
    journal = vm.sh('journalctl -u zfs-replication-pull@%s.service --since @%s --no-pager' % (instance, since)).stdout
    assert ran.returncode == 0, journal
    return journal


def without_backups(text):
    """Lines of zfs output (zfs list, zpool history) but those the backups' timers wrote."""
    return '\n'.join(line for line in text.splitlines() if not BACKUPS.search(line))


# One SSH connection per host for the whole run; handshakes are slow on an emulated CPU.
SSH_REUSE = ['-o', 'ControlMaster=auto', '-o', 'ControlPersist=300s', '-o', 'ControlPath=/tmp/nzc-ssh-%C']


def ansible_env(**extra):
    """Environment for ansible and ansible-playbook runs against the VM."""
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=collections_path(),
        ANSIBLE_PIPELINING='1',
        ANSIBLE_HOST_KEY_CHECKING='0',
        ANSIBLE_NOCOLOR='1',
        ANSIBLE_DEPRECATION_WARNINGS='0',
        ANSIBLE_SSH_ARGS=' '.join(SSH_REUSE + ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null']),
    )
    env.update((k, str(v)) for k, v in extra.items())
    return env


def mitogen_env(line=None):
    """Ansible settings for the tests' playbooks against the VM: mitogen's strategy keeps one Python in the guest
    for the whole play, where the linear strategy starts one per task, which compiles Ansible's module_utils anew
    each time and takes seconds on the emulated CPU. One-module `ansible` runs gain nothing from it and keep linear.
    With a controller line, its own mitogen, at the path its root shows (its Python's packages, not the venv's)."""
    if line is None:
        import ansible_mitogen

        plugins = Path(ansible_mitogen.__file__).parent / 'plugins' / 'strategy'
    else:
        root = Path(run_checked(['bash', str(CONTROLLER_LINE), 'build']).stdout.strip()) / 'root'
        found = root.glob('opt/ansible-%s/lib/python3*/site-packages/ansible_mitogen/plugins/strategy' % line)
        plugins = Path('/') / next(found).relative_to(root)
    return {'ANSIBLE_STRATEGY_PLUGINS': str(plugins), 'ANSIBLE_STRATEGY': 'mitogen_linear'}


def run_checked(argv):
    ran = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return ran


def newest_line():
    """The newest controller line: the stack's site.yml runs on it (docs/testing.md, Controller lines)."""
    return run_checked(['bash', str(CONTROLLER_LINE), 'lines']).stdout.split()[-1]


def ansible_program(name, line=None):
    """The argv that starts one of Ansible's programs: the venv's, or a controller line's in its root."""
    if line is None:
        return [str(BIN / name)]
    return ['bash', str(CONTROLLER_LINE), 'run', line, name]


class LocalResult(dict):
    """A module result from this host, plus what Ansible printed and its exit code."""

    output = ''
    rc = 0

    @property
    def failed(self):
        return bool(self.get('failed')) or self.rc == 2


def run_module_on(host, target_args, env, module, args, check=False, diff=False, verbosity=0, timeout=900):
    """Run one collection module with `ansible HOST TARGET_ARGS`; its result, what Ansible printed and its rc.

    The result is the JSON that the default callback prints after `HOST | STATUS => ` (below -vvv without
    invocation and diff, as the tree callback wrote it; ansible-core deprecates that callback and --tree). What
    Ansible printed keeps the rest, such as --diff's diff."""
    argv = [str(BIN / 'ansible'), host] + target_args
    argv += ['-m', 'nomad_zfs.csi.%s' % module, '-a', json.dumps(args)]
    argv += ['--check'] * check + ['--diff'] * diff + (['-' + 'v' * verbosity] if verbosity else [])
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    result = LocalResult(printed_result(host, proc.stdout))
    result.output, result.rc = proc.stdout + proc.stderr, proc.returncode
    return result


def printed_result(host, stdout):
    """The last result ansible printed for host: the JSON object after `HOST | STATUS => `."""
    marks = list(re.finditer(r'^%s \| [A-Z!]+ => ' % re.escape(host), stdout, re.M))
    if not marks:
        raise AssertionError('ansible gave no result for %s:\n%s' % (host, stdout[-3000:]))
    return json.JSONDecoder().raw_decode(stdout, marks[-1].end())[0]


def failed_tasks(stdout):
    """Each task (or loop item) that failed in a playbook's output and was not ignored, as `TASK [name] [host]: msg`:
    the start of an assertion's message, the part that CI's summary line shows."""
    said, task, lines = [], '', stdout.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(('TASK [', 'RUNNING HANDLER [')):
            task = 'TASK [' + line.split('[', 1)[1].split(']', 1)[0] + ']'
        elif line.startswith(('fatal: [', 'failed: [')) and not lines[i + 1 : i + 2] == ['...ignoring']:
            host = line.split(' => ', 1)[0].split(' ', 1)[1].replace(': FAILED!', '')  # [host], or with (item=...)
            msg = re.search(r'"msg": "((?:[^"\\]|\\.)*)"', line)
            said.append('%s %s: %s' % (task, host, (msg.group(1) if msg else line)[:400]))
    return '; '.join(said)


def playbook_said(run):
    """A failed run, for an assertion's message: its failed tasks, then the end of its output."""
    return '%s\n%s%s' % (failed_tasks(run.stdout), run.stdout[-5000:], run.stderr[-2000:])


def changed(run):
    """changed= for each host of an ansible-playbook run's recap; the run must have passed."""
    assert run.returncode == 0, playbook_said(run)
    return {host: int(n) for host, n in re.findall(r'^(\S+)\s+: ok=\d+\s+changed=(\d+)', run.stdout, re.M)}


def terminate(proc, timeout=30):
    """A process of this host stopped: SIGTERM, and SIGKILL once it has not ended within timeout seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def killed_at(argv, env, task):
    """argv (an ansible-playbook run) killed with SIGKILL, with everything it started on this host, as soon as it
    prints the start of the task named `task`, like an operator's machine that dies there; its output."""
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
        start_new_session=True,
    )  # fmt: skip
    out = []
    for line in proc.stdout:
        out.append(line)
        if line.startswith('TASK [') and task in line:
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait(timeout=60)
    text = ''.join(out)
    assert proc.returncode == -signal.SIGKILL, 'the playbook ended before task %r:\n%s' % (task, text[-3000:])
    return text


def tolerant(call, *args):
    """A clean-up step that goes on past a call that fails, so that the rest still runs."""
    try:
        call(*args)
    except (AssertionError, pytest.fail.Exception):
        pass


def wait_until(read, done=bool, timeout=120, why='', pause=2):
    """read() until done(value), which returns that value; after timeout seconds an AssertionError with why, a
    text or a function of the last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() + pause > deadline:
            raise AssertionError('%s: not within %ss' % (why(value) if callable(why) else why, timeout))
        time.sleep(pause)


def run_local_module(env, module, args, check=False, diff=False, verbosity=0):
    """Run one collection module on this host (the Nomad modules talk to Nomad over HTTP from here)."""
    local = ['-c', 'local', '-i', 'localhost,', '-e', 'ansible_python_interpreter=%s' % (BIN / 'python')]
    return run_module_on('localhost', local, env, module, args, check=check, diff=diff, verbosity=verbosity)


def booted_vm(workdir):
    """Start the ZFS VM (a running one is reused) and return a Vm for it, for the benchmarks."""
    started = subprocess.run(['bash', str(ZFSVM), 'start'], capture_output=True, text=True, check=True)
    facts = dict(line.split('=', 1) for line in started.stdout.split() if '=' in line)
    workdir.mkdir(exist_ok=True)
    return Vm(facts, workdir)


def converged_stack(vm, limit=None):
    """Apply site.yml to the local stack, for the benchmarks: all of it, after starting the VM's Nomad (a running one
    is reused), or only the hosts of limit."""
    env = ansible_env(ZFSVM_PORT=vm.port, ZFSVM_KEY=vm.key, ZFSVM_RUN_DIR=str(vm.run_dir))
    if not limit:
        subprocess.run(['bash', str(REPO / 'scripts' / 'nomad-dev.sh'), 'start'], check=True, capture_output=True)
    site = subprocess.run(
        [str(BIN / 'ansible-playbook'), '-i', str(REPO / 'inventories' / 'local'), str(REPO / 'playbooks' / 'site.yml')]
        + (['--limit', limit] if limit else []),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if site.returncode != 0:
        sys.exit('site.yml failed:\n' + playbook_said(site))


def bench_vm():
    """The VM for a benchmark (a running one is reused), with site.yml applied to the local stack unless
    BENCH_CONVERGED=1 says that `make demo` or an earlier benchmark did."""
    vm = booted_vm(Path(os.environ.get('TMPDIR', '/tmp')) / 'nzc-bench')
    if os.environ.get('BENCH_CONVERGED') != '1':
        converged_stack(vm)
    return vm


def collections_path():
    link = COLLECTIONS / 'ansible_collections' / 'nomad_zfs' / 'csi'
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(REPO)
    return str(COLLECTIONS)


class Vm:
    """The running ZFS VM: SSH as root, and an inventory for Ansible."""

    def __init__(self, facts, workdir):
        self.port, self.key, self.pool = facts['ZFSVM_PORT'], facts['ZFSVM_KEY'], facts['ZFSVM_POOL']
        # Nomad's API as forwarded to this host, for the agent scripts/nomad-dev.sh runs in this VM.
        self.nomad_addr = facts['ZFSVM_NOMAD_ADDR']
        self.run_dir = Path(self.key).parent
        # That agent serves HTTPS to clients with a certificate of its CA; nomad-dev.sh made both in the run dir.
        tls = self.run_dir / 'nomad-tls'
        self.nomad_tls_env = {
            'NOMAD_CACERT': str(tls / 'nomad-agent-ca.pem'),
            'NOMAD_CLIENT_CERT': str(tls / 'global-cli-nomad.pem'),
            'NOMAD_CLIENT_KEY': str(tls / 'global-cli-nomad-key.pem'),
        }
        self.inventory = workdir / 'inventory.ini'
        self.inventory.write_text(
            '[zfs]\nzfsvm ansible_host=127.0.0.1 ansible_port=%s ansible_user=root '
            'ansible_ssh_private_key_file=%s ansible_python_interpreter=/usr/bin/python3\n' % (self.port, self.key)
        )
        self.workdir = workdir

    def nomad_ssl_context(self):
        context = ssl.create_default_context(cafile=self.nomad_tls_env['NOMAD_CACERT'])
        context.load_cert_chain(self.nomad_tls_env['NOMAD_CLIENT_CERT'], self.nomad_tls_env['NOMAD_CLIENT_KEY'])
        return context

    def ssh_argv(self, user='root'):
        return (
            ['ssh', '-q', '-i', self.key, '-p', str(self.port), '-o', 'BatchMode=yes']
            + SSH_REUSE
            + ['-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '%s@127.0.0.1' % user]
        )

    def sh(self, command, check=True, user='root', timeout=300):
        """Run a command in the VM; returns CompletedProcess with text output."""
        proc = subprocess.run(
            self.ssh_argv(user) + [command], capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and proc.returncode != 0:
            raise AssertionError('VM command failed (%s): %s\n%s' % (proc.returncode, command, proc.stderr))
        return proc

    def zfs(self, *args, check=True):
        return self.sh(' '.join(['/usr/sbin/zfs'] + [shlex.quote(a) for a in args]), check=check)

    def state(self, root=None):
        """Every dataset, snapshot and property under root (the pool by default), with sources; but for what the
        stack's backups do on their timers."""
        out = self.zfs(
            'get', '-Hp', '-r', '-t', 'all', '-o', 'name,property,value,source', 'all', root or self.pool
        ).stdout
        fields = [line.split('\t') for line in out.splitlines()]
        return ['\t'.join(f) for f in fields if f[1] not in VOLATILE and not BACKUPS.search(f[0])]

    def zfs_calls(self):
        return self.sh('cat /run/zfs-calls.log 2>/dev/null || true').stdout.splitlines()


def management_token(run_dir=None):
    """The local stack's management token: its Nomad has ACLs on, and scripts/nomad-dev.sh bootstraps them at each
    start and keeps the token in the VM's run dir (ZFSVM_RUN_DIR's, by default). Read each time, since every start
    of the dev agent makes a new one."""
    run_dir = run_dir or os.environ.get('ZFSVM_RUN_DIR') or CACHE / 'zfsvm' / 'run'
    return (Path(run_dir) / 'nomad-management.token').read_text().strip()
