"""The local default stack as `make demo` runs it: Nomad in the ZFS VM, site.yml, democratic-csi itself."""

import contextlib
import json
import subprocess
import tempfile
import urllib.error
import urllib.request

import pytest
from stack_layout import CACHE_BIN, HOST_VOLUMES, LOCAL_PARENTS, PARENT, STACK, WORKLOAD, dataset

from zfsvm_client import (
    BIN,
    REPO,
    STOP_BACKUPS,
    ansible_env,
    ansible_program,
    killed_at,
    management_token,
    mitogen_env,
    newest_line,
    playbook_said,
    run_local_module,
)

NOMAD_DEV = REPO / 'scripts' / 'nomad-dev.sh'
NEWEST_LINE = newest_line()


class Stack(object):
    """Nomad's forwarded API, the nomad CLI and the collection's modules, all from this host.

    ACLs are on. The tests' own checks and set-up use the management token that nomad-dev.sh bootstrapped;
    site.yml gets none, as in `make demo`, and runs on the tokens its nomad_access play makes.
    """

    def __init__(self, vm):
        self.vm = vm
        self.address = vm.nomad_addr
        # inventories/local reads ZFSVM_NOMAD_ADDR too, for a VM other than the default one.
        self.base_env = ansible_env(
            ZFSVM_PORT=vm.port,
            ZFSVM_KEY=vm.key,
            ZFSVM_RUN_DIR=vm.run_dir,
            ZFSVM_NOMAD_ADDR=vm.nomad_addr,
            NOMAD_ADDR=vm.nomad_addr,
        )

    @property
    def context(self):
        # Read when used: nomad-dev.sh makes the files when it starts the agent.
        return self.vm.nomad_ssl_context()

    @property
    def management(self):
        return management_token(self.vm.run_dir)

    @property
    def env(self):
        """The modules' and the CLI's: the agent's TLS files besides the token. Playbooks get neither: the roles
        reach the agent through inventories/local's variables, as on a cluster."""
        return dict(self.base_env, NOMAD_TOKEN=self.management, **self.vm.nomad_tls_env)

    def secret(self, token_name):
        """A token's secret from the variable nomad_access wrote it to."""
        return self.get('/v1/var/nomad-access/tokens/' + token_name)['Items']['secret']

    def get(self, path):
        return self.api('GET', path)

    def api(self, method, path, body=None, token=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.address + path, data=data, method=method)
        request.add_header('X-Nomad-Token', token or self.management)
        try:
            with urllib.request.urlopen(request, timeout=120, context=self.context) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as e:
            raise AssertionError('%s %s: %s %s' % (method, path, e.code, e.read().decode())) from None
        return json.loads(raw) if raw.strip() else None

    def nomad(self, *argv, check=True, token=None, namespace='default'):
        proc = subprocess.run(
            [str(CACHE_BIN / 'nomad')] + list(argv),
            env=dict(self.env, NOMAD_TOKEN=token or self.management, NOMAD_NAMESPACE=namespace),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=600,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                'nomad %s failed (%s):\n%s%s' % (' '.join(argv), proc.returncode, proc.stdout, proc.stderr)
            )
        return proc

    @contextlib.contextmanager
    def pack_plugin(self, varfile, plugin_id, jobs, secrets=None):
        """A plugin that `nomad-pack run` deploys from varfile beside the stack's own: first each job's own Nomad
        Variable from secrets ({job: items}), as the pack's printed steps put it; then the pack, and the plugin healthy
        on jobs. Afterwards, or when that fails, the jobs purged and their variables removed. A volume of the plugin
        still registered then is a failure of the test that left it; it is deregistered first (force), because
        without its plugin no claim on it could ever be freed, and Nomad's volume watcher would keep rewriting it
        under later tests (seen in CI: test_site_faults.py's unchanged-state checks failed on t-iscsi)."""
        try:
            for job, items in (secrets or {}).items():
                stored = self.module('nomad_variable', {'path': 'nomad/jobs/' + job, 'items': items})
                assert stored['rc'] == 0, stored
            self.pack_run(varfile, plugin_id)
            healthy = self.module(
                'nomad_csi_plugin_info', {'plugin_id': plugin_id, 'wait_timeout': 600, 'jobs': list(jobs)}
            )
            # The module's message names each unhealthy task and the last error it logged; pytest would cut it.
            assert healthy['rc'] == 0 and healthy['healthy'], healthy.get('msg', healthy)
            yield
        finally:
            left = self.volumes_of(plugin_id)
            for namespace, volume, claims in left:
                # Nomad forces only claims of allocations that stopped.
                for job in set(job for job, _status in claims.values() if job):
                    self.nomad('job', 'stop', '-purge', job, check=False, namespace=namespace)
                self.api('DELETE', '/v1/volume/csi/%s?force=true&namespace=%s' % (volume, namespace))
            for job in jobs:
                self.nomad('job', 'stop', '-purge', job, check=False)
            for job in secrets or {}:
                self.module('nomad_variable', {'path': 'nomad/jobs/' + job, 'state': 'absent'})
        assert not left, 'volumes of %s left registered, with their claims: %s' % (plugin_id, left)

    def volumes_of(self, plugin_id):
        """The CSI volumes of plugin_id in every namespace: (namespace, ID, {allocation: (its job, client status)})."""
        found = []
        # Filtered here: Nomad 1.11.3 answers plugin_id with namespace=* by an empty list (CSIVolumesByPluginID).
        for listed in [vol for vol in self.get('/v1/volumes?type=csi&namespace=*') if vol['PluginID'] == plugin_id]:
            vol = self.get('/v1/volume/csi/%s?namespace=%s' % (listed['ID'], listed['Namespace']))
            stubs = dict((alloc['ID'], (alloc['JobID'], alloc['ClientStatus'])) for alloc in vol['Allocations'] or [])
            held = set(vol['ReadAllocs'] or {}) | set(vol['WriteAllocs'] or {})
            found.append((vol['Namespace'], vol['ID'], dict((a[:8], stubs.get(a, ('', 'gone'))) for a in held)))
        return found

    def running_alloc(self, job):
        """The ID of the one running allocation of job."""
        running = [a['ID'] for a in self.api('GET', '/v1/job/%s/allocations' % job) if a['ClientStatus'] == 'running']
        assert len(running) == 1, running
        return running[0]

    def pack_run(self, varfile, name):
        """`nomad-pack run` of the zfs_csi pack with one variables file, as the pack's README gives it, as deployment
        `name`: nomad-pack stops the jobs of its deployment that the new render lacks, so that one plugin's
        deployment would stop another's under the default name (the pack's)."""
        ran = subprocess.run(
            [
                str(CACHE_BIN / 'nomad-pack'),
                'run',
                str(REPO / 'packs' / 'zfs_csi'),
                '--name=' + name,
                '-f',
                str(varfile),
            ],
            capture_output=True,
            text=True,
            env=self.env,
            stdin=subprocess.DEVNULL,
            timeout=600,
            check=False,
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr

    def playbook_env(self, mitogen, token, line=None):
        """The playbooks' environment: no token but the one given (NOMAD_TOKEN), mitogen's settings if asked."""
        mitogen = mitogen_env(line) if mitogen else {}
        return dict(self.base_env, **mitogen, **({'NOMAD_TOKEN': token} if token else {}))

    def playbook(self, path, *flags, extra=None, mitogen=True, token=None, line=None):
        """A playbook with the local inventory as `make demo` runs it (no token in the environment, unless given
        one for NOMAD_TOKEN), with ansible-playbook's flags and extra vars, given in a file so that no secret is in
        any process's argv; under mitogen's strategy unless told (mitogen_env); on the venv's Ansible, or on a
        controller line's."""
        with tempfile.NamedTemporaryFile('w', suffix='.json') as extra_file:
            json.dump(extra or {}, extra_file)
            extra_file.flush()
            argv = ansible_program('ansible-playbook', line) + ['-i', str(REPO / 'inventories' / 'local'), str(path)]
            return subprocess.run(
                argv + ['-e', '@' + extra_file.name] + list(flags),
                env=self.playbook_env(mitogen, token, line),
                capture_output=True,
                text=True,
                timeout=1800,
                check=False,
            )

    def playbook_killed_at(self, path, task, extra=None, token=None):
        """The playbook as playbook() runs it, killed (SIGKILL, with everything it started on this host) as soon as
        it prints the start of the task named `task`, like an operator's machine that dies there; its output."""
        with tempfile.NamedTemporaryFile('w', suffix='.json') as extra_file:
            json.dump(extra or {}, extra_file)
            extra_file.flush()
            argv = [str(BIN / 'ansible-playbook'), '-i', str(REPO / 'inventories' / 'local'), str(path)]
            return killed_at(argv + ['-e', '@' + extra_file.name], self.playbook_env(True, token), task)

    def site(self, *flags, extra=None, mitogen=True):
        """site.yml on the newest controller line: its converge, its check mode and its second run changed=0 there,
        the modules' own tests on the venv's line (docs/testing.md, Controller lines)."""
        return self.playbook(REPO / 'playbooks' / 'site.yml', *flags, extra=extra, mitogen=mitogen, line=NEWEST_LINE)

    def csi_plugin_role(self, extra):
        """The csi_plugin role alone (csi_plugin_only.yml), with these extra vars."""
        return self.playbook(STACK / 'csi_plugin_only.yml', '-v', extra=extra)

    def module(self, name, args, check=False, diff=False, extra_env=None, verbosity=0):
        """One collection module on this host against the stack's Nomad; its result, with the exit code in 'rc'."""
        env = dict(self.env, **(extra_env or {}))
        result = run_local_module(env, name, args, check=check, diff=diff, verbosity=verbosity)
        result['rc'] = result.rc
        return result

    def workload(self, volume, action, volume_type='csi', token=None, namespace='default'):
        """One allocation of scripts/demo-workload.nomad on the volume (batch); returns what the task printed."""
        variables = {'action': action, 'volume': volume, 'volume_type': volume_type}
        return self.batch(WORKLOAD, variables, token=token, namespace=namespace)

    def batch(self, src, variables, token=None, namespace='default'):
        """One allocation of a batch job file with its variables, run by nomad_job, which waits until the job
        completed; returns what the task printed."""
        as_token = {'NOMAD_TOKEN': token} if token else None
        job = {'src': str(src), 'variables': variables, 'namespace': namespace}
        try:
            ran = self.module('nomad_job', dict(job, wait_timeout=300), extra_env=as_token)
            assert ran['rc'] == 0, '%s with %s: %s' % (src.name, variables, ran.get('msg', ran))
            out = self.nomad('alloc', 'logs', ran['allocations'][0]['id'], token=token, namespace=namespace).stdout
        finally:
            # Also when it failed: a job left running would keep its claim on the volume.
            self.module('nomad_job', dict(job, state='absent', purge=True), extra_env=as_token)
        return out.strip()

    def volume(self, volume_id, **extra):
        args = {'id': volume_id, 'plugin_id': 'zfs', 'capacity_min': '1G', 'capacity_max': '1G'}
        args.update(extra)
        return self.module('nomad_csi_volume', args)

    def wait_healthy(self):
        result = self.module('nomad_csi_plugin_info', {'plugin_id': 'zfs', 'wait_timeout': 300})
        assert result.get('healthy'), result


def remove_test_datasets(vm):
    """The tests' volumes (t-*, demo-*) left by an earlier run: Nomad forgets volumes when its dev agent stops,
    ZFS keeps them. Clones first, so their origins can go without -R."""
    listed = []
    # And their replicas, which the backups' pulls made (site.yml's zfs_replication play).
    for parent in (PARENT, HOST_VOLUMES, 'backup/replica') + LOCAL_PARENTS:  # none exists on a freshly booted VM
        listed += vm.zfs(
            'list', '-H', '-r', '-t', 'filesystem,volume', '-o', 'name,origin', parent, check=False
        ).stdout.splitlines()
    # And tenant demo's (demo-*, the only host volumes it may mount): test_tenant_access.py's and the moves'.
    ours = [line.split('\t') for line in listed if '/t-' in line.split('\t')[0] or '/demo/demo-' in line.split('\t')[0]]
    # A test namespace's dataset (tank/nomad/volumes/t-ns) takes its volumes with it.
    ours = [pair for pair in ours if not any(pair[0].startswith(other[0] + '/') for other in ours)]
    for name, _origin in sorted(ours, key=lambda pair: pair[1] == '-'):
        vm.zfs('destroy', '-r', name)


@pytest.fixture(scope='package')
def stack(vm):
    """site.yml against the VM and its Nomad agent, as `make demo` runs it; Nomad stops afterwards."""
    started = subprocess.run(['bash', str(NOMAD_DEV), 'start'], capture_output=True, text=True, check=False)
    if started.returncode != 0:
        pytest.fail('Nomad in the VM did not start:\n' + started.stderr[-3000:])
    stack = Stack(vm)
    remove_test_datasets(vm)
    try:
        site = stack.site()
        assert site.returncode == 0, playbook_said(site)
        yield stack
    finally:
        if not vm.ending():
            subprocess.run(['bash', str(NOMAD_DEV), 'stop'], capture_output=True, check=False)
        # With no __init__.py this ends with the session: before Molecule's scenarios, which create and destroy
        # datasets under tank/nomad/csi without -r. The zfs tests stop the timers themselves (their conftest).
        vm.sh(STOP_BACKUPS, check=False)


@pytest.fixture(scope='package')
def run_local(stack):
    """Run one collection module on this host against the stack's Nomad."""
    return stack.module


@pytest.fixture
def host_volume(stack):
    """nomad_host_volume against the stack; every volume a test made is deleted with its snapshots afterwards."""
    made = []

    def run(name, check=False, **args):
        made.append(name)
        return stack.module('nomad_host_volume', dict({'name': name, 'capacity_max': '64M'}, **args), check=check)

    yield run
    for name in made:
        for snap in stack.vm.zfs(
            'list', '-H', '-o', 'name', '-t', 'snapshot', dataset(name), check=False
        ).stdout.split():
            stack.vm.zfs('destroy', snap)
        stack.module('nomad_host_volume', {'name': name, 'state': 'deleted'})
