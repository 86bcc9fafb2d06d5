# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""Where a new dynamic host volume goes when no node is named: a node whose parent can hold it.

Nomad places a created host volume on the first feasible node, with no look at free space. nomad_host_volume, given
each candidate node's free bytes under the plugin's parent (zfs_info's ``available``, read on the node just before),
chooses one here. Pure, so that every case is a unit test.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError


def free_figures(node_free_bytes):
    """{node name or ID: bytes} from the option, each a whole number of bytes; PlanError naming the key."""
    figures = {}
    for key, value in sorted((node_free_bytes or {}).items()):
        text = str(value)
        if isinstance(value, bool) or not text.isdigit():
            raise PlanError(
                'node_free_bytes[%s] is %r, not a number of bytes: give the available property of the host '
                "volume plugin's parent on that node, as zfs_info returns it." % (key, value)
            )
        figures[key] = int(text)
    return figures


def _mib(size):
    return '%.1f MiB' % (size / 1048576.0)


def why_not(node, free, need, node_pool):
    """Why a node cannot take the volume, or None: Nomad's own feasibility first, then room."""
    if node['status'] != 'ready':
        return 'is %s' % node['status']
    if not node['eligible']:
        return 'is not eligible for scheduling'
    if node['drain']:
        return 'is draining'
    if node_pool and node['node_pool'] != node_pool:
        return 'is in node pool %s' % node['node_pool']
    if free < need:
        return 'has %s free, less than %s' % (_mib(free), _mib(need))
    return None


def choose_node(name, need, figures, nodes, node_pool=None):
    """The node (nomad_node_info's summary) that a new volume of need bytes goes to: of the nodes in figures (by
    name or ID) that Nomad could place it on, the one with the most free bytes (then by name), so that volumes
    spread. PlanError, naming each candidate and its free bytes, when figures name a node Nomad does not know or
    when none can hold it."""
    by_key = {}
    for node in nodes:
        by_key[node['id']] = node
        by_key.setdefault(node['name'], node)
    unknown = sorted(key for key in figures if key not in by_key)
    if unknown:
        raise PlanError(
            'node_free_bytes names %s, which Nomad knows neither as a node name nor as a node ID; name the nodes '
            'as nomad_node_info returns them.' % ', '.join(unknown)
        )
    if not figures:
        raise PlanError('node_free_bytes is empty; give the free bytes of at least one node, or give node_id.')
    verdicts = []
    for key, free in sorted(figures.items()):
        node = by_key[key]
        verdicts.append((node, free, why_not(node, free, need, node_pool)))
    fitting = [(free, node['name'] or '', node) for node, free, why in verdicts if why is None]
    if fitting:
        return max(fitting, key=lambda entry: entry[:2])[2]
    raise PlanError(
        'no node can take host volume %s of %s: %s. Nothing was made. Free space under the parent of one of them, '
        'or ask for a smaller capacity.'
        % (name, _mib(need), '; '.join('%s %s' % (node['name'] or node['id'], why) for node, _free, why in verdicts))
    )
