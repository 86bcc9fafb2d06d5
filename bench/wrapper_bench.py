"""democratic-csi's volume lifecycle through the storage_host zfs wrapper versus "sudo zfs" for everything.

Applies the storage half of site.yml to the VM (which installs the wrapper), then runs
bench/wrapper_lifecycle.sh on it in both modes in the same run: wall time per lifecycle
(create, share, snapshot, clone, two destroys) and zfs processes per lifecycle.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / 'tests' / 'integration'))
from zfsvm_client import booted_vm, converged_stack  # noqa: E402

N = int(os.environ.get('BENCH_N', '10'))
PARENT = 'tank/nomad/csi'


def main():
    vm = booted_vm(Path(os.environ.get('TMPDIR', '/tmp')) / 'nzc-bench')
    converged_stack(vm, limit='storage_hosts')  # the storage half, which installs the wrapper
    vm.sh("cat > /tmp/wrapper_lifecycle.sh <<'EOF'\n%sEOF" % (HERE / 'wrapper_lifecycle.sh').read_text())
    version = vm.sh('/usr/sbin/zfs version | head -1').stdout.strip()
    rows = []
    for mode, user in (('wrapper', 'csi'), ('sudo', 'root')):
        out = vm.sh('sh /tmp/wrapper_lifecycle.sh %s %d %s' % (mode, N, PARENT), user=user).stdout
        rows.append(dict(field.split('=', 1) for field in out.split()))
    print('# democratic-csi volume lifecycle on the storage host (%s, %d lifecycles each)\n' % (version, N))
    print('| how zfs runs | ms per lifecycle | zfs processes per lifecycle |')
    print('|---|---|---|')
    for row in rows:
        label = {
            'wrapper': 'zfs wrapper as csi (zfs_sudo=false)',
            'sudo': 'sudo zfs for every command (zfs_sudo=true)',
        }[row['mode']]
        print('| %s | %s | %s |' % (label, row['ms_per_lifecycle'], row['zfs_processes_per_lifecycle']))
    print(
        '\nwrapper / sudo: time %.2fx, zfs processes %.1fx.'
        % (
            int(rows[0]['ms_per_lifecycle']) / int(rows[1]['ms_per_lifecycle']),
            int(rows[0]['zfs_processes_per_lifecycle']) / int(rows[1]['zfs_processes_per_lifecycle']),
        )
    )


if __name__ == '__main__':
    main()
