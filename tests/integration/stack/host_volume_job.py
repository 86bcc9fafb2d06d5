"""A service job for the host volume tests: one exec task running a shell script with the volume at /data."""


def host_volume_job(job_id, volume, script, sticky, stop_on_client_after=None, namespace='default'):
    """stop_on_client_after, in seconds: the group's disconnect block, which a cut-off client obeys."""
    group = {
        'Name': 'g',
        'Count': 1,
        'Volumes': {
            'data': {
                'Name': 'data',
                'Type': 'host',
                'Source': volume,
                'Sticky': sticky,
                'AccessMode': 'single-node-writer',
                'AttachmentMode': 'file-system',
            }
        },
        'ReschedulePolicy': {'Attempts': 0, 'Unlimited': False},
        'Tasks': [
            {
                'Name': 't',
                'Driver': 'exec',
                'Config': {'command': '/bin/sh', 'args': ['-c', script]},
                'VolumeMounts': [{'Volume': 'data', 'Destination': '/data'}],
                'Resources': {'CPU': 50, 'MemoryMB': 64},
            }
        ],
    }
    if stop_on_client_after is not None:
        group['Disconnect'] = {'StopOnClientAfter': stop_on_client_after * 1000000000}
    return {
        'Job': {'ID': job_id, 'Namespace': namespace, 'Type': 'service', 'Datacenters': ['*'], 'TaskGroups': [group]}
    }
