# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""What Nomad checks before each API call the modules make, so a 403 can name the missing capability.

Read from Nomad v1.11.3's own checks (nomad/csi_endpoint.go, job_endpoint.go, variables_endpoint.go,
namespace_endpoint.go, host_volume_endpoint.go, task_group_host_volume_claim_endpoint.go, node_endpoint.go,
command/agent/job_endpoint.go for the parse call); docs/collection.md's ACL table is the same.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

PLUGIN_READ = 'plugin read (plugin { policy = "read" })'

# (methods, path pattern, what the call needs); the first match wins, so specific paths come first.
NEEDS = (
    ('get', r'var/.+', 'variables capability "read" on this path in namespace %(ns)s'),
    ('put', r'var/.+', 'variables capability "write" on this path in namespace %(ns)s'),
    ('delete', r'var/.+', 'variables capability "destroy" on this path in namespace %(ns)s'),
    ('put', r'jobs/parse', 'parse-job (or submit-job) in namespace %(ns)s'),
    ('put', r'job/[^/]+/plan', 'submit-job (or plan-job) in namespace %(ns)s'),
    (
        'put',
        r'jobs',
        'submit-job (or register-job) in namespace %(ns)s; a job claiming a CSI volume also needs '
        'csi-mount-volume there and ' + PLUGIN_READ + ', and a CSI plugin job csi-register-plugin',
    ),
    ('get', r'job/[^/]+(/allocations)?', 'read-job in namespace %(ns)s'),
    ('delete', r'job/[^/]+', 'submit-job (or deregister-job, or purge-job to purge) in namespace %(ns)s'),
    # The host volume list filters out what host-volume-read does not allow (an empty list, never a 403).
    ('get', r'volumes\?type=host', 'host-volume-read in namespace %(ns)s'),
    ('get', r'volumes/claims', 'host-volume-read in namespace %(ns)s'),
    ('delete', r'volumes/claim/[^/]+', 'host-volume-delete in namespace %(ns)s'),
    (
        'get',
        r'volumes(/snapshot)?',
        'csi-list-volume (or csi-read-volume, csi-mount-volume, list-jobs) in namespace %(ns)s',
    ),
    ('get', r'volume/csi/[^/]+', 'csi-read-volume (or csi-mount-volume, read-job) in namespace %(ns)s'),
    ('delete', r'volume/csi/[^/]+', 'csi-write-volume in namespace %(ns)s'),
    (
        'put|delete',
        r'volume/csi/[^/]+(/create|/delete)?|volumes/snapshot',
        'csi-write-volume in namespace %(ns)s and ' + PLUGIN_READ,
    ),
    ('get', r'plugin/csi/[^/]+', PLUGIN_READ),
    ('get', r'volume/host/[^/]+', 'host-volume-read in namespace %(ns)s'),
    ('put', r'volume/host/create', 'host-volume-create (or host-volume-write) in namespace %(ns)s'),
    ('put', r'volume/host/register', 'host-volume-register (or host-volume-write) in namespace %(ns)s'),
    ('delete', r'volume/host/[^/]+', 'host-volume-delete (or host-volume-write) in namespace %(ns)s'),
    # node_endpoint.go: the list, one node and its allocations (these then filtered by read-job per namespace).
    ('get', r'nodes|node/[^/]+(/allocations)?', 'node read (node { policy = "read" })'),
    ('get', r'namespace/[^/]+', 'any capability in that namespace, or a management token'),
    ('put|delete', r'namespace/[^/]+', 'a management token'),
    ('get|put|delete', r'acl/.*', 'a management token'),
)


def needed(method, path, namespace, params=None):
    """What Nomad needs for this call, worded for an error message; None for a call not in the table. The volume
    list's type (params) is matched as part of its path, since CSI and host volumes share the endpoint."""
    path = path.strip('/')
    if path == 'volumes' and (params or {}).get('type') == 'host':
        path += '?type=host'
    for methods, pattern, needs in NEEDS:
        if method in methods.split('|') and re.match('^(%s)$' % pattern, path):
            return needs % {'ns': namespace}
    return None
