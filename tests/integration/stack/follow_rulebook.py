"""The collection's follow rulebook (nomad_zfs.csi.follow) run by ansible-rulebook on this host against the stack's
Nomad, as an operator starts it: the stack's inventory, with the nodes' hosts and agent addresses that a move of the
two nodes needs (host_vars of the host that runs the playbooks), and the mover's token in the environment."""

import contextlib
import json
import os
import shutil
import subprocess
import threading

from conftest import REPO
from zfsvm_client import BIN, mitogen_env, wait_until


class Rulebook:
    def __init__(self, proc):
        self.proc, self.lines = proc, []
        self.reader = threading.Thread(target=lambda: self.lines.extend(proc.stdout), daemon=True)
        self.reader.start()

    def output(self):
        return ''.join(self.lines)

    def wait_for(self, text, timeout, why):
        """Until the output holds text; an AssertionError with the end of the output after timeout seconds, or once
        ansible-rulebook ended."""
        return (
            wait_until(
                lambda: text in self.output() or self.proc.poll() is not None,
                timeout=timeout,
                why=lambda _: '%s; the rulebook said:\n%s' % (why, self.output()[-4000:]),
                pause=5,
            )
            and self.output()
        )


@contextlib.contextmanager
def follow_rulebook(stack, workdir, token, move_vars):
    inventory = workdir / 'inventory'
    shutil.copytree(REPO / 'inventories' / 'local', inventory)
    (inventory / 'host_vars').mkdir()
    (inventory / 'host_vars' / 'nomad-dev.yml').write_text(json.dumps(move_vars))
    env = dict(stack.base_env, **mitogen_env(), **stack.vm.nomad_tls_env, NOMAD_TOKEN=token)
    env['PATH'] = '%s:%s' % (BIN, os.environ['PATH'])  # ansible-rulebook asks ansible-galaxy where collections are
    argv = [str(BIN / 'ansible-rulebook'), '-r', 'nomad_zfs.csi.follow', '-i', str(inventory)]
    proc = subprocess.Popen(
        argv,
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    rulebook = Rulebook(proc)
    try:
        yield rulebook
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        rulebook.reader.join(timeout=10)
        assert token not in rulebook.output()
