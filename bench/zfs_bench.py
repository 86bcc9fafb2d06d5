"""zfs_dataset versus community.general.zfs: 50 datasets x 4 properties, cold and idempotent.

Counts zfs processes (a wrapper on the VM's PATH logs each one), `zfs set` calls,
and wall time of whole converges, for both modules in one run on the same VM.
"""

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / 'tests' / 'integration'))
from zfsvm_client import ZFS_WRAPPER, ansible_env, booted_vm  # noqa: E402

N = int(os.environ.get('BENCH_N', '50'))
REPEAT = int(os.environ.get('BENCH_REPEAT', '3'))


def converge(vm, impl, inventory):
    env = ansible_env(BENCH_N=N, BENCH_IMPL=impl)
    vm.sh(': > /run/zfs-calls.log')
    start = time.monotonic()
    proc = subprocess.run(
        [str(Path(sys.executable).parent / 'ansible-playbook'), '-i', str(inventory), str(HERE / 'zfs_converge.yml')],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit('converge %s failed:\n%s%s' % (impl, proc.stdout[-3000:], proc.stderr[-2000:]))
    calls = vm.zfs_calls()
    changed = int(proc.stdout.rsplit('changed=', 1)[1].split()[0])
    return {
        'seconds': elapsed,
        'zfs': len(calls),
        'sets': sum(1 for c in calls if c.startswith('set ')),
        'changed': changed,
    }


def main():
    vm = booted_vm(Path(os.environ.get('TMPDIR', '/tmp')) / 'nzc-bench')
    vm.sh("cat > /usr/local/sbin/zfs <<'EOF'\n%sEOF\nchmod 755 /usr/local/sbin/zfs" % ZFS_WRAPPER)
    version = vm.sh('/usr/sbin/zfs version | head -1').stdout.strip()
    rows = {}
    for impl in ('ours', 'anchor'):
        vm.sh(
            '/usr/sbin/zfs destroy -r tank/bench/%s 2>/dev/null; /usr/sbin/zfs create -p tank/bench/%s' % (impl, impl)
        )
        cold = converge(vm, impl, vm.inventory)
        idem = [converge(vm, impl, vm.inventory) for _run in range(REPEAT)]
        rows[impl] = (cold, idem)
        print('%s cold %s idempotent %s' % (impl, cold, idem), file=sys.stderr)

    def med(runs, key):
        return statistics.median(r[key] for r in runs)

    ours, anchor = rows['ours'], rows['anchor']
    print(
        '# zfs_dataset vs community.general.zfs: %d datasets x 4 properties (%s, %d idempotent runs)\n'
        % (N, version, REPEAT)
    )
    print('| run | module | wall s (median) | zfs processes | per dataset | zfs set calls | recap changed |')
    print('|---|---|---|---|---|---|---|')
    for label, impl in (('nomad_zfs.csi.zfs_dataset', 'ours'), ('community.general.zfs', 'anchor')):
        cold, idem = rows[impl]
        print(
            '| cold | %s | %.1f | %d | %.1f | %d | %d |'
            % (label, cold['seconds'], cold['zfs'], cold['zfs'] / N, cold['sets'], cold['changed'])
        )
        print(
            '| idempotent | %s | %.1f | %d | %.1f | %d | %d |'
            % (
                label,
                med(idem, 'seconds'),
                med(idem, 'zfs'),
                med(idem, 'zfs') / N,
                med(idem, 'sets'),
                med(idem, 'changed'),
            )
        )
    print(
        '\nIdempotent ratio (anchor / ours): wall time %.2fx, zfs processes %.1fx.'
        % (med(anchor[1], 'seconds') / med(ours[1], 'seconds'), med(anchor[1], 'zfs') / max(med(ours[1], 'zfs'), 1))
    )


if __name__ == '__main__':
    main()
