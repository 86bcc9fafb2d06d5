# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""Whether a lost node can still write to a host volume, decided from what Nomad says without calling it: the one
rule that both a failover (_host_volume_move_plan) and the follow of a lost node (_host_volume_follow_plan) apply.

A down node may still run its tasks: a client agent that crashed or is cut off from the servers leaves them running.
It writes no more once fenced, in one of three ways: the operator says so; it advertises a fence watchdog (the
host_volume_plugin role's zfs-fence) and has been down long enough for it to have fenced; or every allocation there
that mounts the volume stops itself (disconnect.stop_on_client_after) and that has surely happened.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._host_volume_move_journal import refuse

NANOSECONDS = 1000000000
# What the client reported last: the allocation ended there, and its tasks with it. Any other status (running,
# pending, unknown, and lost, which the server sets on its own) may still have live tasks on the node.
ENDED_ON_CLIENT = ('complete', 'failed')
# The node metadata by which a client advertises its fence watchdog, and its fence_after (the host_volume_plugin
# role sets it once the watchdog runs, and unsets it before it stops the watchdog).
WATCHDOG_META = 'nomad_zfs_csi.fence_after'
# And the plugin whose volumes it fences (its one parent's): another plugin's volumes on the node are not fenced.
WATCHDOG_PLUGIN_META = 'nomad_zfs_csi.fence_plugin'
# zfs-fence's least fence_after: a smaller value is no watchdog's.
LEAST_FENCE_AFTER = 10
# zfs-fence's timeout of each zfs command and the second it then waits for it, the seconds its kill takes at most, and
# the most from a watchdog that hangs to its restart (the unit's WatchdogSec and RestartSec, and its start).
ZFS_TIMEOUT, ZFS_REAP, KILL, RESTART = 20, 1, 1, 30 + 2 + 3


def watchdog_fenced_within(fence_after):
    """Seconds after the servers marked the node down by which its watchdog has killed every task that mounts a
    volume and made every volume read-only, counted the way zfs-fence works (its fenced_within(), kept equal by a
    unit test). Its last `ready` arrives at most one check's answer (two timeouts and the 1 s owner check) after the
    servers marked the node down; fence_after later, the next check notices (one period, then that check's own
    answer), or the restart of a watchdog that hung; then the kill, then the listing and the zfs set (ZFS_TIMEOUT
    each)."""
    period = max(1, min(5, fence_after // 4))
    answer = 2 * period + 1
    return answer + fence_after + period + answer + RESTART + KILL + 2 * (ZFS_TIMEOUT + ZFS_REAP)


def watchdog_fence_after(node, plugin_id):
    """The fence_after of the watchdog the node advertises for the volumes of plugin_id, or None where it advertises
    none (or a value that no watchdog of ours has)."""
    meta = (node or {}).get('Meta') or {}
    if meta.get(WATCHDOG_PLUGIN_META) != plugin_id:
        return None
    value = meta.get(WATCHDOG_META)
    if not isinstance(value, str) or not re.match(r'^[1-9][0-9]{1,8}$', value):
        return None
    return int(value) if int(value) >= LEAST_FENCE_AFTER else None


def claims_on_node(name, allocations, ended=False):
    """The allocations on the lost node whose group mounts host volume `name`, as the node's client knows them
    (the job version each runs, not the job's latest), with each group's stop_on_client_after in seconds or None.
    Those that ended on the client are left out, unless ended.
    """
    found = []
    for alloc in allocations:
        if alloc.get('ClientStatus') in ENDED_ON_CLIENT and not ended:
            continue
        groups = [
            g for g in (alloc.get('Job') or {}).get('TaskGroups') or [] if g.get('Name') == alloc.get('TaskGroup')
        ]
        group = groups[0] if groups else {}
        mounts = [
            v for v in (group.get('Volumes') or {}).values() if v.get('Type') == 'host' and v.get('Source') == name
        ]
        if not mounts:
            continue
        after = (group.get('Disconnect') or {}).get('StopOnClientAfter')
        found.append(
            dict(
                id=alloc.get('ID', ''),
                job_id=alloc.get('JobID', ''),
                task_group=alloc.get('TaskGroup', ''),
                client_status=alloc.get('ClientStatus', ''),
                stop_on_client_after=None if after is None else after // NANOSECONDS,
            )
        )
    return found


def _by_stop_on_client_after(p, name, claims, allocations, down_for):
    """(seconds left, fence, why not) by the groups' disconnect.stop_on_client_after: it has passed twice over since
    the node went down (the client checks on a timer of that period, measured from its last heartbeat, which is
    before the server marked it down), plus the margin for the tasks' kill_timeout and for clock skew. Only a client
    agent that still runs stops them: one that crashed leaves its tasks running. Seconds left is None where no time
    makes it so."""
    needed = 2 * max([c['stop_on_client_after'] or 0 for c in claims] or [0]) + p['fence_margin']
    ways_out = (
        'Fence the node (power it off, or cut it off from its disks and network) and run again with -e fenced=true, '
        'or give every group that mounts the volume disconnect { stop_on_client_after = "<duration>" } so that a '
        'cut-off client stops its tasks itself, or run the fence watchdog on the node (host_volume_plugin_fence_after).'
    )
    if not claims:
        ended = claims_on_node(p['name'], allocations, ended=True)
        why = (
            'Nomad lists no allocation on node %s that mounts %s and may still run (%s), so nothing says that none '
            'still runs there. %s'
            % (
                name,
                p['name'],
                ', '.join('%s %s' % (c['id'][:8], c['client_status']) for c in ended[:5])
                or 'none of its %d; they may have been collected' % len(allocations),
                ways_out,
            )
        )
        return None, None, why
    unguarded = [c for c in claims if c['stop_on_client_after'] is None]
    if unguarded:
        why = (
            'Node %s is down, but its allocations %s (%s) may still be writing to %s: an agent that crashed or is cut '
            'off leaves its tasks running, and their groups have no disconnect.stop_on_client_after. %s'
            % (
                name,
                ', '.join(c['id'][:8] for c in unguarded),
                ', '.join(sorted(set('%s.%s' % (c['job_id'], c['task_group']) for c in unguarded))),
                p['name'],
                ways_out,
            )
        )
        return None, None, why
    if down_for < needed:
        why = (
            'Node %s has been down %d s; its allocations %s stop themselves after stop_on_client_after, if its agent '
            'still runs, which is certain %d s after it went down (twice the longest, %d s, plus fence_margin). Run '
            'again in %d s, or fence the node and run again with -e fenced=true.'
            % (
                name,
                down_for,
                ', '.join(c['id'][:8] for c in claims),
                needed,
                needed - p['fence_margin'],
                needed - down_for,
            )
        )
        return needed - down_for, None, why
    return 0, dict(how='stop_on_client_after', claims=claims, down_seconds=down_for, needed_seconds=needed), None


def _by_watchdog(p, source, claims, down_for):
    """(seconds left, fence, why not) by the node's fence watchdog, or None where it advertises none. The watchdog
    fences every volume of the node and kills every task that mounts one, whatever its group says."""
    fence_after = watchdog_fence_after(source, p.get('plugin_id'))
    if fence_after is None:
        return None
    needed = watchdog_fenced_within(fence_after) + p['fence_margin']
    if down_for < needed:
        why = (
            'Node %s has been down %d s; its fence watchdog (fence_after %d s) has surely fenced it %d s after it '
            'went down (fence_after, %d s for the watchdog to notice and fence, and fence_margin). Run again in %d s, '
            'or fence the node and run again with -e fenced=true.'
            % (
                source.get('Name'),
                down_for,
                fence_after,
                needed,
                needed - fence_after - p['fence_margin'],
                needed - down_for,
            )
        )
        return needed - down_for, None, why
    fenced = dict(how='watchdog', claims=claims, down_seconds=down_for, needed_seconds=needed, fence_after=fence_after)
    return 0, fenced, None


def fence_wait(p, source, allocations, now):
    """For a node that Nomad marked down, (seconds, fence, why): seconds 0 and how it is fenced (fence) where it
    surely writes no more; else the seconds until it surely does by itself, or None where it never does, and why
    it may still write. p: name and plugin_id (the volume's) and fence_margin. Of its two ways, the sooner one
    counts."""
    name = source.get('Name')
    down_for = max(0, int(now) - int(source.get('StatusUpdatedAt') or now))
    claims = claims_on_node(p['name'], allocations)
    ways = [w for w in (_by_watchdog(p, source, claims, down_for),) if w] + [
        _by_stop_on_client_after(p, name, claims, allocations, down_for)
    ]
    done = [w for w in ways if w[0] == 0]
    if done:
        return done[0]
    waiting = sorted((w for w in ways if w[0] is not None), key=lambda w: w[0])
    return waiting[0] if waiting else ways[-1]


def fence(p, source, allocations, now):
    """How the lost node is known to write no more, or the refusal that names the ways to make it so.

    A disconnected node is never fenced: Nomad may reconnect its allocations (disconnect.lost_after) and keep them
    over the replacements. A down node is fenced when the operator says so (powered off or cut off), or by itself
    (fence_wait).
    """
    status, name = source.get('Status'), source.get('Name')
    if status == 'disconnected':
        refuse(
            'Node %s is disconnected: Nomad may reconnect its allocations, which may still be writing to %s. Wait '
            "until Nomad marks it down (its groups' disconnect.lost_after), then fail over." % (name, p['name'])
        )
    if status == 'gone' and p['fenced']:
        return dict(how='fenced', claims=[])
    if status != 'down':
        refuse(
            'Node %s is %s, not down; a failover is for a node that Nomad marked down%s.'
            % (name, status, ', or one it no longer knows that is fenced (-e fenced=true)' if status == 'gone' else '')
        )
    if p['fenced']:
        return dict(how='fenced', claims=claims_on_node(p['name'], allocations))
    seconds, fenced, why = fence_wait(p, source, allocations, now)
    if seconds != 0:
        refuse(why)
    return fenced
