# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""A Nomad client node in the modules' words, as nomad_node_info returns it and the move's planner reads it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# A node's fingerprint attribute plugins.host_volume.<id>.version names each dynamic host volume plugin it has.
PLUGIN_ATTRIBUTE = 'plugins.host_volume.'


def summary(node):
    attributes = node.get('Attributes') or {}
    plugins = dict(
        (key[len(PLUGIN_ATTRIBUTE) : -len('.version')], value)
        for key, value in attributes.items()
        if key.startswith(PLUGIN_ATTRIBUTE) and key.endswith('.version')
    )
    return dict(
        id=node['ID'],
        name=node.get('Name'),
        status=node.get('Status'),
        status_updated_at=node.get('StatusUpdatedAt') or 0,
        eligible=node.get('SchedulingEligibility') == 'eligible',
        drain=bool(node.get('DrainStrategy')),
        node_pool=node.get('NodePool'),
        datacenter=node.get('Datacenter'),
        http_addr=node.get('HTTPAddr'),
        host_volume_plugins=plugins,
        host_volumes=dict((name, vol.get('ID') or '') for name, vol in (node.get('HostVolumes') or {}).items()),
    )


def every_node(client):
    """Every node Nomad lists, each read whole (the list leaves out attributes and host volumes)."""
    return [n for n in (client.get('node/' + s['ID'], missing_ok=True) for s in client.get('nodes') or []) if n]
