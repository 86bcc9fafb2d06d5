"""nomad_zfs_csi_storage is read by both roles, and its iSCSI base name also names the pack's targets: role argument
specs do not fill nested defaults, so each role and the pack hold the default, and they must be the same."""

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]


def spec_default(role):
    spec = yaml.safe_load((REPO / 'roles' / role / 'meta' / 'argument_specs.yml').read_text())
    return spec['argument_specs']['main']['options']['nomad_zfs_csi_storage']['options']['iscsi_basename']['default']


def test_the_iscsi_base_name_has_one_default_everywhere():
    pack = re.search(
        r'variable "iscsi_base_name" \{.*?default\s*=\s*"([^"]+)"',
        (REPO / 'packs/zfs_csi/variables.hcl').read_text(),
        re.S,
    ).group(1)
    in_tasks = [
        re.search(
            r"iscsi_basename \| default\('([^']+)'\)", (REPO / 'roles' / role / 'tasks/main.yml').read_text()
        ).group(1)
        for role in ('storage_host', 'csi_plugin')
    ]
    assert {spec_default('storage_host'), spec_default('csi_plugin'), *in_tasks} == {pack}
