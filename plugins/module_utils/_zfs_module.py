# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""ZfsModule: what every zfs_* module shares, beside NomadModule for the nomad_* ones."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nomad_zfs.csi.plugins.module_utils._plan import PlanError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_cli import Zfs, ZfsError
from ansible_collections.nomad_zfs.csi.plugins.module_utils._zfs_names import dataset_name_error


class ZfsModule(AnsibleModule):
    """AnsibleModule with a Zfs runner, dataset name checks and one way to report failures."""

    def __init__(self, argument_spec, **kwargs):
        super(ZfsModule, self).__init__(argument_spec=argument_spec, **kwargs)
        self.zfs = Zfs(self)
        # The zfs commands (argv) that succeeded so far, so that a failure after some still reports them.
        self.written = []

    def check_name(self, field, value=None):
        """PlanError naming the field unless value (the field's parameter by default) is a valid dataset name."""
        value = self.params[field] if value is None else value
        error = dataset_name_error(value)
        if error:
            raise PlanError('%s %r %s' % (field, value, error))

    def apply(self, commands):
        """Run a plan's zfs commands (argv lists) in order, unless in check mode, where the plan is only the
        prediction; whether any ran."""
        if self.check_mode:
            return False
        for args in commands:
            self.zfs.run(args)
            self.written.append(args)
        return bool(commands)

    def run(self, work):
        """work()'s result; a planner's refusal or a failed zfs command ends the module with a clear message.

        When commands ran before the failure, the result says changed and lists them as `written`.
        """
        try:
            return work()
        except PlanError as e:
            self.fail_json(msg=str(e), **self._written())
        except ZfsError as e:
            self.fail_json(
                msg=str(e), stderr=e.stderr, rc=e.rc, cmd=e.argv, exception=traceback.format_exc(), **self._written()
            )

    def _written(self):
        return dict(changed=True, written=self.written) if self.written else {}
