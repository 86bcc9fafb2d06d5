"""The storage_host zfs wrapper renders to a POSIX sh script that shellcheck accepts.

ansible-test's shellcheck runs on *.sh files only, not on role templates. Its behaviour is
tested on the ZFS VM by the storage_host Molecule scenario.
"""

import shlex
import subprocess
from pathlib import Path

import jinja2

TEMPLATE = Path(__file__).resolve().parents[3] / 'roles' / 'storage_host' / 'templates' / 'zfs-wrapper.sh.j2'


def render(parent):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters['quote'] = shlex.quote  # what Ansible's quote filter does
    return env.from_string(TEMPLATE.read_text()).render(
        ansible_managed='managed', storage_host_user='csi', storage_host_parent=parent)


def test_rendered_wrapper_passes_shellcheck(tmp_path):
    script = tmp_path / 'zfs'
    script.write_text(render('tank/nomad/csi'))
    checked = subprocess.run(['shellcheck', '-s', 'sh', str(script)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout
