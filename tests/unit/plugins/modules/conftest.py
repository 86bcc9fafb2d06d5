"""Drive a module's main() in-process through AnsibleModule's own exit path, as ansible would run it.

Nothing of AnsibleModule is replaced: the module validates its arguments, logs its invocation (to syslog, which
syslog_capture can receive) and prints its result, with `invocation`, as it does on a host; run_main parses that.
"""

import json
import os
import socket

import pytest
from ansible.module_utils.testing import patch_module_args

SYSLOG_PATH = '/dev/log'


@pytest.fixture
def run_main(capsys):
    """run_main(module, args, check=False, diff=False): the module's printed result ('failed' when it failed)."""

    def run(module, args, check=False, diff=False):
        args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
        capsys.readouterr()
        with patch_module_args(args):
            with pytest.raises(SystemExit) as ended:
                module.main()
        out = capsys.readouterr().out
        result = json.loads(out)
        assert ended.value.code == (1 if result.get('failed') else 0), out
        return result

    return run


@pytest.fixture
def syslog_capture():
    """A datagram socket bound at /dev/log, where AnsibleModule's syslog() sends (no journald here); a function
    that returns every message received so far.

    It needs /dev/log free and a root test run: CI has both, and elsewhere the test says why it cannot run.
    """
    if os.path.exists(SYSLOG_PATH) or os.geteuid() != 0:
        why = '%s is taken, or this is not root: nothing can stand in for syslog here' % SYSLOG_PATH
        if os.environ.get('CI'):
            pytest.fail(why)
        pytest.skip(why)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.bind(SYSLOG_PATH)
    sock.setblocking(False)
    received = []

    def messages():
        while True:
            try:
                received.append(sock.recv(1 << 20).decode('utf-8', 'replace'))
            except BlockingIOError:
                return list(received)

    try:
        yield messages
    finally:
        sock.close()
        os.unlink(SYSLOG_PATH)
