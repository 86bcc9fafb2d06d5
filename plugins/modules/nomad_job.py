#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nomad_job
short_description: Run a Nomad job from HCL or JSON and wait until it is running
version_added: 0.1.0
description:
  - Registers a job, for example the CSI plugin's controller or node job rendered by the
    C(zfs_csi) pack, only when Nomad's plan shows a difference, then waits until every
    allocation of the new version is running (and healthy, where the job has health checks),
    or for a batch job, has completed.
  - HCL is parsed by the Nomad agent itself (C(/v1/jobs/parse)), so the job text is the same
    that C(nomad job run) and C(nomad-pack run) submit.
  - Check mode runs the plan only. Diff mode shows the plan's field changes.
author:
  - nomad_zfs.csi developers (@nomad-zfs-csi)
extends_documentation_fragment:
  - nomad_zfs.csi.attributes
  - nomad_zfs.csi.nomad
options:
  src:
    description: Path of a job file (HCL2 or JSON) on the host that runs the module.
    type: path
  content:
    description: The job as HCL2 or JSON text.
    type: str
  job_id:
    description:
      - A job Nomad already has, by its ID in O(namespace), instead of its text.
      - With O(state=present), a stopped job runs again as Nomad stored it, as C(nomad job start) does; a job
        that is not registered fails, since there is nothing to start.
      - With O(state=absent), it is stopped (or purged); a job that is not registered is left alone.
      - The register enforces the job modify index read, so that Nomad refuses it where the job changed meanwhile.
    type: str
    version_added: 0.2.0
  stopped_index:
    description:
      - With O(job_id) and O(state=present), the job modify index at which a stop left the job, as the one who
        stopped it recorded it (RV(job_modify_index) of O(state=absent); a move's journal keeps it). It runs again
        only as that stop left it. Nomad gives each write of a job a new index, so a job stopped or changed since by
        anyone else (another index), or purged, is left alone, and RV(left_alone) says why. Whoever stopped it then
        does not submit, with its own rights, what someone else registered.
      - V(-1) means that the stop found the job stopped already, so that it is not the stopper's to run, and is left
        alone.
    type: int
    version_added: 0.2.0
  variables:
    description:
      - Values of the HCL2 job's C(variable) blocks, as C(nomad job run -var) gives them. They go to the
        agent's parser with the job, together with O(variable_files).
      - Each variable may be set once, here or in a file; Nomad's parser refuses a second value and names it
        (C(Attribute redefined)).
      - Ignored for a JSON job, which has no variables.
      - Values are often secrets, so they are kept out of the logged invocation and of results (C(no_log)); the
        job Nomad stores still holds what its text interpolates.
    type: dict
    default: {}
  variable_files:
    description: HCL variable files on the host that runs the module, as C(nomad job run -var-file) reads them.
    type: list
    elements: path
    default: []
  state:
    description:
      - V(present) runs the job; V(absent) stops it.
      - With O(wait=true), V(absent) waits until none of the job's allocations is still pending or running, so
        that the volumes they claimed are free.
    type: str
    choices: [present, absent]
    default: present
  purge:
    description: With O(state=absent), also purge the stopped job from Nomad's state.
    type: bool
    default: false
  wait:
    description:
      - Wait until the allocations of the job's current version are running (and healthy, where the job has
        health checks). For a V(batch) or V(sysbatch) job, wait until they have completed, and fail with the
        reason of any that ended otherwise (its task's last events).
      - A group scaled to 0 is not waited for. A periodic or parameterized job is registered without waiting, since
        it places nothing until its clock or a dispatch starts a child job.
      - With O(state=absent), wait until the job has no allocation pending or running.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait with O(wait=true) before failing with the allocations' last events (or, with
      O(state=absent), the allocations still running).
    type: int
    default: 300
notes:
  - The namespace in the job text, if any, wins over O(namespace).
"""

EXAMPLES = r"""
- name: Run the node plugin rendered by the pack and wait for it
  nomad_zfs.csi.nomad_job:
    src: "{{ render_dir }}/zfs_csi/node.nomad"

- name: The demo workload with its variables
  nomad_zfs.csi.nomad_job:
    src: scripts/demo-workload.nomad
    variables:
      volume: pgdata
      action: read

- name: Stop the jobs that use a volume, and wait until their allocations have stopped
  nomad_zfs.csi.nomad_job:
    job_id: "{{ item }}"
    namespace: team-a
    state: absent
  loop: [pgdata-db, pgdata-backup]

- name: Run them again as Nomad stored them
  nomad_zfs.csi.nomad_job:
    job_id: "{{ item }}"
    namespace: team-a
  loop: [pgdata-db, pgdata-backup]

- name: Stop and purge it
  nomad_zfs.csi.nomad_job:
    content: "{{ lookup('ansible.builtin.file', 'zfs-node.nomad') }}"
    state: absent
    purge: true
"""

RETURN = r"""
job_id:
  description: The job's ID.
  returned: always
  type: str
  sample: zfs-node
namespace:
  description: The namespace the job lives in.
  returned: always
  type: str
  sample: storage
version:
  description: The job's version after the task; V(-1) when it is not registered.
  returned: always
  type: int
  sample: 3
plan_diff_type:
  description: Nomad's plan verdict before the change (V(None), V(Added), V(Edited), V(Deleted)).
  returned: when O(state=present)
  type: str
  sample: Edited
allocations:
  description: Allocations of the current version after waiting.
  returned: when O(state=present) and O(wait=true) and not in check mode
  type: list
  elements: dict
  sample: [{"id": "7a4c...", "node": "storage-1", "client_status": "running", "healthy": true}]
left_alone:
  description: Why the job was not run again (O(stopped_index)), where it was changed, stopped by another or purged.
  returned: when O(stopped_index) is given and the job is not what its stop left
  type: str
  sample: >-
    job pgdata-db is stopped at job modify index 9120, not at 8841 where its stop left it: it was changed since, and
    is left for its owner to run (nomad job start)
job_modify_index:
  description:
    - With O(state=absent) and not O(purge), the job modify index at which this stop left the job, for a later
      O(stopped_index). V(-1) where the job was stopped already (this task stopped nothing), and in check mode.
  returned: when O(state=absent), not O(purge), and the job is registered
  type: int
  sample: 8841
"""

import json

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import NomadError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_module import NomadModule
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_plan import (
    changed_since_stop,
    plan_job_absent,
    plan_job_present,
    plan_stored_job_start,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._poll import poll_until


def load_job(client, text, variables=''):
    """The job as API JSON; HCL goes through the agent's own parser, with the variables as an HCL var file."""
    stripped = text.lstrip()
    if stripped.startswith('{'):
        job = json.loads(stripped)
        return job.get('Job', job)
    # Not canonicalized: that would fill in namespace "default", hiding a job text that names none.
    return client.put('jobs/parse', {'JobHCL': text, 'Variables': variables, 'Canonicalize': False})


def variables_text(files, values):
    """The variable files, then each value as `name = JSON` (valid HCL): one HCL var file for the parser. HCL reads
    `${` and `%{` in a quoted string as a template; doubled, each stays as given."""
    return ''.join(files) + ''.join('%s = %s\n' % (k, hcl_literal(v)) for k, v in sorted(values.items()))


def hcl_literal(value):
    return json.dumps(value).replace('${', '$${').replace('%{', '%%{')


def current_allocations(client, job_id, version):
    allocs = client.get('job/%s/allocations' % job_id) or []
    return [a for a in allocs if a.get('JobVersion') == version and a.get('DesiredStatus') == 'run']


def healthy(alloc):
    deployment = alloc.get('DeploymentStatus') or {}
    return alloc.get('ClientStatus') == 'running' and deployment.get('Healthy', True) is not False


# Task events that say why a task did not run; later events ("Not Restarting", "Alloc Unhealthy") only say that.
FAILURE_EVENTS = (
    'Driver Failure',
    'Setup Failure',
    'Failed Validation',
    'Failed Artifact Download',
    'Task hook failed',
    'Terminated',
)


def last_events(alloc):
    """Per task, the newest event that names a failure, if any, then the newest two."""
    events = []
    for name, state in sorted((alloc.get('TaskStates') or {}).items()):
        all_events = state.get('Events') or []
        failures = [e for e in all_events if e.get('Type') in FAILURE_EVENTS]
        shown = all_events[-2:]
        if failures and failures[-1] not in shown:
            shown = [failures[-1]] + shown
        for event in shown:
            events.append('%s: %s %s' % (name, event.get('Type'), event.get('DisplayMessage', '')))
    return '; '.join(events)


# Batch jobs run to an end; the others are done once running (and healthy).
BATCH_TYPES = ('batch', 'sysbatch')
ENDED = ('complete', 'failed', 'lost')


def settled(alloc, batch):
    return alloc.get('ClientStatus') in ENDED if batch else healthy(alloc)


def wait_done(module, client, job, version):
    """The allocations of job version once each runs (a batch job's: once each completed); PlanError with their
    last events when that does not come within wait_timeout, or when a batch allocation ends otherwise (the
    module's run() then reports the register as changed and written)."""
    job_id, timeout = job['ID'], module.params['wait_timeout']
    batch = job.get('Type') in BATCH_TYPES
    # A system job runs wherever it fits; other jobs must place every counted allocation (none for groups
    # scaled to 0).
    counts = [1 if tg.get('Count') is None else tg['Count'] for tg in job['TaskGroups']]
    wanted = 1 if job.get('Type') in ('system', 'sysbatch') else sum(counts)
    allocs, done = poll_until(
        lambda: current_allocations(client, job_id, version),
        lambda allocs: len(allocs) >= wanted and all(settled(a, batch) for a in allocs),
        timeout,
    )
    failed = [a for a in allocs if batch and a['ClientStatus'] != 'complete']
    if done and not failed:
        return [
            dict(id=a['ID'], node=a.get('NodeName'), client_status=a['ClientStatus'], healthy=settled(a, batch))
            for a in allocs
        ]
    if len(allocs) < wanted:
        raise PlanError(
            'job %s version %d placed %d of %d allocations within %ds; run `nomad job status %s` to '
            'see why (no eligible node, distinct_hosts, constraint or node pool).'
            % (job_id, version, len(allocs), wanted, timeout, job_id)
        )
    ended = (
        'did not complete'
        if done
        else ('has not completed after %ds' if batch else 'is not running after %ds') % timeout
    )
    raise PlanError(
        'job %s version %d %s: %s'
        % (
            job_id,
            version,
            ended,
            ' | '.join('%s %s (%s)' % (a['ID'][:8], a['ClientStatus'], last_events(a)) for a in failed or allocs),
        )
    )


def wait_stopped(module, client, job_id):
    """Returns once no allocation of job_id is pending or running; fails naming those still running."""
    live, done = poll_until(
        lambda: [
            a
            for a in client.get('job/%s/allocations' % job_id, missing_ok=True) or []
            if a['ClientStatus'] not in ENDED
        ],
        lambda live: not live,
        module.params['wait_timeout'],
    )
    if not done:
        raise PlanError(
            'job %s is stopped, but after %ds these allocations still run: %s. Check their nodes (nomad alloc '
            'status <id>).'
            % (
                job_id,
                module.params['wait_timeout'],
                ', '.join('%s on %s (%s)' % (a['ID'][:8], a.get('NodeName'), a['ClientStatus']) for a in live),
            )
        )


def read_file(field, path, what):
    try:
        with open(path) as f:
            return f.read()
    except (IOError, OSError) as e:
        raise PlanError('%s: cannot read %s (%s); give the path of %s.' % (field, path, e, what))


def load_stored(module):
    """The job Nomad stores as job_id; {'ID': job_id} when absent and not wanted."""
    client, p = module.client, module.params
    job = client.get('job/' + p['job_id'], missing_ok=True)
    if job:
        return job
    if p['state'] == 'present' and p['stopped_index'] is None:
        raise PlanError(
            'job_id: Nomad has no job %s in namespace %s to start; give src or content to run a new job, or the '
            'namespace it is in.' % (p['job_id'], client.namespace)
        )
    return dict(ID=p['job_id'])


def load(module):
    """The job as API JSON in its namespace; PlanError for a file, a text or a job that cannot be run."""
    client, p = module.client, module.params
    if p['job_id']:
        return load_stored(module)
    text = read_file('src', p['src'], 'a job file') if p['src'] else p['content']
    files = [read_file('variable_files', path, 'an HCL variables file') for path in p['variable_files']]
    try:
        job = load_job(client, text, variables_text(files, p['variables']))
    except ValueError as e:
        raise PlanError('content is not valid JSON (%s); give an HCL2 or JSON job.' % e)
    except NomadError as e:
        raise PlanError('Nomad could not parse the job: %s' % e)
    if not job.get('ID'):
        raise PlanError('the job has no ID; a job needs a name, for example job "zfs-node" { ... }.')
    client.namespace = job.get('Namespace') or client.namespace
    job['Namespace'] = client.namespace
    return job


def main():
    module = NomadModule(
        argument_spec=dict(
            src=dict(type='path'),
            content=dict(type='str'),
            job_id=dict(type='str'),
            state=dict(type='str', choices=['present', 'absent'], default='present'),
            purge=dict(type='bool', default=False),
            wait=dict(type='bool', default=True),
            wait_timeout=dict(type='int', default=300),
            variables=dict(type='dict', default={}, no_log=True),
            variable_files=dict(type='list', elements='path', default=[]),
            stopped_index=dict(type='int'),
        ),
        required_one_of=[('src', 'content', 'job_id')],
        required_by={'stopped_index': 'job_id'},
        mutually_exclusive=[('src', 'content', 'job_id')],
        supports_check_mode=True,
    )
    job = module.run(lambda: load(module))
    module.exit_json(**module.run(lambda: converge(module, job), job_id=job['ID']))


def converge(module, job):
    """Plan the job with Nomad, register it unless in check mode, wait for it; the module's result."""
    client, p = module.client, module.params
    job_id = job['ID']
    result = dict(job_id=job_id, namespace=client.namespace)
    if p['state'] == 'absent':
        current = client.get('job/' + job_id, missing_ok=True)
        plan = plan_job_absent(job_id, current, p['purge'])
        answers = module.apply(plan.steps)
        result.update(changed=bool(plan.steps), version=plan.predicted)
        if current and not p['purge']:
            # The index this stop left the job at, for a later start of it (stopped_index); -1: stopped already.
            result['job_modify_index'] = answers[0].get('JobModifyIndex', -1) if answers else -1
        if module._diff:
            result['diff'] = dict(before=plan.before, after=plan.after)
        if p['wait'] and not module.check_mode:
            wait_stopped(module, client, job_id)
        return result

    if p['job_id']:
        plan = plan_stored_job_start(job)
        left = changed_since_stop(job, p['stopped_index'])
        if left:
            # Not this stopper's to run, nor to wait for.
            result.update(changed=False, plan_diff_type='None', version=job.get('Version', -1), left_alone=left)
            if module._diff:
                result['diff'] = dict(before=plan.before, after=plan.before)
            return result
    else:
        plan = plan_job_present(job, client.put('job/%s/plan' % job_id, {'Job': job, 'Diff': True}))
    result.update(changed=bool(plan.steps), plan_diff_type=plan.predicted)
    if module._diff:
        result['diff'] = dict(before=plan.before, after=plan.after) if p['job_id'] else dict(prepared=plan.after)
    module.apply(plan.steps)
    # A job registered for the first time is version 0 (-1 while check mode has not registered it); the job is
    # read only to report its version.
    if plan.predicted == 'Added':
        result['version'] = -1 if module.check_mode else 0
    else:
        result['version'] = client.get('job/' + job_id)['Version']
    if p['wait'] and not module.check_mode:
        # A periodic or parameterized job places nothing when registered: its runs are child jobs, started by the
        # clock or by a dispatch.
        launched = job.get('Periodic') or job.get('ParameterizedJob')
        result['allocations'] = [] if launched else wait_done(module, client, job, result['version'])
    return result


if __name__ == '__main__':
    main()
