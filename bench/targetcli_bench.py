"""One iSCSI volume's target, made and taken back: the storage_host role's confined targetcli (rtslib in its own
process, as the service user through its sudo rule) against root's targetcli (`sudo targetcli`, what democratic-csi
runs when its user may run everything), with democratic-csi v1.9.4's own createShare and deleteShare scripts for
a zvol of the parent (tests/integration/stack/iscsi_stack.py). Wall and CPU seconds in the guest per call, the
median of BENCH_N (10) calls of each, the two ways in turn; same run, same VM.

The storage instance is test_iscsi_target.py's (iscsi_host.yml), undone afterwards. Emulated VM (qemu TCG): the
figures compare the two ways, not what real hardware does.
"""

import os
import shlex
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO / 'tests' / 'integration' / 'stack'), str(REPO / 'tests' / 'integration')]
import iscsi_stack  # noqa: E402
from conftest import Stack  # noqa: E402
from zfsvm_client import bench_vm  # noqa: E402

ROUNDS = int(os.environ.get('BENCH_N', '10'))
VOLUME = 'bench-target'
# bash's own clock for the one command: wall, then user and system CPU seconds, on stderr.
TIMED = "TIMEFORMAT='%%R %%U %%S'; time ( sh -c '%s' >/dev/null )"


def call(vm, way, text):
    """(wall s, CPU s) of one script through one way; the way must succeed."""
    timed = TIMED % iscsi_stack.targetcli_pipe(text)
    ran = vm.sh('bash -c ' + shlex.quote(timed), user=iscsi_stack.USER if way == 'confined' else 'root')
    wall, user, system = (float(field) for field in ran.stderr.split()[-3:])
    return wall, round(user + system, 3)


def main():
    vm = bench_vm()
    stack = Stack(vm)
    runs = {}
    with iscsi_stack.host_undone_after(vm):
        prepared = stack.playbook(iscsi_stack.PLAYBOOK, extra=dict(iscsi_stack.STORAGE, **iscsi_stack.INITIATOR))
        assert prepared.returncode == 0, prepared.stdout[-3000:]
        vm.sh('zfs create -V 64M %s/%s && udevadm settle' % (iscsi_stack.PARENT, VOLUME), user=iscsi_stack.USER)
        for _round in range(ROUNDS):  # in turn, so that a slow minute of the host weighs on each
            for way in ('confined', 'root'):
                for step, template in (('create', iscsi_stack.CREATE), ('delete', iscsi_stack.DELETE)):
                    runs.setdefault((way, step), []).append(call(vm, way, iscsi_stack.script(template, VOLUME)))
                    exported = 'iscsi/%s:%s' % (iscsi_stack.BASENAME, VOLUME) in iscsi_stack.targets(vm)
                    assert exported == (step == 'create'), (way, step)
    report(runs, vm.sh("dpkg-query -W -f '${Package} ${Version}, ' targetcli-fb python3-rtslib-fb").stdout[:-2])


def report(runs, versions):
    print("# One volume's target (%s): median (min to max) of %d calls\n" % (versions, ROUNDS))
    print('| way | step | wall s | CPU s |')
    print('|---|---|---|---|')
    for (way, step), calls in runs.items():
        cells = []
        for column in range(2):
            values = [row[column] for row in calls]
            cells.append('%s (%s to %s)' % (round(statistics.median(values), 3), min(values), max(values)))
        print('| %s | %s | %s |' % (way, step, ' | '.join(cells)))


if __name__ == '__main__':
    main()
