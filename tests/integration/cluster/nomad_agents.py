"""The Nomad cluster of the separate hosts, as an operator runs one before the collection's first run: a server on
nomad.example.internal, a client on each client host, over mutual TLS on every port, with ACLs on. Its certificates
are made as docs/deploy.md says: `nomad tls ca create`, then the server's with `-additional-dnsname` for the name
the inventory's addresses use, a client's and the CLI's. The collection does not install Nomad; this module does
what the operator did."""

import subprocess

from separate_hosts import ADDRESSES
from zfsvm_client import CACHE, NOMAD_EMULATED_CPU, REPO, wait_until

SERVER = 'nomad.example.internal'
NOMAD = 'https://%s:4646' % SERVER
TLS = '/etc/nomad.d/tls'
# What each kind of host holds of the CA's files (deploy.md's table): the CA and its own certificate, no more. The
# CLI certificate stays on the admin host.
SERVER_FILES = ('nomad-agent-ca.pem', 'global-server-nomad.pem', 'global-server-nomad-key.pem')
CLIENT_FILES = ('nomad-agent-ca.pem', 'global-client-nomad.pem', 'global-client-nomad-key.pem')
CHROOT = '/var/lib/nzc-chroot'

COMMON = """data_dir             = "/var/lib/nomad"
bind_addr            = "0.0.0.0"
disable_update_check = true
acl {
  enabled = true
}
tls {
  http                   = true
  rpc                    = true
  verify_server_hostname = true
  verify_https_client    = true
  ca_file                = "%(tls)s/nomad-agent-ca.pem"
  cert_file              = "%(tls)s/global-%(role)s-nomad.pem"
  key_file               = "%(tls)s/global-%(role)s-nomad-key.pem"
}
"""
SERVER_CONFIG = """advertise {
  http = "%(address)s"
  rpc  = "%(address)s"
  serf = "%(address)s"
}
server {
  enabled          = true
  bootstrap_expect = 1
}
"""
# The drivers as the local stack's (scripts/nomad-client-drivers.hcl): tenants' exec tasks run as nobody with no
# capabilities, in a chroot tree of copies (scripts/exec-chroot.sh); raw_exec runs democratic-csi from the tools disk,
# since the hosts cannot run Docker (their root is an overlay, on which dockerd's overlay2 refuses to store images).
# The hosts have no default route, which Nomad's fingerprint looks for: the interface is named.
CLIENT_CONFIG = """client {
  enabled                = true
  servers                = ["%(server)s:4647"]
  network_interface      = "eth0"
  host_volume_plugin_dir = "/usr/local/libexec/nomad-host-volume-plugins"
  chroot_env = {
    "%(chroot)s/bin"   = "/bin"
    "%(chroot)s/lib"   = "/lib"
    "%(chroot)s/lib64" = "/lib64"
    "%(chroot)s/etc"   = "/etc"
  }
}
"""
UNIT = """[Unit]
Description=Nomad
After=network-online.target
[Service]
Environment=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ExecStart=/opt/nzc/bin/nomad agent -config /etc/nomad.d/nomad.hcl
KillMode=process
Restart=on-failure
[Install]
WantedBy=multi-user.target
"""


def make_tls(directory):
    """The CA and the certificates, made in directory with this host's nomad as deploy.md says."""
    for argv in (
        ['ca', 'create'],
        ['cert', 'create', '-server', '-additional-dnsname', SERVER],
        ['cert', 'create', '-client'],
        ['cert', 'create', '-cli'],
    ):
        subprocess.run([str(CACHE / 'bin' / 'nomad'), 'tls'] + argv, cwd=directory, check=True, capture_output=True)


def common(role):
    """What every agent's configuration has: mutual TLS and ACLs, and the statistics interval and handshake limits of
    all the tests' agents for the emulated CPU."""
    return COMMON % {'tls': TLS, 'role': role} + NOMAD_EMULATED_CPU.read_text()


def install(host, tls_dir, files, config):
    """The agent's files on host, and its unit started."""
    pem = ''.join("cat > %s/%s <<'EOF'\n%sEOF\n" % (TLS, name, (tls_dir / name).read_text()) for name in files)
    host.sh(
        "install -d -m 700 %s && umask 077\n%scat > /etc/nomad.d/nomad.hcl <<'EOF'\n%s\nEOF\n"
        "cat > /etc/systemd/system/nomad.service <<'EOF'\n%s\nEOF\n"
        'systemctl daemon-reload && systemctl enable -q --now nomad' % (TLS, pem, config, UNIT)
    )


def start_server(host, tls_dir):
    install(
        host,
        tls_dir,
        SERVER_FILES,
        common('server') + SERVER_CONFIG % {'address': ADDRESSES[host.name]},
    )


# The exec chroot tree is a tmpfs, empty after every boot: built by a unit of its own before the agent starts, which
# fingerprints exec's chroot_env at its start. Without it, every exec task placed after a reboot failed ("file
# /bin/sh not found under path /var/lib/nomad/alloc/<id>/t").
CHROOT_UNIT = (
    """[Unit]
Description=The exec driver's chroot tree
Before=nomad.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/bash /usr/local/sbin/nzc-exec-chroot %s
[Install]
RequiredBy=nomad.service
"""
    % CHROOT
)


def start_client(host, tls_dir):
    host.sh(
        "cat > /usr/local/sbin/nzc-exec-chroot <<'EOF'\n%sEOF\n"
        "cat > /etc/systemd/system/nzc-exec-chroot.service <<'EOF'\n%sEOF\n"
        'systemctl daemon-reload && systemctl enable -q --now nzc-exec-chroot'
        % ((REPO / 'scripts' / 'exec-chroot.sh').read_text(), CHROOT_UNIT)
    )
    config = common('client') + CLIENT_CONFIG % {'server': SERVER, 'chroot': CHROOT}
    config += (REPO / 'scripts' / 'nomad-client-drivers.hcl').read_text()
    install(host, tls_dir, CLIENT_FILES, config)


def node_name(host):
    """The name Nomad gives the node of an inventory host: its host name, which /etc/hostname holds short."""
    return host.split('.', maxsplit=1)[0]


def ready_nodes(api, names):
    """The clients' nodes once each is ready, by name."""

    def read():
        return {n['Name']: n for n in api('GET', '/v1/nodes') if n['Status'] == 'ready'}

    return wait_until(read, lambda nodes: set(names) <= set(nodes), timeout=300, why='nodes %s ready' % (names,))


# A drop-in that holds back the unit's Restart=on-failure, in /run: gone with the host's next boot.
HELD = '/run/systemd/system/nomad.service.d/crashed.conf'


def crash_agent(host):
    """The host's agent dies (SIGKILL) and stays dead; its tasks run on, outside its unit's cgroup, as a crashed
    client's do."""
    host.sh(
        "mkdir -p %s && printf '[Service]\\nRestart=no\\n' > %s && systemctl daemon-reload && "
        'systemctl kill --kill-whom=main -s KILL nomad' % (HELD.rsplit('/', 1)[0], HELD)
    )


def start_agent(host):
    host.sh('rm -f %s && systemctl daemon-reload && systemctl reset-failed nomad; systemctl start nomad' % HELD)


def task_pids(vm, alloc_id):
    """The processes of an allocation's tasks, on whichever host: the exec driver runs each task in a scope of its
    own, <alloc>.<task>.scope, and the VM sees every host's cgroups. A scope that ends while it is read has no
    processes left: the read of its vanished files is not an error."""
    return vm.sh(
        'find /sys/fs/cgroup -path "*/%s.*.scope/cgroup.procs" -exec cat {} + 2>/dev/null; true' % alloc_id
    ).stdout.split()
