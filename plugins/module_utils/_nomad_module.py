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

import os

from ansible.module_utils.basic import AnsibleModule, env_fallback, missing_required_lib

from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import (
    HAS_NOMAD,
    NOMAD_IMPORT_ERROR,
    NomadClient,
    NomadError,
)
from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError

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

    def run(self, work, **context):
        """work()'s result; a planner's refusal or a Nomad error ends the module, with context in the result.

        Nomad errors are already worded with the address and the fix, and carry no token; no traceback is
        added, since python-nomad's exceptions hold the whole request.
        """
        try:
            return work()
        except (PlanError, NomadError) as e:
            self.fail_json(msg=str(e), **context)

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
        if plan.steps and not self.check_mode:
            for method, endpoint, kwargs in plan.steps:
                getattr(self.client, method)(endpoint, **kwargs)
            current = self.client.get(path, missing_ok=True)
        if self.params['state'] == 'present':
            result[key] = show(plan.steps[0][2]['body'] if plan.steps and self.check_mode else current)
        return result
