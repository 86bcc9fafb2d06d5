# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""A planned move's or a failover's journal: where it stands, kept in a Nomad Variable of the volume's namespace,
so that it survives the operator's machine and both nodes' agents. Run again, the move or failover goes on from
there; a move aborted early enough puts everything back on the source.

Nothing here is inferred from live allocations: the jobs to run again are the ones the journal says were stopped.

Whoever holds `variables write` on the path (the mover's token) writes the journal, so it is read as a claim: it
says which of this volume's steps are done, and what Nomad and the nodes cannot show any more. The planner
(_host_volume_move_plan) checks each such item against what it reads, and derives everything else afresh.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

# The steps of a planned move, in order. Each is done again safely when a run stopped inside it.
STEPS = ('stop', 'send', 'delete', 'create', 'start', 'turnaround')
# A failover's: Nomad forgets the lost node's volume (forced), and the target adopts the replica.
FAILOVER_STEPS = ('delete', 'create')
# Until the volume leaves the source in Nomad, the source still has everything: an abort puts it back.
ABORTABLE = ('stop', 'send')


def journal_path(name):
    return 'nomad-zfs-csi/moves/%s' % name


def record(p, plan, now):
    """The journal a new move or failover starts with, before its first change: the variable's items (strings)."""
    kind = dict(kind='failover', fence=json.dumps(plan['fence'], sort_keys=True)) if p.get('failover') else {}
    return dict(
        kind,
        to=p['to'],
        source_node=plan['source']['name'],
        source_node_id=plan['source']['id'],
        volume=json.dumps(plan['volume'], sort_keys=True),
        jobs=json.dumps(plan['jobs']),
        data=json.dumps(plan['data'], sort_keys=True),
        started=str(int(now)),
        done='',
    )


def steps_of(items):
    return FAILOVER_STEPS if items.get('kind') == 'failover' else STEPS


def done_steps(items):
    return [step for step in items.get('done', '').split(',') if step in steps_of(items)]


def with_step(items, step):
    """The journal once step is done."""
    done = done_steps(items)
    return dict(items, done=','.join(done + [step] if step not in done else done))


def refuse(message):
    """End the run before any change: the refusal, and that nothing changed."""
    raise PlanError(message + ' Nothing was changed.')


def mismatch(p, field, journal_value, read):
    """Refuse a journal whose field does not match what is read: its value, what was read, and the way out."""
    path = journal_path(p['name'])
    refuse(
        'The journal %s does not match what is read: its %s is %s, but %s. No step is planned from it. Check by hand '
        'what the move or failover of %s did, then delete the journal (nomad var purge -namespace %s %s) and run '
        'again.' % (path, field, journal_value, read, p['name'], p.get('namespace', 'default'), path)
    )


def _loaded(p, items, field, kind):
    """A JSON item of the journal, of the type this collection writes there, or the refusal."""
    try:
        value = json.loads(items.get(field) or 'null')
    except ValueError:
        value = None
    if not isinstance(value, kind):
        mismatch(p, field, repr(items.get(field)), 'this collection writes a JSON %s there' % kind.__name__)
    return value


def resume(p, items, volumes, target):
    """Where a journaled move stands, from its journal and what Nomad holds now: the steps left (or, with abort,
    the steps that undo it), the volume as it was on the source, the jobs it stopped and its datasets.

    volumes are Nomad's reads of the volumes of that name; target is Nomad's read of node p['to'].
    """
    failover = items.get('kind') == 'failover'
    under_way = dict(
        what='failover' if failover else 'move',
        name=p['name'],
        to=items.get('to'),
        done=', '.join(done_steps(items)) or 'nothing',
        abort='' if failover else ', or give it up with -e abort=true',
    )
    if failover != bool(p.get('failover')) or items.get('to') != p['to']:
        refuse(
            'A %(what)s of %(name)s to %(to)s is under way (done: %(done)s); run '
            'playbooks/%(what)s_host_volume.yml again with -e to=%(to)s to finish it%(abort)s.' % under_way
        )
    vol = _loaded(p, items, 'volume', dict)
    jobs = _loaded(p, items, 'jobs', list)
    if not all(isinstance(job, str) and '/' not in job for job in jobs):
        mismatch(p, 'jobs', items['jobs'], 'this collection writes a list of job IDs there, none with a /')
    # The job modify index at which the stop left each job (-1: stopped already), recorded with the stop; a journal
    # without it (a stop not recorded yet, or a release before it) runs the jobs again as Nomad stores them.
    stopped = _loaded(p, items, 'stopped', dict) if 'stopped' in items else None
    if stopped is not None and (
        sorted(stopped) != sorted(jobs)
        or not all(isinstance(i, int) and not isinstance(i, bool) and i >= -1 for i in stopped.values())
    ):
        mismatch(p, 'stopped', items['stopped'], 'this collection writes the index each of its jobs was stopped at')
    # Whole seconds, and no more digits than a time the final snapshot's name can be formatted from.
    if not re.match(r'[0-9]{1,11}\Z', items.get('started') or '0'):
        mismatch(p, 'started', repr(items.get('started')), 'this collection writes the seconds since 1970 there')
    done = done_steps(items)
    on_source = [v for v in volumes if v.get('ID') == vol.get('id')]
    on_target = [v for v in volumes if target and v.get('NodeID') == target.get('ID')]
    # What Nomad shows outranks the journal: a run stopped between a change and its record made the change.
    steps = steps_of(items)
    if not on_source:
        done = sorted(set(done) | set(('stop', 'send', 'delete')) & set(steps), key=steps.index)
    if on_target:
        done = sorted(set(done) | set(('stop', 'send', 'delete', 'create')) & set(steps), key=steps.index)
    left = [step for step in steps if step not in done]
    if p.get('abort') and failover:
        refuse(
            'A failover is not given up. If Nomad still has %s on %s (done: %s), nothing was changed: delete the '
            'variable %s to forget it. Otherwise run the failover again to finish it.'
            % (p['name'], items.get('source_node'), ', '.join(done) or 'nothing', journal_path(p['name']))
        )
    if p.get('abort'):
        if 'delete' in done:
            refuse(
                'The move of %s to %s can no longer be given up: the volume left %s in Nomad (done: %s), and its jobs '
                'may have written on %s. Run it again without abort to finish it.'
                % (p['name'], p['to'], items.get('source_node'), ', '.join(done), p['to'])
            )
        # Marks a stopped send may have set are dropped again, whatever the journal recorded.
        left = ['unmark', 'start']
    return dict(
        volume=vol,
        fence=_loaded(p, items, 'fence', dict) if failover else None,
        jobs=jobs,
        stopped=stopped,
        data=_loaded(p, items, 'data', dict),
        source_node_id=items.get('source_node_id'),
        steps=left,
        done=done,
        started=int(items.get('started') or 0),
    )
