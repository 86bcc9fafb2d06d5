"""What the benchmarks' anchors need in the VM: rsync, which the VM image lacks (copied in from this host, both
Debian 12), and a root key of the benchmark's own for SSH to 127.0.0.1, removed afterwards."""

import os
import subprocess
from pathlib import Path

RSYNC = '/usr/bin/rsync'


def install_rsync(vm, work):
    """rsync and its libraries under work in the VM; the command that runs it there."""
    vm.sh('mkdir -p %s/lib' % work)
    libs = subprocess.run(['ldd', RSYNC], capture_output=True, text=True, check=True).stdout
    for path in [RSYNC] + [w for w in libs.split() if w.startswith('/') and 'libc.so' not in w and 'ld-' not in w]:
        dest = '%s/%s' % (work, 'rsync' if path == RSYNC else 'lib/' + os.path.basename(path))
        subprocess.run(vm.ssh_argv() + ['cat > %s && chmod 755 %s' % (dest, dest)], input=Path(path).read_bytes(),
                       check=True)  # fmt: skip
    return 'env LD_LIBRARY_PATH=%s/lib %s/rsync' % (work, work)


def root_ssh(vm, work):
    """A key root authorises for itself, marked nzc-bench, and the ssh command that uses it."""
    vm.sh(
        'ssh-keygen -q -t ed25519 -N "" -C nzc-bench -f %(w)s/root_key && '
        'cat %(w)s/root_key.pub >> /root/.ssh/authorized_keys && '
        'echo "127.0.0.1 $(cut -d" " -f1,2 /etc/ssh/ssh_host_ed25519_key.pub)" > %(w)s/known_hosts' % {'w': work}
    )
    return 'ssh -i %s/root_key -o UserKnownHostsFile=%s/known_hosts -o BatchMode=yes' % (work, work)


def remove_root_key(vm):
    vm.sh('sed -i "/ nzc-bench$/d" /root/.ssh/authorized_keys', check=False)
