"""One replication cycle of N volumes: our pull (sanoid's snapshots, then the zfs_replication role's pull unit as
zfs-replica through the forced command) against syncoid run by hand as root with its defaults, and against rsync of
the mounted datasets over SSH (what file-copy movers such as VolSync do).

Two layouts, one after the other: N small volumes of BENCH_MIB MiB in one file each; and one large volume of
BENCH_LARGE_MIB MiB in files of 256 KiB, where rsync must walk every file to find the few that changed.

The local stack (site.yml applied, so the role's user, key, forced command and pull unit are in the VM), the VM
being both primary (pool tank) and standby (pool backup), as make demo has it. Each way gets its own N source
volumes of random data, so that one way's snapshots never ride along in another's sends, and no way's reads
change another's sources (a read updates a file's atime, which the next snapshot holds). Each is run three times:
the first, full copy; a cycle with nothing changed; a cycle after 1 MiB was rewritten in every volume.

Counted in the VM for each run, by the kernel's process accounting (acct(2)), so that every process of every user
counts, the forced command's and the receiving user's included, and nothing is added to time: zfs processes, ssh
client processes (one per SSH session: syncoid multiplexes its commands over one connection), and sshd's accepted
connections (its log). Accounting names a process by what it ran last: our forced command, a Python program that
execs zfs, counts as that zfs. Bytes moved: what crossed the VM's loopback interface, SSH framing and all.
"""

import json
import os
import shlex
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / 'tests' / 'integration'))
from vm_tools import install_rsync, remove_root_key, root_ssh  # noqa: E402
from zfsvm_client import STOP_BACKUPS, bench_vm  # noqa: E402

N = int(os.environ.get('BENCH_N', '20'))
MIB = int(os.environ.get('BENCH_MIB', '8'))
# Three copies of it land in pool backup (ours, syncoid's, rsync's), which is 1.88 GiB in the VM.
LARGE_MIB = int(os.environ.get('BENCH_LARGE_MIB', '512'))
# (name, volumes, MiB a volume, files a volume); a file of the large layout is 256 KiB.
LAYOUTS = [('small', N, MIB, 1), ('large', 1, LARGE_MIB, LARGE_MIB * 4)]
WORK = '/var/tmp/nzc-bench'  # not /run, which the VM mounts noexec (rsync runs from here)
SOURCES = 'tank/nomad/volumes/nzc-bench'  # under a parent the stack's forced command serves
OURS_TARGET = 'backup/replica/nzc-bench'  # under the replica parent, where zfs-replica may receive
ANCHORS = 'backup/nzc-bench'
PULL = 'zfs-replication-pull@nzc-bench.service'
PULL_CONF = '/etc/nomad-zfs-csi/pulls/nzc-bench.conf'  # the unit's EnvironmentFile
# The stack's sanoid section (roles/zfs_replication/templates/sanoid.conf.j2) for the bench's sources, with one
# kind taken every minute so that each cycle gets its own snapshot.
SANOID_CONF = (
    """[%s/ours]
\tuse_template = nomad_zfs_csi
\trecursive = yes
\tprocess_children_only = yes
\tfrequently = 8
\thourly = 0
\tdaily = 0
\tmonthly = 0

[template_nomad_zfs_csi]
\tautosnap = yes
\tautoprune = no
\tweekly = 0
\tyearly = 0
\tfrequent_period = 1
\tpre_snapshot_script = /usr/local/libexec/nomad-zfs-csi/sanoid-auto-snapshot
\tno_inconsistent_snapshot = yes
\tscript_timeout = 30
"""
    % SOURCES
)

# Run in the VM as root: runs one command with process accounting on, and prints what it counted.
MEASURE = r"""
import ctypes, json, os, struct, subprocess, sys, time
argv = json.loads(sys.argv[1])
path = sys.argv[2]
open(path, 'wb').close()
libc = ctypes.CDLL('libc.so.6', use_errno=True)
def lo_bytes():
    for line in open('/proc/net/dev'):
        name, _, fields = line.partition(':')
        if name.strip() == 'lo':
            return int(fields.split()[0])
since = int(time.time())
before = lo_bytes()
if libc.acct(path.encode()) != 0:
    sys.exit('acct: ' + os.strerror(ctypes.get_errno()))
start = time.monotonic()
run = subprocess.run(argv, capture_output=True, text=True)
seconds = time.monotonic() - start
libc.acct(None)
moved = lo_bytes() - before
if run.returncode != 0:
    sys.exit('%s failed (%d):\n%s%s' % (argv, run.returncode, run.stdout[-3000:], run.stderr[-3000:]))
data = open(path, 'rb').read()
processes = {}
for offset in range(0, len(data) - 63, 64):
    record = data[offset:offset + 64]
    if record[1] != 3:
        sys.exit('acct: record version %d, not 3' % record[1])
    uid = struct.unpack_from('<I', record, 8)[0]
    comm = record[48:64].split(b'\0')[0].decode()
    processes.setdefault(comm, {}).setdefault(str(uid), 0)
    processes[comm][str(uid)] += 1
log = subprocess.run(['journalctl', '-u', 'ssh', '--since', '@%d' % since, '--no-pager', '-o', 'cat'],
                     capture_output=True, text=True).stdout
connections = sum(1 for line in log.splitlines() if 'Accepted publickey' in line and 'from 127.0.0.1' in line)
print(json.dumps({'seconds': seconds, 'processes': processes, 'connections': connections, 'lo_bytes': moved,
                  'output': run.stdout[-2000:] + run.stderr[-2000:]}))
"""


class Bench:
    def __init__(self, vm, n, mib, files):
        self.vm = vm
        self.n, self.mib, self.files = n, mib, files
        self.uids = {}
        self.mountpoints = {}

    def sh(self, command, timeout=1800):
        return self.vm.sh(command, timeout=timeout).stdout

    def measure(self, argv):
        out = self.sh('python3 -c %s %s %s/acct' % (shlex.quote(MEASURE), shlex.quote(json.dumps(argv)), WORK))
        return json.loads(out)

    def mountpoint(self, dataset):
        if dataset not in self.mountpoints:
            out = self.sh('/usr/sbin/zfs get -H -r -o name,value mountpoint %s %s' % (SOURCES, ANCHORS))
            self.mountpoints = dict(line.split('\t') for line in out.splitlines())
        return self.mountpoints[dataset]

    def set_up(self):
        """Sources, targets, rsync (from this host: the VM image has none), root's key for the anchors, and the
        pull's configuration for the role's unit."""
        vm = self.vm
        self.sh('rm -rf %s && mkdir -p %s' % (WORK, WORK))
        self.rsync_path = install_rsync(vm, WORK)
        self.ssh = root_ssh(vm, WORK)
        if self.files == 1:
            self.sh('head -c %dM /dev/urandom > %s/data' % (self.mib, WORK))
            fill = 'cp %s/data "$m/data"' % WORK
        else:  # files of 256 KiB, named by split: data.aaaa, data.aaab, ...
            fill = 'head -c %dM /dev/urandom | split -a 4 -b 256K - "$m/data."' % self.mib
        for way in ('ours', 'syncoid', 'rsync'):
            self.sh('/usr/sbin/zfs create -p %s/%s' % (SOURCES, way))
            names = ' '.join('%s/%s/v%02d' % (SOURCES, way, i) for i in range(self.n))
            self.sh(
                'for d in %s; do /usr/sbin/zfs create -o refquota=%dM $d && '
                'm=$(/usr/sbin/zfs get -H -o value mountpoint $d) && %s || exit 1; done'
                % (names, max(256, self.mib + 256), fill)
            )
        self.sh('/usr/sbin/zfs create -p %s && /usr/sbin/zfs create -p %s/syncoid' % (OURS_TARGET, ANCHORS))
        self.sh('/usr/sbin/zfs create -p %s/rsync' % ANCHORS)
        names = ' '.join('%s/rsync/v%02d' % (ANCHORS, i) for i in range(self.n))
        self.sh('for d in %s; do /usr/sbin/zfs create $d || exit 1; done' % names)
        self.sh("mkdir -p %s/sanoid && cat > %s/sanoid/sanoid.conf <<'EOF'\n%sEOF" % (WORK, WORK, SANOID_CONF))
        self.sh(
            'printf "SOURCE=zfs-replica@127.0.0.1:%s/ours\\nPORT=22\\nTARGET=%s\\n" > %s'
            % (SOURCES, OURS_TARGET, PULL_CONF)
        )
        for user in ('root', 'zfs-replica'):
            self.uids[self.sh('id -u %s' % user).strip()] = user

    def tear_down(self):
        self.sh(
            'rm -f %s; for d in %s %s %s; do /usr/sbin/zfs destroy -r $d 2>/dev/null; done; rm -rf %s; true'
            % (PULL_CONF, SOURCES, OURS_TARGET, ANCHORS, WORK)
        )
        remove_root_key(self.vm)

    def change(self):
        """Rewrite 1 MiB of every source volume: in the middle of its one file, or four whole files of 256 KiB."""
        self.sh('head -c 1M /dev/urandom > %s/change' % WORK)
        for way in ('ours', 'syncoid', 'rsync'):
            for i in range(self.n):
                mountpoint = self.mountpoint('%s/%s/v%02d' % (SOURCES, way, i))
                if self.files == 1:
                    self.sh(
                        'dd if=%s/change of=%s/data bs=1M seek=%d count=1 conv=notrunc status=none'
                        % (WORK, mountpoint, self.mib // 2)
                    )
                else:
                    self.sh(
                        'for n in 0 1 2 3; do f=$(ls %s | sed -n "$((n * %d + 1))p"); dd if=%s/change of=%s/$f bs=256K '
                        'skip=$n count=1 conv=notrunc status=none || exit 1; done'
                        % (mountpoint, self.files // 4, WORK, mountpoint)
                    )
        self.sh('sync')

    def sanoid(self):
        """sanoid's run as sanoid.service starts it, on the bench's configuration; one new snapshot a volume."""
        # frequent_period is one minute: a run in the minute of the newest snapshot takes nothing.
        self.sh(
            'last=$(/usr/sbin/zfs list -Hp -t snapshot -o creation -s creation -r %s/ours | tail -1); now=$(date +%%s);'
            ' [ -z "$last" ] || [ $((last / 60)) -lt $((now / 60)) ] || sleep $((61 - now %% 60))' % SOURCES
        )
        before = self.snapshot_count()
        # Its own cache and run dirs: the stack's sanoid keeps a snapshot list for 15 minutes, without these.
        sanoid = ['/usr/sbin/sanoid', '--take-snapshots', '--verbose', '--configdir=%s/sanoid' % WORK]
        row = self.measure(sanoid + ['--cache-dir=%s/sanoid/cache' % WORK, '--run-dir=%s/sanoid/run' % WORK])
        assert self.snapshot_count() == before + self.n, row['output']
        return row

    def snapshot_count(self):
        out = self.sh('/usr/sbin/zfs list -H -t snapshot -o name -r %s/ours' % SOURCES)
        return len(out.split())

    def ours(self):
        snap = self.sanoid()
        pull = self.measure(['systemctl', 'start', PULL])
        return dict(combine(snap, pull), snapshots=self.summary(snap))

    def syncoid(self):
        return self.measure(
            ['/usr/sbin/syncoid', '--recursive', '--skip-parent', '--sshkey=%s/root_key' % WORK,
             '--sshoption=UserKnownHostsFile=%s/known_hosts' % WORK,
             'root@127.0.0.1:%s/syncoid' % SOURCES, '%s/syncoid' % ANCHORS]
        )  # fmt: skip

    def rsync(self):
        script = ' && '.join(
            'rsync -a --delete --rsync-path=%s -e %s %s/ root@127.0.0.1:%s/'
            % (
                shlex.quote(self.rsync_path),
                shlex.quote(self.ssh),
                self.mountpoint('%s/rsync/v%02d' % (SOURCES, i)),
                self.mountpoint('%s/rsync/v%02d' % (ANCHORS, i)),
            )
            for i in range(self.n)
        )
        return self.measure(
            ['env', 'PATH=%s:/usr/bin:/bin' % WORK, 'LD_LIBRARY_PATH=%s/lib' % WORK, 'sh', '-c', script]
        )

    def summary(self, row):
        zfs = row['processes'].get('zfs', {})
        return {
            'seconds': row['seconds'],
            'zfs': sum(zfs.values()),
            'zfs_by_user': {self.uids.get(uid, uid): count for uid, count in zfs.items()},
            'ssh': sum(row['processes'].get('ssh', {}).values()),
            'snapshots': row.get('snapshots'),
            'connections': row['connections'],
            'lo_bytes': row['lo_bytes'],
        }


def combine(a, b):
    processes = {}
    for row in (a, b):
        for comm, by_uid in row['processes'].items():
            for uid, count in by_uid.items():
                processes.setdefault(comm, {}).setdefault(uid, 0)
                processes[comm][uid] += count
    return {
        'seconds': a['seconds'] + b['seconds'],
        'processes': processes,
        'connections': a['connections'] + b['connections'],
        'lo_bytes': a['lo_bytes'] + b['lo_bytes'],
        'output': a['output'] + b['output'],
    }


WAYS = [
    ("ours: sanoid, then the role's pull as zfs-replica", 'ours'),
    ('syncoid as root, its defaults', 'syncoid'),
    ('rsync of the mounted datasets, one per volume', 'rsync'),
]


def main():
    vm = bench_vm()
    timers = vm.sh("systemctl list-units --state=active --plain --no-legend 'zfs-replication-pull@*.timer' "
                   "sanoid.timer | cut -d' ' -f1").stdout.split()  # fmt: skip
    vm.sh(STOP_BACKUPS)
    rows, idle = [], None
    try:
        for layout, n, mib, files in LAYOUTS:
            bench = Bench(vm, n, mib, files)
            bench.tear_down()
            bench.set_up()
            if idle is None:
                idle = bench.summary(bench.measure(['sleep', '10']))
            for cycle in ('full', 'unchanged', 'changed'):
                if cycle == 'changed':
                    bench.change()
                for label, way in WAYS:
                    rows.append(dict(bench.summary(getattr(bench, way)()), way=label, cycle=cycle, layout=layout))
            bench.tear_down()
    finally:
        Bench(vm, 0, 0, 1).tear_down()
        if timers:
            vm.sh('systemctl start %s' % ' '.join(timers))
    version = vm.sh('/usr/sbin/zfs version | head -1').stdout.strip()
    print('# One replication cycle (%s, the VM its own standby)\n' % version)
    print('Layouts: small, %d volumes of %d MiB in one file each; large, one volume of %d MiB in %d files.\n'
          % (N, MIB, LARGE_MIB, LARGE_MIB * 4))  # fmt: skip
    print(
        'With nothing running, over 10 s: %d zfs processes, %d ssh sessions, %.0f bytes a second on loopback.\n'
        % (idle['zfs'], idle['ssh'], idle['lo_bytes'] / 10)
    )
    print(
        '| layout | cycle | way | seconds | of which snapshots | zfs processes (by user) | ssh sessions '
        '| SSH connections | MiB on loopback |'
    )
    print('|---|---|---|---|---|---|---|---|---|')
    for row in rows:
        users = ', '.join('%s %d' % item for item in sorted(row['zfs_by_user'].items()))
        users = ' (%s)' % users if users else ''
        snap = row['snapshots']
        print(
            '| %s | %s | %s | %.1f | %s | %d%s | %d | %d | %.2f |'
            % (row['layout'], row['cycle'], row['way'], row['seconds'],
               '%.1f s, %d zfs' % (snap['seconds'], snap['zfs']) if snap else '-',
               row['zfs'], users, row['ssh'], row['connections'], row['lo_bytes'] / 2**20)
        )  # fmt: skip
    print('\n```json\n%s\n```' % json.dumps(rows, indent=1))


if __name__ == '__main__':
    main()
