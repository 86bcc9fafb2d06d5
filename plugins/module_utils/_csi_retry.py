# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""Which answers to a CSI write (volume or snapshot) mean "the same call succeeds a little later".

NomadModule.apply(steps, retry=csi_write_retryable) makes such a call again for up to RETRY_SECONDS:
- Nomad's 500 "plugin has no controller", seen in CI on a fresh dev agent right after the plugin read healthy
  (once for more than 30 s on a busy emulated VM, and on 2026-12-02 for more than 120 s in a rehearsal: Nomad sets
  it from the controller's last fingerprint, which a failed probe leaves empty). Its 500 "no healthy controllers
  for CSI plugin", seen while the controller task restarted (its variable changed) under a create. Nomad refuses
  both before calling the plugin.
- The plugin's gRPC Aborted, which CSI defines as "an operation is pending for this volume, retry": democratic-csi
  answers it to a DeleteVolume that arrives while the node still unstages the volume for an allocation that just
  stopped.
- gRPC Unavailable, which CSI leaves to the caller to retry: seen in CI as "closing transport due to: connection
  error ... received prior goaway" when the controller task restarted under a create.
- A DeleteVolume whose dataset is busy: democratic-csi tries its destroy for 60 s, then answers Internal with ZFS's
  "pool or dataset is busy". Seen in a rehearsal on 2026-12-04, beside two emulated VMs: the delete of a volume
  whose workload had just stopped, its claim freed, found the storage host's unmount still refused a minute on.
  A dataset that something keeps busy for good still fails, with that answer, after RETRY_SECONDS.
CSI's CreateVolume, DeleteVolume, CreateSnapshot and DeleteSnapshot are idempotent, so the same call again is safe.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

NO_CONTROLLER = 'plugin has no controller'
NO_HEALTHY_CONTROLLER = 'no healthy controllers for CSI plugin'
ABORTED = 'code = Aborted'
UNAVAILABLE = 'code = Unavailable'
DELETE_VOLUME, BUSY = 'CSI.ControllerDeleteVolume', 'dataset is busy'
RETRY_SECONDS = 300


def csi_write_retryable(error):
    """Whether a NomadError from a CSI write is one of the passing answers above."""
    return error.status == 500 and (
        error.nomad_error.endswith(NO_CONTROLLER)
        or error.nomad_error.startswith(NO_HEALTHY_CONTROLLER)
        or ABORTED in error.nomad_error
        or UNAVAILABLE in error.nomad_error
        or (DELETE_VOLUME in error.nomad_error and BUSY in error.nomad_error)
    )
