"""nomad_csi_volume's volumes form versus a per-volume loop and `nomad volume register` CLI calls.

N volumes on the local stack (Nomad in the ZFS VM, democratic-csi zfs-generic-nfs): root creates N datasets
under the parent in one SSH session, then every way registers them against those datasets (creating N through
democratic-csi under emulation would measure the emulator). Counts the HTTP calls the agent served from its own
DEBUG log (`nomad monitor`, "http: request complete") and the wall time, all in one run on one agent.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / 'tests' / 'integration'))
from zfsvm_client import ansible_env, booted_vm, management_token  # noqa: E402

N = int(os.environ.get('BENCH_N', '200'))
PARENT = 'tank/nomad/csi'
PREFIX = 'bench-vol-'
NOMAD = Path.home() / '.cache' / 'nomad-zfs-csi' / 'bin' / 'nomad'
BIN = Path(sys.executable).parent


class Monitor(object):
    """`nomad monitor -log-level=DEBUG` into a file: the agent's own count of the HTTP requests it served."""

    def __init__(self, env, workdir):
        self.log = workdir / 'monitor.log'
        self.proc = subprocess.Popen(
            [str(NOMAD), 'monitor', '-log-level=DEBUG'], stdout=self.log.open('w'), stderr=subprocess.STDOUT, env=env
        )
        time.sleep(2)

    def served(self):
        time.sleep(1)  # the agent logs a request after answering it
        return self.log.read_text().count('http: request complete')

    def stop(self):
        self.proc.terminate()


def timed(argv, env):
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        sys.exit('%s failed:\n%s%s' % (argv[:3], proc.stdout[-3000:], proc.stderr[-2000:]))
    return time.monotonic() - start, proc.stdout


def converge(env, impl, volumes_file):
    env = dict(env, BENCH_IMPL=impl, BENCH_VOLUMES=str(volumes_file))
    argv = [str(BIN / 'ansible-playbook'), '-i', 'localhost,', '-e', 'ansible_python_interpreter=%s' % sys.executable]
    seconds, out = timed(argv + [str(HERE / 'volume_converge.yml')], env)
    return seconds, int(out.rsplit('changed=', 1)[1].split()[0])


def cli_loop(env, workdir, ids):
    start = time.monotonic()
    for vid in ids:
        spec = workdir / (vid + '.hcl')
        spec.write_text(
            'id = "%s"\nname = "%s"\ntype = "csi"\nplugin_id = "zfs"\nexternal_id = "%s"\n'
            'capability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n'
            % (vid, vid, vid)
        )
        timed([str(NOMAD), 'volume', 'register', str(spec)], env)
    return time.monotonic() - start


def main():
    workdir = Path(tempfile.mkdtemp(prefix='nzc-volume-bench-'))
    vm = booted_vm(workdir)
    env = ansible_env(ZFSVM_PORT=vm.port, ZFSVM_KEY=vm.key, NOMAD_ADDR=vm.nomad_addr, **vm.nomad_tls_env)
    timed(['bash', str(REPO / 'scripts' / 'nomad-dev.sh'), 'start'], env)
    timed(
        [
            str(BIN / 'ansible-playbook'),
            '-i',
            str(REPO / 'inventories' / 'local'),
            str(REPO / 'playbooks' / 'site.yml'),
        ],
        env,
    )
    env['NOMAD_TOKEN'] = management_token()  # after site.yml, which runs on the tokens it makes
    ids = ['%s%03d' % (PREFIX, i) for i in range(N)]
    vm.sh(
        'for v in %s; do zfs list -H %s/$v >/dev/null 2>&1 || zfs create -o refquota=64M %s/$v; done'
        % (' '.join(ids), PARENT, PARENT)
    )
    volumes = workdir / 'volumes.json'
    volumes.write_text(json.dumps([{'id': v, 'mode': 'register', 'external_id': v} for v in ids]))
    monitor = Monitor(env, workdir)
    rows = []
    try:
        for label, run in (
            ('register, volumes form (cold)', lambda: converge(env, 'bulk', volumes)),
            ('re-run, volumes form', lambda: converge(env, 'bulk', volumes)),
            ('re-run, one task per volume (loop)', lambda: converge(env, 'loop', volumes)),
            ('`nomad volume register` per volume (CLI loop)', lambda: (cli_loop(env, workdir, ids), N)),
        ):
            before = monitor.served()
            seconds, changed = run()
            rows.append((label, seconds, monitor.served() - before, changed))
            print('%s: %.1f s, %d HTTP calls' % rows[-1][:3], file=sys.stderr)
        volumes.write_text(
            json.dumps([{'id': v, 'mode': 'register', 'external_id': v, 'state': 'absent'} for v in ids])
        )
        converge(env, 'bulk', volumes)
    finally:
        monitor.stop()
        vm.sh('for v in %s; do zfs destroy %s/$v 2>/dev/null; done; true' % (' '.join(ids), PARENT))
    version = subprocess.run([str(NOMAD), 'version'], capture_output=True, text=True, check=True).stdout.split('\n')[0]
    print(
        '# nomad_csi_volume: %d volumes registered against existing datasets (%s in the ZFS VM, democratic-csi '
        'zfs-generic-nfs)\n' % (N, version)
    )
    print('| run | wall s | HTTP calls | per volume | recap changed / writes |')
    print('|---|---|---|---|---|')
    for label, seconds, http, changed in rows:
        print('| %s | %.1f | %d | %.2f | %d |' % (label, seconds, http, http / N, changed))
    cli, bulk = rows[3][1], rows[1][1]
    print('\nvolumes-form re-run vs CLI loop: %.1fx faster.' % (cli / bulk))


if __name__ == '__main__':
    main()
