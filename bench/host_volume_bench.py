"""Create and delete through the zfs-dataset host volume plugin versus democratic-csi's CreateVolume and DeleteVolume.

The local stack (Nomad in the ZFS VM, site.yml applied): N volumes each way through Nomad's own API, one after the
other on the same agent and pool, 64 MiB each. Wall time per call is what Nomad took to answer, which includes the
plugin's work: Nomad answers a host volume create or delete, and a CSI one, only after the plugin has finished.
zfs processes are counted by a logging shim in place of /usr/sbin/zfs for the run (both plugins call it there,
democratic-csi through the storage_host zfs wrapper), and put back afterwards.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / 'tests' / 'integration'))
from zfsvm_client import booted_vm, converged_stack, management_token  # noqa: E402

N = int(os.environ.get('BENCH_N', '10'))
# The stack's agent (HTTPS, with the client certificate nomad-dev.sh made): set by main().
NOMAD = {}
SIZE = 64 << 20
CAPS = [{'AccessMode': 'single-node-writer', 'AttachmentMode': 'file-system'}]
SHIM = '#!/bin/sh\necho "$*" >> /run/zfs-bench.log\nexec /usr/sbin/zfs.bench-real "$@"\n'


def api(method, path, body=None):
    request = urllib.request.Request(
        NOMAD['addr'] + path,
        data=json.dumps(body).encode() if body is not None else None,
        method=method,
        headers={'X-Nomad-Token': management_token()},
    )
    try:
        with urllib.request.urlopen(request, timeout=300, context=NOMAD['context']) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as e:
        sys.exit('%s %s: %s %s' % (method, path, e.code, e.read().decode()))
    return json.loads(raw) if raw.strip() else None


def host_create(i):
    body = {
        'Volume': {
            'Name': 'bench-hv-%d' % i,
            'Namespace': 'default',
            'PluginID': 'zfs-dataset',
            'RequestedCapacityMaxBytes': SIZE,
            'RequestedCapabilities': CAPS,
        }
    }
    return api('PUT', '/v1/volume/host/create', body)['Volume']['ID']


def csi_create(i):
    body = {
        'Volumes': [
            {
                'ID': 'bench-csi-%d' % i,
                'Name': 'bench-csi-%d' % i,
                'PluginID': 'zfs',
                'RequestedCapacityMin': SIZE,
                'RequestedCapacityMax': SIZE,
                'RequestedCapabilities': CAPS,
            }
        ]
    }
    api('PUT', '/v1/volume/csi/bench-csi-%d/create' % i, body)
    return 'bench-csi-%d' % i


WAYS = [
    ('zfs-dataset host volume plugin', host_create, lambda vid: api('DELETE', '/v1/volume/host/' + vid)),
    (
        'democratic-csi zfs-generic-nfs (CSI)',
        csi_create,
        lambda vid: api('DELETE', '/v1/volume/csi/%s/delete' % vid),
    ),
]


def main():
    vm = booted_vm(Path(os.environ.get('TMPDIR', '/tmp')) / 'nzc-bench')
    NOMAD.update(addr=vm.nomad_addr, context=vm.nomad_ssl_context())
    converged_stack(vm)
    vm.sh(
        "mv /usr/sbin/zfs /usr/sbin/zfs.bench-real && cat > /usr/sbin/zfs <<'EOF'\n%sEOF\nchmod 755 /usr/sbin/zfs"
        % SHIM
    )
    rows = []
    try:
        for label, create, delete in WAYS:
            row = {'way': label}
            ids = []
            for phase, call in (('create', create), ('delete', delete)):
                vm.sh(': > /run/zfs-bench.log')
                start = time.monotonic()
                if phase == 'create':
                    ids = [call(i) for i in range(N)]
                else:
                    for vid in ids:
                        call(vid)
                row[phase + '_ms'] = (time.monotonic() - start) * 1000 / N
                row[phase + '_zfs'] = int(vm.sh('wc -l < /run/zfs-bench.log').stdout) / N
            rows.append(row)
    finally:
        vm.sh('mv /usr/sbin/zfs.bench-real /usr/sbin/zfs')
    version = vm.sh('/usr/sbin/zfs version | head -1').stdout.strip()
    print('# Volume create and delete through Nomad on the local stack (%s, %d volumes each way)\n' % (version, N))
    print('| way | ms per create | zfs processes per create | ms per delete | zfs processes per delete |')
    print('|---|---|---|---|---|')
    for row in rows:
        print(
            '| %s | %.0f | %.1f | %.0f | %.1f |'
            % (row['way'], row['create_ms'], row['create_zfs'], row['delete_ms'], row['delete_zfs'])
        )
    ours, anchor = rows
    print(
        '\ndemocratic-csi / zfs-dataset: create %.2fx time, %.1fx zfs processes; '
        'delete %.2fx time, %.1fx zfs processes.'
        % (
            anchor['create_ms'] / ours['create_ms'],
            anchor['create_zfs'] / ours['create_zfs'],
            anchor['delete_ms'] / ours['delete_ms'],
            anchor['delete_zfs'] / max(ours['delete_zfs'], 0.1),
        )
    )


if __name__ == '__main__':
    main()
