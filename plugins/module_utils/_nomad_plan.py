# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""nomad_job's planner: Nomad's own job plan decides, this turns its answer into a Plan and readable lines."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import Plan

MARKS = {'Added': '+', 'Deleted': '-', 'Edited': '~', 'None': ' '}


def diff_lines(diff, indent=''):
    """`+`/`-`/`~` lines for every changed field, object, group and task, like `nomad job plan`."""
    lines = []
    if diff.get('Type', 'None') == 'None':
        return lines
    name = diff.get('Name') or diff.get('ID') or ''
    if name:
        lines.append('%s%s %s' % (indent, MARKS.get(diff['Type'], '?'), name))
        indent += '  '
    for field in diff.get('Fields') or []:
        if field.get('Type', 'None') != 'None':
            mark = MARKS.get(field['Type'], '?')
            lines.append(
                '%s%s %s: %r => %r' % (indent, mark, field.get('Name'), field.get('Old', ''), field.get('New', ''))
            )
    for key in ('Objects', 'TaskGroups', 'Tasks'):
        for child in diff.get(key) or []:
            lines.extend(diff_lines(child, indent))
    return lines


def plan_job_present(job, answer):
    # type: (dict, dict) -> Plan
    """The register call when Nomad's plan (PUT job/:id/plan with Diff) shows any change, a stopped job included
    (its Stop field shows as Edited); predicted is the plan's verdict (None, Added, Edited)."""
    diff = answer.get('Diff') or {}
    verdict = diff.get('Type', 'None')
    steps = [] if verdict == 'None' else [('put', 'jobs', {'body': {'Job': job}})]
    lines = diff_lines(diff)
    return Plan(steps, before='', after='\n'.join(lines) + '\n' if steps else '', predicted=verdict)


def plan_stored_job_start(stored):
    # type: (dict) -> Plan
    """The register of a job as Nomad stored it, not stopped, as `nomad job start` does: a change only where it is
    stopped. Nomad's plan is not asked: the stored job is the one to run, and Nomad v1.11.3's plan endpoint refuses
    a workload identity (it looks its token up as an ACL token's secret). The register enforces the job modify index
    read, so that Nomad refuses it where the job changed after this read."""
    steps = []
    if stored.get('Stop'):
        body = {'Job': dict(stored, Stop=False), 'EnforceIndex': True, 'JobModifyIndex': stored.get('JobModifyIndex')}
        steps = [('put', 'jobs', {'body': body})]
    return Plan(
        steps,
        before='job %s: %s\n' % (stored['ID'], status(stored)),
        after='job %s: running\n' % stored['ID'],
        predicted='Edited' if steps else 'None',
    )


def changed_since_stop(stored, stopped_index):
    # type: (dict, int | None) -> str | None
    """Why a stopped job is not run again as the stop that left it at job modify index stopped_index left it, or None
    where it is (or no index is given). Nomad gives each write of a job a new index, which no register, revert or
    purge and register again reproduces: a job stopped at any other index was stopped, or changed, by someone else,
    whose change the stopper (a move, on the mover's token) must not submit with its own rights. A stop that the
    stopper did not make (stopped_index -1: the job was stopped already) is not its to undo either, nor a job purged
    since (stored is then {'ID': ...} alone)."""
    if stopped_index is None:
        return None
    if 'Version' not in stored:
        return 'job %s is no longer registered: it was purged since the stop' % stored['ID']
    if not stored.get('Stop'):
        return None
    if stopped_index < 0:
        return (
            'job %s was stopped already, not by this stop: it is left for its owner to run (nomad job start)'
            % (stored['ID'])
        )
    if stored.get('JobModifyIndex') != stopped_index:
        return (
            'job %s is stopped at job modify index %s, not at %d where its stop left it: it was changed since, and is '
            'left for its owner to run (nomad job start)' % (stored['ID'], stored.get('JobModifyIndex'), stopped_index)
        )
    return None


def plan_job_absent(job_id, current, purge):
    # type: (str, dict | None, bool) -> Plan
    """The stop (and purge) of job_id; current is Nomad's read of it, or None."""
    wanted = 'purged' if purge else 'stopped'
    steps = []
    if current and (not current.get('Stop') or purge):
        steps = [('delete', 'job/' + job_id, {'params': {'purge': str(purge).lower()}})]
    return Plan(
        steps,
        before='job %s: %s\n' % (job_id, status(current)),
        after='job %s: %s\n' % (job_id, wanted),
        predicted=-1 if (purge and steps) or not current else current['Version'],
    )


def status(job):
    if not job:
        return 'not registered'
    return 'stopped' if job.get('Stop') else 'running'
