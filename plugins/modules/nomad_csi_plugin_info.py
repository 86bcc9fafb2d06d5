#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_csi_plugin_info
short_description: Report a Nomad CSI plugin's health, optionally waiting until it is healthy
version_added: 0.1.0
description:
  - Reads one CSI plugin from Nomad, with its controller and node health counts and volumes.
  - With O(wait_timeout) above zero, waits until the plugin is healthy, that is, every
    expected node plugin is healthy, at least O(min_nodes) of them, and, when the plugin
    needs a controller, every expected controller plugin is healthy and there is at least one.
  - When it is still not healthy after O(wait_timeout), the failure names each plugin allocation
    Nomad does not count as healthy, Nomad's health description, and the last error line its task
    logged, such as democratic-csi's C(All configured authentication methods failed) for an SSH
    key the storage host does not accept. Reading the logs needs the C(read-logs) capability;
    without it the reason is left out.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes.info_module
  - nomad_zfs.csi.nomad
options:
  plugin_id:
    description: The CSI plugin ID, as in the jobs' C(csi_plugin) block.
    type: str
    required: true
  wait_timeout:
    description: Seconds to wait for the plugin to become healthy; V(0) reports at once.
    type: int
    default: 0
  min_nodes:
    description: Least number of healthy node plugins that counts as healthy.
    type: int
    default: 1
  jobs:
    description:
      - IDs of the jobs that run the plugin, in O(namespace). When the plugin is not healthy
        after O(wait_timeout), their newest allocations are explained too, since a plugin task that
        exits before Nomad sees it (a wrong SSH key, say) is not yet among the plugin's allocations.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Wait until the ZFS plugin is healthy
  nomad_zfs.csi.nomad_csi_plugin_info:
    plugin_id: zfs
    wait_timeout: 300
  register: zfs_plugin
"""

RETURN = r"""
exists:
  description: Whether Nomad knows the plugin.
  returned: always
  type: bool
  sample: true
healthy:
  description: Whether the plugin met the health rule in the description.
  returned: always
  type: bool
  sample: true
plugin:
  description: The plugin's health and metadata.
  returned: when RV(exists)
  type: dict
  sample: {"id": "zfs", "provider": "org.democratic-csi.zfs-generic-nfs", "version": "1.9.4",
           "controller_required": true, "controllers_healthy": 1, "controllers_expected": 1,
           "nodes_healthy": 1, "nodes_expected": 1}
volumes:
  description: IDs of the volumes in O(namespace) that use the plugin.
  returned: when RV(exists)
  type: list
  elements: str
  sample: [pgdata]
"""

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import NomadError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._poll import poll_until

_ANSI = re.compile(r'\x1b\[[0-9;]*m')
# A line that starts with a log level or an exception name, such as "error: ..." or "Error: ...";
# stack frames and JSON context lines mention errors too, but do not say what happened.
_ERROR = re.compile(r'^(?:error|fatal|[a-z]*error)\b\W', re.I)
# How much of the end of each log to read when explaining an unhealthy plugin.
_LOG_TAIL = 8192


def summarize(raw):
    return dict(
        id=raw['ID'],
        provider=raw.get('Provider'),
        version=raw.get('Version'),
        controller_required=raw.get('ControllerRequired', False),
        controllers_healthy=raw.get('ControllersHealthy', 0),
        controllers_expected=raw.get('ControllersExpected', 0),
        nodes_healthy=raw.get('NodesHealthy', 0),
        nodes_expected=raw.get('NodesExpected', 0),
    )


def is_healthy(plugin, min_nodes):
    nodes = plugin['nodes_healthy'] >= max(min_nodes, 1) and plugin['nodes_healthy'] >= plugin['nodes_expected']
    if not plugin['controller_required']:
        return nodes
    return nodes and plugin['controllers_healthy'] >= max(plugin['controllers_expected'], 1)


def last_error_line(log):
    """The last line of a plugin's log that names an error, without colour codes."""
    lines = [_ANSI.sub('', line).strip() for line in (log or '').splitlines()]
    errors = [line for line in lines if _ERROR.match(line)]
    return errors[-1][:300] if errors else None


def newest_per_group(allocs):
    """The newest allocation of each job's task group: a crash-looping plugin leaves a trail of older ones."""
    newest = {}
    for alloc in allocs:
        key = (alloc.get('JobID'), alloc.get('TaskGroup'))
        if key not in newest or alloc.get('CreateIndex', 0) > newest[key].get('CreateIndex', 0):
            newest[key] = alloc
    return [newest[key] for key in sorted(newest, key=str)]


def why_unhealthy(client, raw, jobs):
    """For each plugin allocation Nomad does not count as healthy: its task group, status, Nomad's health
    description, and the last error line its task logged (democratic-csi, for one, logs why it exits).
    A plugin task that exits before it fingerprints is not among the plugin's allocations, so the
    allocations of the named jobs are read too."""
    allocs = list(raw.get('Allocations') or [])
    for job in jobs:
        allocs += client.get('job/%s/allocations' % job, missing_ok=True) or []
    healthy = set()
    described = {}
    for kind in ('Controllers', 'Nodes'):
        for info in (raw.get(kind) or {}).values():
            if info.get('Healthy'):
                healthy.add(info.get('AllocID'))
            elif info.get('HealthDescription'):
                described[info.get('AllocID')] = info['HealthDescription']
    reasons = []
    for alloc in newest_per_group(allocs):
        if alloc['ID'] in healthy:
            continue
        reason = '%s allocation %s is %s' % (alloc.get('TaskGroup'), alloc['ID'][:8], alloc.get('ClientStatus'))
        if alloc['ID'] in described:
            reason += ' (%s)' % described[alloc['ID']]
        for task in sorted(alloc.get('TaskStates') or {}):
            for kind in ('stderr', 'stdout'):
                try:
                    line = last_error_line(
                        client.get_text(
                            'client/fs/logs/' + alloc['ID'],
                            params=dict(task=task, type=kind, origin='end', offset=_LOG_TAIL, plain='true'),
                        )
                    )
                except NomadError:  # no read-logs capability, or the client is gone: Nomad's view is enough
                    line = None
                if line:
                    reason += '; task %s last logged: %s' % (task, line)
                    break
        reasons.append(reason)
    return reasons


def main():
    module = NomadModule(
        argument_spec=dict(
            plugin_id=dict(type='str', required=True),
            wait_timeout=dict(type='int', default=0),
            min_nodes=dict(type='int', default=1),
            jobs=dict(type='list', elements='str', default=[]),
        ),
        supports_check_mode=True,
    )
    module.exit_json(**module.run(lambda: read(module)))


def read(module):
    """The plugin's health and volumes, after waiting up to wait_timeout for it to be healthy."""
    p = module.params
    raw, healthy = poll_until(
        lambda: module.client.get('plugin/csi/' + p['plugin_id'], missing_ok=True),
        lambda raw: bool(raw) and is_healthy(summarize(raw), p['min_nodes']),
        p['wait_timeout'],
    )
    plugin = summarize(raw) if raw else None
    result = dict(changed=False, exists=plugin is not None, healthy=healthy)
    if plugin:
        volumes = module.client.get('volumes', params={'type': 'csi', 'plugin_id': p['plugin_id']}) or []
        result.update(plugin=plugin, volumes=sorted(v['ID'] for v in volumes))
    if p['wait_timeout'] > 0 and not healthy:
        reasons = why_unhealthy(module.client, raw or {}, p['jobs'])
        module.fail_json(
            msg='CSI plugin %s is not healthy after %ds: %s.%s Check the plugin jobs with '
            '`nomad plugin status %s`.'
            % (
                p['plugin_id'],
                p['wait_timeout'],
                'Nomad does not know it'
                if not plugin
                else 'controllers %(controllers_healthy)d/%(controllers_expected)d, '
                'nodes %(nodes_healthy)d/%(nodes_expected)d healthy' % plugin,
                ''.join(' %s.' % r for r in reasons),
                p['plugin_id'],
            ),
            **result,
        )
    return result


if __name__ == '__main__':
    main()
