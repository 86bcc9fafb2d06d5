"""The plugin under Nomad's docker driver (the pack's production default, with the image built here) against the same
plugin under raw_exec (democratic-csi from source with the VM's Node, as the local stack runs it): the time from
`nomad-pack run` to a healthy plugin, and from a volume's create to a workload's first write into it. Same run, same
stack, the two ways in turn for BENCH_N rounds (3); each deployed beside the stack's own plugin, with a plugin id of
its own.

- **pack run to healthy**: each job's Nomad Variable (the SSH key), `nomad-pack run`, then nomad_csi_plugin_info
  until the controller and the node are healthy (Stack.pack_plugin).
- **create to first write**: nomad_csi_volume creates a 1 GiB volume (democratic-csi makes the dataset and its NFS
  export over SSH); then scripts/demo-workload.nomad (exec driver) mounts it and writes a file, and prints the VM's
  clock when it wrote: read against the VM's clock at the create's start, to the second. "done" is when nomad_job
  saw the batch job complete.

Emulated VM (qemu TCG, one vCPU): the figures compare the two drivers in one run, not what real hardware takes.
"""

import calendar
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO / 'tests' / 'integration' / 'stack'), str(REPO / 'tests' / 'integration')]
from conftest import Stack  # noqa: E402
from zfsvm_client import STOP_BACKUPS, bench_vm  # noqa: E402

CI = REPO / 'packs' / 'zfs_csi' / '.ci'
DOCKER = CI / 'vars-zfs-generic-nfs-docker-local-stack.hcl'
RAW_EXEC = CI / 'vars-zfs-generic-nfs-local-stack.hcl'
RAW_PLUGIN = 'zfs-raw'
ROUNDS = int(os.environ.get('BENCH_N', '3'))


def raw_exec_vars(workdir):
    """The local stack's own variables file under another plugin id (with its own instance id and the node's
    staging directory, which Nomad names after the plugin), so that it runs beside the stack's plugin `zfs`."""
    text = RAW_EXEC.read_text()
    text = re.sub(r'(?m)^instance_id\s*=.*$', 'instance_id = "7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"', text)
    text = re.sub(r'(?m)^(stage_publish_base_dir\s*=\s*".*/)zfs"$', r'\g<1>%s"' % RAW_PLUGIN, text)
    path = workdir / 'vars-raw-exec.hcl'
    path.write_text(text + 'plugin_id = "%s"\n' % RAW_PLUGIN)
    return path


def vm_clock(vm):
    return float(vm.sh('date +%s.%N').stdout)


def one_way(stack, varfile, plugin):
    jobs = (plugin + '-controller', plugin + '-node')
    key = open(stack.env['ZFSVM_KEY']).read()
    volume = 'bench-' + plugin
    started = time.monotonic()
    with stack.pack_plugin(varfile, plugin, jobs, secrets={jobs[0]: {'ssh_private_key': key}}):
        healthy = time.monotonic() - started
        args = {'plugin_id': plugin, 'capacity_min': '1G', 'capacity_max': '1G'}
        vm_start = vm_clock(stack.vm)
        started = time.monotonic()
        try:
            made = stack.volume(volume, **args)
            assert made['rc'] == 0 and made['changed'], made
            created = time.monotonic() - started
            written = stack.workload(volume, 'write')
            done = time.monotonic() - started
        finally:
            stack.volume(volume, **dict(args, state='deleted'))
    stamp = re.search(r'-at-(\S+)$', written)
    assert stamp, written
    first_write = calendar.timegm(time.strptime(stamp.group(1), '%Y-%m-%dT%H:%M:%SZ')) - vm_start
    return {
        'pack run to healthy': round(healthy, 1),
        'create': round(created, 1),
        'create to first write': round(first_write),
        'create to workload done': round(done, 1),
    }


def main():
    vm = bench_vm()
    vm.sh(STOP_BACKUPS)
    stack = Stack(vm)
    runs = {}
    with tempfile.TemporaryDirectory() as workdir:
        ways = [
            ('raw_exec (source, Node of the VM)', raw_exec_vars(Path(workdir)), RAW_PLUGIN),
            ('docker (image, privileged)', DOCKER, 'zfs-docker'),
        ]
        for _round in range(ROUNDS):  # the ways in turn, so that a slow minute of the host weighs on both
            for label, varfile, plugin in ways:
                runs.setdefault(label, []).append(one_way(stack, varfile, plugin))
    columns = ['pack run to healthy', 'create', 'create to first write', 'create to workload done']
    print('# democratic-csi v1.9.4 (zfs-generic-nfs) under docker and under raw_exec: seconds, median (min to max)')
    print('# of %d rounds\n' % ROUNDS)
    print('| way | %s |' % ' | '.join(columns))
    print('|---|%s' % ('---|' * len(columns)))
    for label, rows in runs.items():
        cells = []
        for column in columns:
            values = [row[column] for row in rows]
            cells.append('%s (%s to %s)' % (statistics.median(values), min(values), max(values)))
        print('| %s | %s |' % (label, ' | '.join(cells)))
    print('\n```json\n%s\n```' % json.dumps(runs, indent=1))


if __name__ == '__main__':
    main()
