"""nomad_job versus community.general.nomad_job: N small jobs, cold and idempotent.

Counts the HTTP calls the agent served (its own DEBUG log, "http: request complete")
and the wall time of whole converges, for both modules in one run on one dev agent.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / 'tests' / 'integration'))
from nomad_agent import build_tools, start_agent  # noqa: E402
from zfsvm_client import ansible_env  # noqa: E402

N = int(os.environ.get('BENCH_N', '20'))
# The anchor needs the `ansible` package's community.general; ours needs only this venv.
ANSIBLE_BIN = Path(os.environ.get('BENCH_ANSIBLE_BIN', Path(sys.executable).parent))


def served(agent):
    return (agent.workdir / 'agent.log').read_text().count('http: request complete')


def converge(agent, impl):
    env = ansible_env(BENCH_N=N, BENCH_IMPL=impl, BENCH_NOMAD_ADDR=agent.address)
    before = served(agent)
    start = time.monotonic()
    proc = subprocess.run(
        [
            str(ANSIBLE_BIN / 'ansible-playbook'),
            '-i',
            'localhost,',
            '-e',
            'ansible_python_interpreter=%s' % (ANSIBLE_BIN / 'python'),
            str(HERE / 'nomad_converge.yml'),
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit('converge %s failed:\n%s%s' % (impl, proc.stdout[-3000:], proc.stderr[-2000:]))
    time.sleep(1)  # the agent logs a request after answering it
    changed = int(proc.stdout.rsplit('changed=', 1)[1].split()[0])
    return {'seconds': elapsed, 'http': served(agent) - before, 'changed': changed}


def main():
    build_tools()
    rows = []
    for impl in ('ours', 'ours-wait', 'anchor'):
        agent = start_agent(Path(tempfile.mkdtemp(prefix='nzc-bench-')))
        try:
            cold, idem = converge(agent, impl), converge(agent, impl)
        finally:
            agent.destroy()
        rows.append((impl, cold, idem))
        print('%s cold %s idempotent %s' % (impl, cold, idem), file=sys.stderr)
    version = subprocess.run(
        [build_tools()['nomad'], 'version'], capture_output=True, text=True, check=True
    ).stdout.split('\n')[0]
    print('# nomad_job vs community.general.nomad_job: %d jobs (%s, one fresh dev agent each)\n' % (N, version))
    print('| run | module | wall s | HTTP calls | per job | recap changed |')
    print('|---|---|---|---|---|---|')
    labels = {
        'ours': 'nomad_zfs.csi.nomad_job (wait: false)',
        'ours-wait': 'nomad_zfs.csi.nomad_job (wait: true)',
        'anchor': 'community.general.nomad_job',
    }
    for impl, cold, idem in rows:
        for label, run in (('cold', cold), ('idempotent', idem)):
            cells = (label, labels[impl], run['seconds'], run['http'], run['http'] / N, run['changed'])
            print('| %s | %s | %.1f | %d | %.1f | %d |' % cells)


if __name__ == '__main__':
    main()
