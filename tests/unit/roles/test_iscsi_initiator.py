"""The iscsi_initiator role accepts exactly the CHAP values the storage host's targetcli accepts: one rule, kept
in two places because each side runs where the other's files are not."""

import importlib.util
import re
from pathlib import Path

import yaml

ROLES = Path(__file__).resolve().parents[3] / 'roles'
SPEC = importlib.util.spec_from_file_location('targetcli_root', str(ROLES / 'storage_host/files/targetcli-root.py'))
helper = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(helper)


def test_the_role_takes_the_values_targetcli_takes():
    role = yaml.safe_load((ROLES / 'iscsi_initiator/vars/main.yml').read_text())['iscsi_initiator_chap_value']
    assert role == helper.VALUE.pattern
    # The role's assert: Ansible's regex test with match_type='fullmatch' (a trailing newline passes re.match's $).
    for value in ('nomad', 'chap-S3cret.4242', 'a/b+c@d:e_f', 'x' * 255):
        assert re.fullmatch(role, value)
    for value in ('', 'two words', 'pass\n', 'pass\nnode.startup = automatic', "it's", 'x' * 256):
        assert not re.fullmatch(role, value)
