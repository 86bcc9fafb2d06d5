"""csi-sanity v5.6.0, the CSI conformance suite, in the VM against a plugin that Nomad runs under docker: the
controller's and the node's sockets, and staging and target paths that the plugin sees in its container
(csi-sanity-paths.sh maps them to the host)."""

import re
import shlex

from stack_layout import PARENT, SNAPSHOTS, STACK

from zfsvm_client import without_backups

PLUGINS = '/var/lib/nzc-nomad/client/csi/plugins'
HOOKS = '/tmp/csi-sanity-hooks'
# Specs that fail through democratic-csi v1.9.4 itself, each with the reason; docs/testing.md lists them.
SKIPPED = {
    'should fail when volume with single node single writer access mode is already mounted at a different '
    'target path': 'democratic-csi publishes the volume a second time instead of refusing; the leftover mount '
    'then makes every later node spec fail with "mkdir .../mount: file exists"',
    'should succeed when an invalid snapshot id is used': 'democratic-csi answers DeleteSnapshot for an unknown id '
    'with "zfs destroy" of the snapshots parent itself; the delegation refuses ("cannot unmount '
    "'/tank/nomad/csi-snapshots': permission denied\"), so the call fails instead of succeeding. "
    'test_democratic_csi.py checks that both parents survive it',
}
# The suite in three parts, by the specs' own groups: the controller's specs beside the node's and the snapshots'
# (democratic-csi serves calls side by side, and much of each is waiting: for SSH to the emulated guest, and its
# own 2-second sleep after each unshare), then the list specs alone, which count what the others would be making.
# Each part has its own staging and mount directories.
LISTS = 'ListVolumes|ListSnapshots'
PARTS = {
    'controller': ['--ginkgo.focus=Controller Service', '--ginkgo.skip=' + LISTS],
    'node-and-snapshots': ['--ginkgo.skip=Controller Service', '--ginkgo.skip=' + LISTS],
}
LAST = {'lists': ['--ginkgo.focus=' + LISTS]}
# The controller's half alone, for a driver whose node specs do not run here (zfs-generic-iscsi): what the parts
# above choose less the node's group, that is the groups named "... Controller Service" (with GroupController's,
# which skip themselves: democratic-csi has no group snapshots) and those tagged [Controller Server].
CONTROLLER = '--ginkgo.focus=Controller Service|Controller Server'
CONTROLLER_PARTS = {
    'controller': PARTS['controller'],
    'snapshots-and-expansion': [CONTROLLER] + PARTS['node-and-snapshots'],
}


class Sanity(object):
    """One deployment's sockets, and the node allocation's directory that the plugin sees as /csi."""

    def __init__(self, stack, vm, controller_job, node_job):
        self.stack, self.vm = stack, vm
        self.controller = stack.running_alloc(controller_job)
        self.node = stack.running_alloc(node_job)
        self.host_csi = '%s/%s' % (PLUGINS, self.node)
        script = (STACK / 'csi-sanity-paths.sh').read_text()
        vm.sh(
            'mkdir -p {hooks} && cat > {hooks}/paths <<"EOF"\n{script}EOF\nchmod 0755 {hooks}/paths && '
            'for hook in create remove check; do ln -sf paths {hooks}/$hook; done'.format(hooks=HOOKS, script=script)
        )

    def argv(self, part, flags):
        """csi-sanity in the VM for one part, skipping SKIPPED (plain words; ginkgo takes a regular expression)."""
        work, paths = '/tmp/csi-sanity/' + part, '/csi/sanity/' + part
        return [
            'mkdir -p %s && cd %s && CSI_SANITY_HOST_CSI=%s timeout 1500 /opt/nzc/bin/csi-sanity'
            % (work, work, self.host_csi),
            '--csi.endpoint=unix://%s/%s/csi.sock' % (PLUGINS, self.node),
            '--csi.controllerendpoint=unix://%s/%s/csi.sock' % (PLUGINS, self.controller),
            '--csi.stagingdir=%s/staging --csi.mountdir=%s/mount' % (paths, paths),
            '--csi.createstagingpathcmd={0}/create --csi.createmountpathcmd={0}/create'.format(HOOKS),
            '--csi.removestagingpathcmd={0}/remove --csi.removemountpathcmd={0}/remove'.format(HOOKS),
            '--csi.checkpathcmd=%s/check' % HOOKS,
            '--csi.testvolumesize=67108864 --csi.testvolumeexpandsize=134217728',
            '--ginkgo.no-color',
            '--ginkgo.skip=' + shlex.quote('|'.join(SKIPPED)),
        ] + [shlex.quote(flag) for flag in flags]

    def sockets(self):
        return ['%s/%s/csi.sock' % (PLUGINS, alloc) for alloc in (self.controller, self.node)]

    def task_events(self):
        """What Nomad says happened to the two allocations' tasks (restarts, kills), for a failure message."""
        lines = []
        for alloc in (self.controller, self.node):
            found = self.stack.get('/v1/allocation/' + alloc)
            for task, state in sorted((found.get('TaskStates') or {}).items()):
                events = ['%s %s' % (e.get('Type'), e.get('DisplayMessage', '')) for e in state.get('Events') or []]
                restarts = '%s (%s restarts)' % (task, state.get('Restarts'))
                lines.append('%s %s %s: %s' % (alloc[:8], found['ClientStatus'], restarts, '; '.join(events[-6:])))
        return '\n'.join(lines)

    def whole_suite(self, flags=()):
        """What one process would run: ginkgo's dry run of every part together (of those flags choose)."""
        return self.vm.sh(' '.join(self.argv('all', flags) + ['--ginkgo.dry-run 2>&1'])).stdout

    def leftovers(self):
        """What the node specs left in the plugin's directory: anything but the directories the hooks made."""
        found = self.vm.sh('find %s/sanity -mindepth 1 ! -type d 2>/dev/null || true' % self.host_csi).stdout.split()
        mounts = [line for line in self.vm.sh('cat /proc/mounts').stdout.splitlines() if self.host_csi in line]
        self.vm.sh('rm -rf --one-file-system %s/sanity' % self.host_csi)
        return found + mounts


def run(vm, parts):
    """Parts of one or more deployments side by side, {label: (Sanity, flags)}; {label: (exit code, output)}. Each
    plugin's sockets first: csi-sanity fails at once on one that is not there (yet, or again after a restart, which
    the failure message then shows)."""
    sockets = sorted(set(path for sanity, _flags in parts.values() for path in sanity.sockets()))
    wait = (
        'for i in $(seq 120); do ok=1; for s in %s; do test -S $s || ok=0; done; [ $ok = 1 ] && exit 0; sleep 1; done'
    )
    vm.sh(wait % ' '.join(sockets), check=False, timeout=300)
    script = ['rm -rf /tmp/csi-sanity /tmp/csi-sanity-*.log /tmp/csi-sanity-*.rc']
    for label, (sanity, flags) in parts.items():
        script.append(
            '( %s > /tmp/csi-sanity-%s.log 2>&1; echo $? > /tmp/csi-sanity-%s.rc ) &'
            % (' '.join(sanity.argv(label, flags)), label, label)
        )
    vm.sh('\n'.join(script + ['wait']), timeout=1600)
    return {
        label: (
            int(vm.sh('cat /tmp/csi-sanity-%s.rc' % label).stdout),
            vm.sh('cat /tmp/csi-sanity-%s.log' % label).stdout,
        )
        for label in parts
    }


def run_suites(vm, suites):
    """Deployments' suites, {name: (Sanity, parts, the whole suite's flags)}, in two rounds of processes side by side.
    A deployment's list specs (LAST) count what its other parts make, so they run in the other round: the first
    deployment's parts beside the second's lists, then the other way round (and so on, alternating). Each
    deployment's parts must add up to its whole suite: every spec but the skipped ones ran once.
    {name-part: (exit code, output)}."""
    rounds = ({}, {})
    for index, (name, (sanity, parts, _whole)) in enumerate(suites.items()):
        first, then = rounds if index % 2 == 0 else reversed(rounds)
        first.update((name + '-' + part, (sanity, flags)) for part, flags in parts.items())
        then.update((name + '-' + part, (sanity, flags)) for part, flags in LAST.items())
    ran = dict(run(vm, rounds[0]), **run(vm, rounds[1]))
    for label, (code, out) in ran.items():
        events = suites[label.split('-', 1)[0]][0].task_events() if code else ''
        assert code == 0, label + ':\n' + summary(out) + '\n' + out[-6000:] + '\n' + events
    for name, (sanity, _parts, whole_flags) in suites.items():
        whole = sanity.whole_suite(whole_flags)
        counted = sum(specs_to_run(out) for label, (_code, out) in ran.items() if label.startswith(name + '-'))
        assert counted == specs_to_run(whole), name + ':\n' + whole[-2000:]
    return ran


def storage_state(vm):
    """Every dataset and snapshot with its guid, the parents' grants, the exports and the NFS mounts:
    csi-sanity cleans up after itself, and must not have touched anything else. The backups' scheduled snapshots
    and bookmarks come and go on their own timers."""
    return (
        without_backups(vm.zfs('list', '-H', '-r', '-t', 'all', '-o', 'name,guid', 'tank').stdout),
        [vm.zfs('allow', p).stdout for p in (PARENT, SNAPSHOTS)],
        vm.sh('exportfs -s; grep -c nfs4 /proc/mounts || true').stdout,
    )


def specs_to_run(out):
    """What ginkgo chose to run, before the specs that skip themselves (capabilities democratic-csi lacks)."""
    will = re.search(r'Will run (\d+) of \d+ specs', out)
    assert will and re.search(r'Ran \d+ of \d+ Specs', out), out[-2000:]
    return int(will.group(1))


def summary(out):
    return '\n'.join(line for line in out.splitlines() if re.search(r'Passed|Failed|\[FAIL\]', line))
