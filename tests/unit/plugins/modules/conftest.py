"""Drive a module's main() in-process through AnsibleModule's own exit path, as ansible would run it.

Nothing of AnsibleModule is replaced: the module validates its arguments, logs its invocation (to syslog, which
syslog_capture can receive) and prints its result, with `invocation`, as it does on a host; run_main parses that.
"""

import json
import os

import pytest
from ansible.module_utils import _internal
from ansible.module_utils.common import warnings
from ansible.module_utils.common.parameters import PASS_VARS
from ansible.module_utils.testing import patch_module_args

from ansible_collections.nomad_zfs.csi.tests.unit.syslog_sink import SyslogSink, Unavailable


@pytest.fixture
def run_main(capsys, monkeypatch):
    """run_main(module, args, check=False, diff=False): the module's printed result ('failed' when it failed)."""
    # A module's process is never the controller: once a test of this process imported controller code (a filter
    # plugin's tests import ansible.errors), AnsibleModule.warn would print to the controller's display and leave the
    # result without its warnings.
    monkeypatch.setattr(_internal, 'is_controller', False)

    def run(module, args, check=False, diff=False):
        args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
        # ansible-core 2.21 returns the invocation only where INJECT_INVOCATION asks for it (2.19 and 2.20 always
        # do): asked here, where a secret it held would show, and refused by the lines that know no such setting.
        if 'inject_invocation' in PASS_VARS:
            args['_ansible_inject_invocation'] = True
        # A module process starts with none; in one test process they would pile up from earlier runs.
        warnings._global_warnings.clear()
        warnings._global_deprecations.clear()
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
    """SyslogSink's messages(), for a module run in-process. CI runs as root with /dev/log free; elsewhere the
    test says why it cannot run."""
    try:
        sink = SyslogSink().open()
    except Unavailable as e:
        if os.environ.get('CI'):
            pytest.fail(str(e))
        pytest.skip(str(e))
    try:
        yield sink.messages
    finally:
        sink.close()
