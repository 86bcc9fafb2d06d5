# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""What a set of systemd units needs, decided from one `systemctl show`: systemd_units' planner.

Pure: the module reads every unit in one systemctl process and runs the argv lists this returns, one systemctl
process per verb for all the units it concerns; check mode predicts with the same code.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

PROPERTIES = ['Id', 'LoadState', 'ActiveState', 'UnitFileState']
RUNNING = ('active', 'activating', 'reloading')
# UnitFileState values that `systemctl enable` changes; the others (static, generated, indirect...) have no
# [Install] section of their own to enable, as ansible.builtin.systemd_service treats them.
ENABLEABLE = ('disabled',)
DISABLEABLE = ('enabled', 'enabled-runtime')


def parse_show(text):
    """`systemctl show --property=<PROPERTIES> <unit>...`, as systemd prints it: {Id: {property: value}}."""
    units = {}
    for block in text.strip().split('\n\n'):
        props = dict(line.split('=', 1) for line in block.splitlines() if '=' in line)
        if 'Id' in props:
            units[props['Id']] = props
    return units


def plan(units, shown):
    """units: dicts with name, enabled (True, False or None: left alone), state (started, stopped or None) and
    restart (restart it, running or not, when state is started). The systemctl argv lists in order, and the diff's
    before and after ({unit: {enabled, active}}). PlanError, naming the unit, for one systemd does not know or that
    is masked, before anything runs."""
    verbs = dict((verb, []) for verb in ('enable', 'disable', 'stop', 'start', 'restart'))
    before, after = {}, {}
    for index, unit in enumerate(units):
        props = shown.get(unit['name'])
        load = props and props.get('LoadState')
        if load != 'loaded':
            raise PlanError(
                'units[%d].name %s is %s on this host: %s Nothing was changed.'
                % (
                    index,
                    unit['name'],
                    load or 'not shown',
                    'unmask it first (systemctl unmask).'
                    if load == 'masked'
                    else 'install it first, or correct the name.',
                )
            )
        file_state, active = props['UnitFileState'], props['ActiveState']
        enabled = file_state in DISABLEABLE
        if unit['enabled'] is True and file_state in ENABLEABLE:
            verbs['enable'].append(unit['name'])
            enabled = True
        elif unit['enabled'] is False and file_state in DISABLEABLE:
            verbs['disable'].append(unit['name'])
            enabled = False
        running = active in RUNNING
        if unit['state'] == 'started' and unit['restart']:
            verbs['restart'].append(unit['name'])
        elif unit['state'] == 'started' and not running:
            verbs['start'].append(unit['name'])
        elif unit['state'] == 'stopped' and running:
            verbs['stop'].append(unit['name'])
        before[unit['name']] = dict(enabled=file_state in DISABLEABLE, active=running)
        after[unit['name']] = dict(
            enabled=enabled, active=running if unit['state'] is None else unit['state'] == 'started'
        )
    return [[verb] + names for verb, names in verbs.items() if names], before, after
