"""Each Nomad module with a token holding exactly what docs/collection.md's ACL table gives it, then with one capability
fewer: the first run works, the second fails with a 403 that names the missing capability."""

import pytest

from acl_agent import PLUGIN_READ, namespace_caps

NS = 'nzc-caps'
SLEEPER = """job "caps-sleeper" {
  datacenters = ["*"]
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
"""


def caps(*names):
    return namespace_caps(NS, *names)


def variables(*names, path='nzc/*'):
    return 'namespace "%s" {\n  variables {\n    path "%s" {\n      capabilities = [%s]\n    }\n  }\n}\n' % (
        NS,
        path,
        ', '.join('"%s"' % n for n in names),
    )


NODE_READ = 'node {\n  policy = "read"\n}\n'
HOST_VOLUME = {'name': 'caps-hv', 'plugin_id': 'mkdir', 'capacity_max': '1M'}

# module, its arguments, docs/collection.md's policy for it, the same minus one capability, what the 403 then names, and
# the arguments for the second run where the first run's write would leave it nothing to do.
CASES = [
    (
        'nomad_job',
        {'content': SLEEPER, 'wait_timeout': 120},
        caps('submit-job', 'read-job'),
        caps('submit-job'),
        'read-job in namespace ' + NS,
    ),
    (
        'nomad_job',
        {'content': SLEEPER, 'wait_timeout': 120},
        caps('submit-job', 'read-job'),
        caps('read-job'),
        'parse-job (or submit-job) in namespace ' + NS,
    ),
    (
        'nomad_variable',
        {'path': 'nzc/app', 'items': {'k': 'a-long-value'}},
        variables('read', 'write'),
        variables('write'),
        'variables capability "read" on this path in namespace ' + NS,
    ),
    (
        'nomad_variable_info',
        {'path': 'nzc/app'},
        variables('read'),
        variables('list'),
        'variables capability "read" on this path in namespace ' + NS,
    ),
    (
        'nomad_csi_volume_info',
        {'plugin_id': 'zfs'},
        caps('csi-list-volume'),
        caps('read-job'),
        'csi-list-volume (or csi-read-volume, csi-mount-volume, list-jobs) in namespace ' + NS,
    ),
    (
        'nomad_csi_plugin_info',
        {'plugin_id': 'zfs'},
        PLUGIN_READ + caps('csi-list-volume'),
        caps('csi-list-volume'),
        'plugin read (plugin { policy = "read" })',
    ),
    (
        'nomad_host_volume',
        HOST_VOLUME,
        caps('host-volume-create'),
        caps('host-volume-read'),
        'host-volume-create (or host-volume-write) in namespace ' + NS,
        dict(HOST_VOLUME, name='caps-hv-2'),
    ),
]


@pytest.fixture(scope='module')
def namespace(acl):
    assert acl.module('nomad_namespace', {'name': NS})['rc'] == 0


@pytest.mark.parametrize('index', range(len(CASES)), ids=['%s-%d' % (case[0], i) for i, case in enumerate(CASES)])
def test_exactly_the_tables_capabilities_and_one_fewer(acl, namespace, index):
    module, args, exact, fewer, named = CASES[index][:5]
    second = dict(CASES[index][5] if len(CASES[index]) > 5 else args, namespace=NS)
    args = dict(args, namespace=NS)
    acl.exactly_then_one_fewer(str(index), module, args, exact, second, fewer, named)


def test_the_move_plan_with_exactly_the_tables_capabilities_and_one_fewer(acl, namespace):
    """A planned move to the node the volume is on: nothing to do, after reading the volume, the nodes and the
    journal; without node read, the 403 names it."""
    assert acl.module('nomad_host_volume', dict(HOST_VOLUME, name='caps-mv', namespace=NS))['rc'] == 0
    [node] = acl.api('GET', '/v1/nodes')
    args = {'name': 'caps-mv', 'to': node['Name'], 'namespace': NS}
    journal = variables('read', path='nomad-zfs-csi/moves/*')
    exact = caps('host-volume-read') + NODE_READ + journal
    fewer = caps('host-volume-read') + journal
    acl.exactly_then_one_fewer('move-plan', 'nomad_host_volume_move_plan', args, exact, args, fewer, 'node read')
