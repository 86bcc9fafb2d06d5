"""diff_lines on a plan Diff captured from Nomad v1.11.3 (the node job with its memory changed)."""

import json

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_plan import diff_lines
from ansible_collections.nomad_zfs.csi.tests.unit.captured import FIXTURES

CAPTURED = json.loads((FIXTURES / 'nomad_plan_diff_1.11.3.json').read_text())


def test_captured_edit_names_the_path_to_the_changed_field():
    assert diff_lines(CAPTURED) == [
        '~ zfs-node',
        '  ~ node',
        '    ~ plugin',
        '      ~ Resources',
        "        ~ MemoryMB: '256' => '96'",
    ]


def test_no_change_gives_no_lines():
    assert diff_lines({'Type': 'None', 'ID': 'zfs-node', 'Fields': None}) == []
