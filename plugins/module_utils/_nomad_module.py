# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""NomadModule: what every nomad_* module shares, beside ZfsModule for the zfs_* ones.

Modules declare only their own options; the connection options come from nomad_argument_spec()
and the nomad_zfs.csi.nomad doc fragment.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import os

from ansible.module_utils.basic import AnsibleModule, env_fallback, missing_required_lib

from ansible_collections.nomad_zfs.csi.plugins.module_utils import _csi_retry
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import (
    HAS_NOMAD,
    NOMAD_IMPORT_ERROR,
    NomadClient,
    NomadError,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._poll import poll_until

# Default timeout of the modules whose calls wait on a CSI plugin creating, snapshotting or destroying storage.
CSI_CALL_TIMEOUT = 120


def nomad_argument_spec(**own):
    """The shared connection options plus the module's own."""
    spec = dict(
        nomad_addr=dict(type='str', default='http://127.0.0.1:4646', fallback=(env_fallback, ['NOMAD_ADDR'])),
        nomad_token=dict(type='str', no_log=True, fallback=(env_fallback, ['NOMAD_TOKEN'])),
        region=dict(type='str', fallback=(env_fallback, ['NOMAD_REGION'])),
        namespace=dict(type='str', default='default', fallback=(env_fallback, ['NOMAD_NAMESPACE'])),
        validate_certs=dict(type='bool', default=True),
        ca_cert=dict(type='path', fallback=(env_fallback, ['NOMAD_CACERT'])),
        client_cert=dict(type='path', fallback=(env_fallback, ['NOMAD_CLIENT_CERT'])),
        client_key=dict(type='path', no_log=False, fallback=(env_fallback, ['NOMAD_CLIENT_KEY'])),
        tls_server_name=dict(type='str', fallback=(env_fallback, ['NOMAD_TLS_SERVER_NAME'])),
        timeout=dict(type='int', default=10),
    )
    spec.update(own)
    return spec


class NomadModule(AnsibleModule):
    """AnsibleModule with the shared connection options, a ready client and one way to report failures."""

    def __init__(self, argument_spec, **kwargs):
        super(NomadModule, self).__init__(argument_spec=nomad_argument_spec(**argument_spec), **kwargs)
        if not HAS_NOMAD:
            self.fail_json(msg=missing_required_lib('python-nomad'), exception=NOMAD_IMPORT_ERROR)
        for field in ('ca_cert', 'client_cert', 'client_key'):
            path = self.params[field]
            if path and not os.path.isfile(path):
                self.fail_json(msg='%s: no such file %s; give the path of a PEM file.' % (field, path))
        if self.params['client_cert'] and not self.params['client_key']:
            self.fail_json(msg='client_cert needs client_key too.')
        self.client = NomadClient(self.params)
        # 'METHOD path' of each write made so far, so that a failure after some still reports them.
        self.written = []

    def run(self, work, **context):
        """work()'s result; a planner's refusal or a Nomad error ends the module, with context in the result.

        Nomad errors are already worded with the address and the fix, and carry no token; no traceback is
        added, since python-nomad's exceptions hold the whole request. When writes were made before the
        failure, the result says changed and lists them as `written`.
        """
        try:
            return work()
        except (PlanError, NomadError) as e:
            if self.written:
                context.update(changed=True, written=self.written)
            self.fail_json(msg=str(e), **context)

    def apply(self, steps, retry=None, call=None, what=''):
        """Make a plan's calls (method, API path, keyword arguments) in order, unless in check mode, where the
        plan is only the prediction; their answers ([] in check mode).

        retry(NomadError) -> bool: a refusal it accepts is tried again for up to _csi_retry.RETRY_SECONDS.
        call(method, path, kwargs) makes a call the client has no method for; by default the client's method.
        what names the object in `written` where the path does not (a host volume's create).
        """
        if self.check_mode:
            return []
        call = call or (lambda method, path, kwargs: getattr(self.client, method)(path, **kwargs))
        answers = []
        for method, path, kwargs in steps:
            once = functools.partial(call, method, path, kwargs)
            answers.append(retrying(once, retry) if retry else once())
            self.written.append('%s %s%s' % (method.upper(), path, ' (%s)' % what if what else ''))
        return answers

    def converge_at(self, path, plan_for, key, show):
        """One object at one API path that the state option makes present or absent: read it, plan with
        plan_for(current), apply unless in check mode; the result, with result[key] = show(API body) when present.

        In check mode nothing is written, so a planned write's body is shown as what would be.
        """
        current = self.client.get(path, missing_ok=True)
        plan = plan_for(current)
        result = dict(changed=bool(plan.steps), changed_fields=plan.changed_fields)
        if self._diff:
            result['diff'] = dict(before=plan.before, after=plan.after)
        if self.apply(plan.steps):
            current = self.client.get(path, missing_ok=True)
        if self.params['state'] == 'present':
            result[key] = show(plan.steps[0][2]['body'] if plan.steps and self.check_mode else current)
        return result


def retrying(call, retry):
    """call(), again while it raises a NomadError that retry accepts, for up to _csi_retry.RETRY_SECONDS."""

    def attempt():
        try:
            return call()
        except NomadError as e:
            if not retry(e):
                raise
            return e

    answer, done = poll_until(attempt, lambda a: not isinstance(a, NomadError), _csi_retry.RETRY_SECONDS)
    if not done:
        raise answer
    return answer
