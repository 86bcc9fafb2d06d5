"""Drive a module's main() in-process, as ansible would run it, and collect its result."""

import json

import pytest
from ansible.module_utils import basic
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.testing import patch_module_args


class _Exit(Exception):
    def __init__(self, result):
        super(_Exit, self).__init__(result)
        self.result = result


@pytest.fixture
def run_main(monkeypatch):
    """run_main(module, args, check=False, diff=False): the module's result, with 'failed' when it failed."""

    # As AnsibleModule's own exits: the values of no_log options are masked wherever they appear.
    def exit_json(self, **result):
        result.setdefault('changed', False)
        raise _Exit(json.loads(json.dumps(remove_values(result, self.no_log_values))))

    def fail_json(self, msg, **result):
        result.update(failed=True, msg=msg)
        raise _Exit(json.loads(json.dumps(remove_values(result, self.no_log_values), default=str)))

    monkeypatch.setattr(basic.AnsibleModule, 'exit_json', exit_json)
    monkeypatch.setattr(basic.AnsibleModule, 'fail_json', fail_json)

    def run(module, args, check=False, diff=False):
        args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
        with patch_module_args(args):
            with pytest.raises(_Exit) as ended:
                module.main()
        return ended.value.result

    return run
