#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: systemd_units
short_description: Enable, start, stop or restart several systemd units in one call
version_added: 0.2.0
description:
  - Makes each listed unit enabled or disabled, and started or stopped, or restarts it, reading all of them with one
    C(systemctl show) and changing them with one C(systemctl) process per verb. The collection's roles run their
    services and timers with it, one task where C(ansible.builtin.systemd_service) takes one, with several
    C(systemctl) processes, per unit.
  - Every unit is read and planned before the first change; a unit systemd does not know, or one that is masked,
    fails the task, naming it, with nothing changed. A second run changes nothing.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
options:
  units:
    description:
      - The units, with their suffix, for example C(sanoid.timer).
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description:
          - The unit's full name.
        type: str
        required: true
      enabled:
        description:
          - Whether it starts at boot; left as it is when not given. A unit with no C([Install]) section of its own
            (C(static), C(generated), C(indirect)) is left as it is.
        type: bool
      state:
        description:
          - V(started) or V(stopped); left as it is when not given.
        type: str
        choices: [started, stopped]
      restart:
        description:
          - With O(units[].state=started), restart it even when it runs, for example because a file it reads
            only when it starts changed.
        type: bool
        default: false
  daemon_reload:
    description:
      - Run C(systemctl daemon-reload) first, for unit files that changed. Not in check mode, where the units are
        read as systemd has them loaded.
    type: bool
    default: false
notes:
  - Runs on a host with systemd, as root.
seealso:
  - module: ansible.builtin.systemd_service
"""

EXAMPLES = r"""
- name: Run the NFS server, restarted when its settings changed, and re-export at boot
  nomad_zfs.csi.systemd_units:
    units:
      - name: nfs-server.service
        enabled: true
        state: started
        restart: "{{ nfs_settings is changed }}"
      - name: zfs-share.service
        enabled: true
  become: true
"""

RETURN = r"""
commands:
  description: The C(systemctl) argument lists that ran (in check mode, would run), after any C(daemon-reload).
  returned: always
  type: list
  elements: list
  sample: [["enable", "sanoid.timer"], ["start", "sanoid.timer"]]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._systemd_units_plan import PROPERTIES, parse_show, plan


def systemctl(module, args):
    argv = [module.get_bin_path('systemctl', required=True)] + args
    rc, out, err = module.run_command(argv)
    if rc != 0:
        raise PlanError('systemctl %s failed (rc %d): %s' % (' '.join(args), rc, (err or out).strip()))
    return out


def work(module, done):
    p = module.params
    if p['daemon_reload'] and not module.check_mode:
        systemctl(module, ['daemon-reload'])
        done.append(['daemon-reload'])
    names = [unit['name'] for unit in p['units']]
    if not names:
        return dict(changed=bool(done), commands=[])
    shown = parse_show(systemctl(module, ['show', '--property=' + ','.join(PROPERTIES), '--'] + names))
    commands, before, after = plan(p['units'], shown)
    if not module.check_mode:
        for args in commands:
            systemctl(module, args)
            done.append(args)
    result = dict(changed=bool(done or commands), commands=commands)
    if module._diff and commands:
        result['diff'] = dict(before=before, after=after)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            units=dict(
                type='list',
                elements='dict',
                required=True,
                options=dict(
                    name=dict(type='str', required=True),
                    enabled=dict(type='bool'),
                    state=dict(type='str', choices=['started', 'stopped']),
                    restart=dict(type='bool', default=False),
                ),
            ),
            daemon_reload=dict(type='bool', default=False),
        ),
        supports_check_mode=True,
    )
    done = []
    try:
        module.exit_json(**work(module, done))
    except PlanError as e:
        module.fail_json(msg=str(e), **(dict(changed=True, written=done) if done else {}))


if __name__ == '__main__':
    main()
