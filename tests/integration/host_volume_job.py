"""A service job for the volume tests: one exec task running a shell script with the volume at /data."""


def host_volume_job(
    job_id, volume, script, sticky, stop_on_client_after=None, namespace='default', volume_type='host', node=None
):
    """stop_on_client_after, in seconds: the group's disconnect block, which a cut-off client obeys. volume_type
    csi claims a CSI volume instead; node, a node's name, is where the job must run."""
    group = {
        'Name': 'g',
        'Count': 1,
        'Volumes': {
            'data': {
                'Name': 'data',
                'Type': volume_type,
                'Source': volume,
                'Sticky': sticky,
                'AccessMode': 'single-node-writer',
                'AttachmentMode': 'file-system',
            }
        },
        'ReschedulePolicy': {'Attempts': 0, 'Unlimited': False},
        # The task writes into its volume only, and little to its log. Nomad's defaults (300 MB, of which 100 MB for
        # logs) let two such jobs beside the plugin's tasks fill the scheduler's view of a separate host's data dir,
        # a tmpfs of 1 GiB (tests/zfsvm/hosts.sh): the next job was not placed, its disk exhausted.
        'EphemeralDisk': {'SizeMB': 20},
        'Tasks': [
            {
                'Name': 't',
                'Driver': 'exec',
                'Config': {'command': '/bin/sh', 'args': ['-c', script]},
                'VolumeMounts': [{'Volume': 'data', 'Destination': '/data'}],
                'Resources': {'CPU': 50, 'MemoryMB': 64},
                'LogConfig': {'MaxFiles': 2, 'MaxFileSizeMB': 5},
            }
        ],
    }
    if node:
        group['Constraints'] = [{'LTarget': '${node.unique.name}', 'RTarget': node, 'Operand': '='}]
    if stop_on_client_after is not None:
        group['Disconnect'] = {'StopOnClientAfter': stop_on_client_after * 1000000000}
    return {
        'Job': {'ID': job_id, 'Namespace': namespace, 'Type': 'service', 'Datacenters': ['*'], 'TaskGroups': [group]}
    }
