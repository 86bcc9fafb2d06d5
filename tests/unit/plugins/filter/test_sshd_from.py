"""The zfs_replication role's from= planner: host names found, resolved with ansible.builtin.getent's real results
(captured from ansible-core 2.19's module, one name found and one not), and bad patterns refused."""

import copy
import json
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.nomad_zfs.csi.plugins.filter.sshd_from import sshd_from_addresses, sshd_from_names

LOOKUPS = json.loads((Path(__file__).parents[2] / 'fixtures' / 'getent_ahosts_2.19.json').read_text())
FOUND = LOOKUPS[0]  # localhost: 127.0.0.1
MISSING = LOOKUPS[1]  # no-such-host.example.invalid
KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK0 replica@backup-1'


def test_only_host_names_are_resolved_each_once_without_negation():
    keys = [
        {'key': KEY, 'from': 'localhost,10.0.0.2,10.0.1.0/24,10.0.2.*,fd00::1,fd00::/64,!localhost'},
        {'key': KEY, 'from': ''},
        {'key': KEY, 'from': 'backup-1.example.internal'},
    ]
    assert sshd_from_names(keys) == ['backup-1.example.internal', 'localhost']


def test_names_become_their_addresses_and_the_rest_stays():
    keys = [{'key': KEY, 'from': '10.0.1.0/24,localhost,!localhost'}, {'key': KEY, 'from': ''}]
    assert sshd_from_addresses(keys, [FOUND]) == [
        {'key': KEY, 'from': '10.0.1.0/24,127.0.0.1,!127.0.0.1'},
        {'key': KEY, 'from': ''},
    ]


def test_every_address_of_a_name_ipv4_first():
    both = copy.deepcopy(FOUND)
    both['ansible_facts']['getent_ahosts'] = {'fd00::12': [['STREAM', 'localhost']], '10.0.0.12': [['STREAM']]}
    assert sshd_from_addresses([{'key': KEY, 'from': 'localhost'}], [both])[0]['from'] == '10.0.0.12,fd00::12'


def test_a_name_that_resolves_to_nothing_is_refused_by_name():
    keys = [{'key': KEY, 'from': 'no-such-host.example.invalid'}]
    with pytest.raises(AnsibleFilterError, match='from names no-such-host.example.invalid, which this host cannot'):
        sshd_from_addresses(keys, [MISSING])


@pytest.mark.parametrize('pattern', ['*.example.internal', 'backup-?.example.internal', '!*.example.internal'])
def test_a_name_pattern_with_wildcards_is_refused(pattern):
    with pytest.raises(AnsibleFilterError, match='UseDNS yes'):
        sshd_from_names([{'key': KEY, 'from': '10.0.0.2,' + pattern}])
