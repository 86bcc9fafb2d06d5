"""inventories/example itself, converged on the separate hosts (separate_hosts.py): a Nomad server, storage-1,
backup-1 and two clients, each a host of its own with the example's name, reached by that name. The admin host is
this one, as the example's `ansible_connection: local` says, and it reaches Nomad's API at
https://nomad.example.internal:4646 through the VM as a bastion (ssh -D, a SOCKS proxy that resolves the name where
the hosts live), as a workstation outside the cluster's network does.

A copy of the example is made as docs/deploy.md says, files and all, with the secrets in the vault it says to
create (group_vars/nomad/vault.yml, its password in ANSIBLE_VAULT_PASSWORD_FILE). One file more, topology.yml (a
second inventory source), overrides what this topology must: how to reach the hosts, and what the hosts would each have
of their own but here share (the VM's kernel holds every host's pools: each host gets a parent of its own). Its
pack variables add the clients' addresses, and democratic-csi from source under raw_exec, since the hosts cannot
run Docker (nomad_agents.py)."""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile

import pytest
import requests

from nomad_agents import NOMAD, SERVER, make_tls, node_name, ready_nodes, start_client, start_server
from rulebook import rulebook
from separate_hosts import CLIENT_1, CLIENT_2
from topology import ADMIN, DATASETS, HOSTS, add_to_vault, topology, vault, vault_file
from zfsvm_client import (
    BIN,
    CACHE,
    REPO,
    ansible_env,
    changed,
    killed_at,
    mitogen_env,
    playbook_said,
    run_local_module,
    run_module_on,
    wait_until,
)


class Cluster:
    """The converged cluster: its hosts, the example's copy and this host's way to Nomad."""

    def __init__(self, vm, hosts, inventory, tls, proxy, forward, management):
        self.vm, self.hosts, self.inventory, self.tls = vm, hosts, inventory, tls
        self.proxies = {'https': proxy}
        self.forward = forward
        # The vault's password file (topology.vault), once the vault is made.
        self.vault_password = None
        self.management = management

    def request(self, method, path, body=None, token=None):
        """One call of Nomad's API with the admin host's CLI certificate, through the proxy; its response."""
        headers = {'X-Nomad-Token': token or self.management} if token or self.management else {}
        return requests.request(
            method,
            NOMAD + path,
            json=body,
            headers=headers,
            verify=str(self.tls / 'nomad-agent-ca.pem'),
            cert=(str(self.tls / 'global-cli-nomad.pem'), str(self.tls / 'global-cli-nomad-key.pem')),
            proxies=self.proxies,
            timeout=120,
        )

    def api(self, method, path, body=None, token=None):
        response = self.request(method, path, body, token)
        assert response.ok, '%s %s: %s %s' % (method, path, response.status_code, response.text)
        return response.json() if response.text.strip() else None

    def module_args(self, **args):
        """The Nomad modules' connection options as the admin host's roles have them, then args; the token apart
        (module())."""
        return {
            'nomad_addr': NOMAD,
            'ca_cert': str(self.tls / 'nomad-agent-ca.pem'),
            'client_cert': str(self.tls / 'global-cli-nomad.pem'),
            'client_key': str(self.tls / 'global-cli-nomad-key.pem'),
        } | args

    def module(self, module, token=None, **args):
        """A Nomad module run on the admin host (module_args) on token, the management token unless told, which it
        reads from NOMAD_TOKEN (no secret in any argv); its result."""
        env = dict(self.env(), NOMAD_TOKEN=token or self.management)
        return run_local_module(env, module, self.module_args(**args))

    def module_on(self, host, module, args):
        """A collection module run on one host of the example's copy, as its roles run there; its result."""
        target = ['-i', str(self.inventory / 'hosts.yml'), '-i', str(self.inventory / 'topology.yml')]
        return run_module_on(host, target, self.env(), module, args)

    def node_ids(self):
        """Each client's node ID, by its inventory host."""
        ids = {n['Name']: n['ID'] for n in self.api('GET', '/v1/nodes')}
        return {client: ids[node_name(client)] for client in (CLIENT_1, CLIENT_2)}

    def secret(self, token_name):
        return self.api('GET', '/v1/var/nomad-access/tokens/' + token_name)['Items']['secret']

    def env(self):
        """What ansible-playbook, nomad-pack and the nomad CLI run with on the admin host: nomad-pack on its PATH, as
        deploy.md says."""
        path = '%s:%s' % (CACHE / 'bin', os.environ['PATH'])
        vault_password = {'ANSIBLE_VAULT_PASSWORD_FILE': str(self.vault_password)} if self.vault_password else {}
        return ansible_env(HTTPS_PROXY=self.proxies['https'], PATH=path, **mitogen_env(), **vault_password)

    def site(self, *flags):
        """site.yml on the example's copy with topology.yml, as deploy.md runs it (the monitoring play has no host
        here); its CompletedProcess."""
        return self.playbook('site', '--skip-tags', 'metrics', *flags)

    def playbook(self, name, *flags, extra=None):
        """One of the collection's playbooks on the example's copy with topology.yml, with extra vars from a file
        (no secret in any argv); its CompletedProcess."""
        with self._playbook_argv(name, extra) as argv:
            return subprocess.run(
                argv + list(flags), env=self.env(), capture_output=True, text=True, timeout=3600, check=False
            )

    def playbook_killed_at(self, name, task, extra=None):
        """The playbook as playbook() runs it, killed (SIGKILL, with everything it started on this host) as soon as
        it prints the start of the task named `task`, like an operator's machine that dies there; its output."""
        with self._playbook_argv(name, extra) as argv:
            return killed_at(argv, self.env(), task)

    @contextlib.contextmanager
    def _playbook_argv(self, name, extra):
        """ansible-playbook's argv for one of the collection's playbooks, its extra vars in a file for as long as
        the block runs."""
        with tempfile.NamedTemporaryFile('w', suffix='.json') as extra_file:
            json.dump(extra or {}, extra_file)
            extra_file.flush()
            argv = [str(BIN / 'ansible-playbook'), '-i', str(self.inventory / 'hosts.yml')]
            argv += ['-i', str(self.inventory / 'topology.yml'), 'nomad_zfs.csi.' + name, '-e', '@' + extra_file.name]
            yield argv

    def variable(self, path, namespace):
        """The items of a Nomad Variable, or None where there is none."""
        response = self.request('GET', '/v1/var/%s?namespace=%s' % (path, namespace))
        if response.status_code == 404:
            return None
        assert response.ok, '%s: %s %s' % (path, response.status_code, response.text)
        return response.json()['Items']

    @contextlib.contextmanager
    def follow_rulebook(self, token, workdir, **host_vars):
        """The follow rulebook on the admin host with the mover's token, as docs/move-and-failover.md says to start
        it: ansible-rulebook copies the inventory it is given into a directory of its own and runs the playbooks
        there, so it gets a directory with the example's inventory, group_vars and host_vars, the vault left out, and
        the admin host's host_vars for the follow (absolute TLS paths, the token from the environment), host_vars
        added. Its event source reaches the server through the forward; the playbooks it runs, by the example's
        address."""
        follow = workdir / 'follow'
        follow.mkdir()
        for name in ('hosts.yml', 'topology.yml'):
            shutil.copy(self.inventory / name, follow)
        for name in ('group_vars', 'host_vars'):
            shutil.copytree(self.inventory / name, follow / name)
        vault_file(follow).unlink()
        admin = {
            'host_volume_move_nomad_token': "{{ lookup('ansible.builtin.env', 'NOMAD_TOKEN') }}",
            'host_volume_move_nomad_ca_cert': str(self.tls / 'nomad-agent-ca.pem'),
            'host_volume_move_nomad_client_cert': str(self.tls / 'global-cli-nomad.pem'),
            'host_volume_move_nomad_client_key': str(self.tls / 'global-cli-nomad-key.pem'),
        }
        (follow / 'host_vars' / (ADMIN + '.yml')).write_text(json.dumps(admin | host_vars))
        env = dict(self.env(), NOMAD_ADDR=self.forward, NO_PROXY='localhost,127.0.0.1')
        env.pop('ANSIBLE_VAULT_PASSWORD_FILE', None)  # no vault, as the docs say
        env.update(
            NOMAD_CACERT=admin['host_volume_move_nomad_ca_cert'],
            NOMAD_CLIENT_CERT=admin['host_volume_move_nomad_client_cert'],
            NOMAD_CLIENT_KEY=admin['host_volume_move_nomad_client_key'],
        )
        with rulebook(follow, env, workdir, token) as followed:
            yield followed
        assert self.management not in followed.output()


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def socks_proxy(vm, port, forward):
    """ssh -D through the VM: this host's way to the hosts' names and addresses, for as long as it runs. And -L
    from port forward to the server's API, for what cannot go through a SOCKS proxy (aiohttp: the follow rulebook's
    event source), at https://localhost:<forward>, a name the server's certificate holds too."""
    argv = vm.ssh_argv()[:-1] + ['-o', 'ControlMaster=no', '-o', 'ExitOnForwardFailure=yes', '-N']
    argv += ['-D', '127.0.0.1:%d' % port, '-L', '127.0.0.1:%d:%s:4646' % (forward, SERVER), 'root@127.0.0.1']
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL)


def bootstrap(cluster):
    """The management token of the ACL bootstrap, or None while the proxy is not listening yet or the server has no
    leader (500 "No cluster leader")."""
    try:
        response = cluster.request('POST', '/v1/acl/bootstrap')
    except requests.ConnectionError:
        return None
    return response.json()['SecretID'] if response.ok else None


def destroy_datasets(vm):
    """The hosts' datasets, from the VM: only once no host has them mounted (hosts down)."""
    for dataset in DATASETS:
        vm.zfs('destroy', '-r', dataset, check=False)


@pytest.fixture(scope='package')
def cluster(vm, separate_hosts, tmp_path_factory):
    """The hosts booted afresh, Nomad running on them, and the example's copy made; nothing of the collection run
    yet."""
    separate_hosts.down(*reversed(HOSTS))
    destroy_datasets(vm)
    server, storage, backup, client_1, client_2 = separate_hosts.up(*HOSTS)
    work = tmp_path_factory.mktemp('cluster')
    # The operator's part, as deploy.md says: the CA and certificates, the agents, ACLs bootstrapped.
    tls = work / 'tls'
    tls.mkdir()
    make_tls(tls)
    start_server(server, tls)
    for client in (client_1, client_2):
        start_client(client, tls)
    port, forward = free_port(), free_port()
    proxy = socks_proxy(vm, port, forward)
    try:
        example = work / 'prod'
        shutil.copytree(REPO / 'inventories' / 'example', example)
        (example / 'files' / 'host_keys').mkdir(parents=True)
        (example / 'files' / 'tls').mkdir()
        # Each primary's SSH host key, which its standbys pin (deploy.md's files/host_keys/<short name>.pub).
        for primary in (storage, client_1, client_2):
            short = primary.name.split('.', maxsplit=1)[0]
            (example / 'files' / 'host_keys' / (short + '.pub')).write_text(primary.host_key() + '\n')
        for name in ('nomad-agent-ca.pem', 'global-cli-nomad.pem', 'global-cli-nomad-key.pem'):
            shutil.copy(tls / name, example / 'files' / 'tls' / name)
        key = example / 'files' / 'csi_ed25519'
        subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'csi@nomad', '-f', str(key)], check=True)
        csi_key = key.read_text()
        key.unlink()
        hosts = {h.name: h for h in (server, storage, backup, client_1, client_2)}
        made = Cluster(vm, hosts, example, example / 'files' / 'tls', 'socks5h://127.0.0.1:%d' % port,
                       'https://localhost:%d' % forward, None)  # fmt: skip
        made.management = wait_until(lambda: bootstrap(made), timeout=120, why='ACL bootstrap')
        ready_nodes(made.api, [node_name(c) for c in (CLIENT_1, CLIENT_2)])
        topology(separate_hosts, example)
        made.vault_password = vault(example, csi_key, made.management)
        yield made
    finally:
        proxy.terminate()
        proxy.wait()
        if not vm.ending():
            separate_hosts.down(*reversed(HOSTS))
            destroy_datasets(vm)


# The secrets deploy.md has the operator copy into the vault once site.yml made their tokens: the moves', and those
# of the runs that --limit leaves the admin host out of.
LATER_SECRETS = {
    'vault_nomad_mover_token': 'host-volume-mover',
    'vault_host_volume_operator_token': 'host-volume-operator',
    'vault_fence_watchdog_token': 'fence-watchdog',
}


@pytest.fixture(scope='package')
def converged(cluster):
    """The cluster after its first site.yml, which made everything (changed on every host), and the tokens it made
    copied into the vault."""
    ran = cluster.site()
    assert changed(ran) and all(changed(ran).values()), playbook_said(ran)
    later = {item: cluster.secret(token) for item, token in LATER_SECRETS.items()}
    add_to_vault(cluster.inventory, cluster.vault_password, later)
    return cluster
