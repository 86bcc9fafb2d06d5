"""The collection's follow rulebook (nomad_zfs.csi.follow) run by ansible-rulebook on this host, as an operator
starts it, against any of the tests' clusters; its output read as it comes."""

import contextlib
import os
import subprocess
import threading

from zfsvm_client import BIN, terminate, wait_until


class Output:
    def wait_for(self, text, timeout, why):
        """Until the output holds text; an AssertionError with the end of the output after timeout seconds, or once
        ansible-rulebook ended."""
        return (
            wait_until(
                lambda: text in self.output() or self.ended(),
                timeout=timeout,
                why=lambda _: '%s; the rulebook said:\n%s' % (why, self.output()[-4000:]),
                pause=5,
            )
            and self.output()
        )


class Rulebook(Output):
    def __init__(self, proc):
        self.proc, self.lines = proc, []
        self.reader = threading.Thread(target=lambda: self.lines.extend(proc.stdout), daemon=True)
        self.reader.start()

    def output(self):
        return ''.join(self.lines)

    def ended(self):
        return self.proc.poll() is not None


@contextlib.contextmanager
def rulebook(inventory, env, workdir, token):
    """ansible-rulebook -r nomad_zfs.csi.follow -i inventory, in workdir, with env and the token in NOMAD_TOKEN;
    yields its Rulebook. Afterwards it is stopped, and the token is nowhere in what it printed."""
    env = dict(env, NOMAD_TOKEN=token)
    env['PATH'] = '%s:%s' % (BIN, os.environ['PATH'])  # ansible-rulebook asks ansible-galaxy where collections are
    argv = [str(BIN / 'ansible-rulebook'), '-r', 'nomad_zfs.csi.follow', '-i', str(inventory)]
    proc = subprocess.Popen(
        argv, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    followed = Rulebook(proc)
    try:
        yield followed
    finally:
        terminate(proc, timeout=60)
        followed.reader.join(timeout=10)
        assert token not in followed.output()
