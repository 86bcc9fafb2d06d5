"""The policy key check: every key Nomad's schema has passes, a misspelt one is named where it is, and rules it
cannot read are left to Nomad."""

import pytest

from ansible_collections.nomad_zfs.csi.plugins.module_utils._acl_rules_keys import describe, unknown_keys

# Every block and attribute of acl/policy.go in Nomad v1.11.3, in the forms its docs use.
EVERY_KEY = """
# a comment
namespace "team-a" {
  policy       = "read"
  capabilities = ["submit-job", "csi-mount-volume"]
  variables {
    path "nzc/*" {
      capabilities = ["read", "write"]
    }
  }
}
namespace "*" { policy = "deny" }
node_pool "default" { policy = "read" capabilities = ["read"] }
host_volume "pg*" { policy = "write" }
agent { policy = "read" }   // trailing comment
node { policy = "read" }
/* a block comment with { braces } */
operator { policy = "read" }
quota { policy = "read" }
plugin { policy = "read" }
sentinel { policy = "read" }
"""


def test_every_key_of_the_schema_passes():
    assert unknown_keys(EVERY_KEY) == []


def test_the_role_templates_pass():
    # The nomad_access role's own policies, as rendered for one tenant.
    rules = 'namespace "a" {\n  capabilities = ["submit-job", "list-jobs"]\n}\nplugin {\n  policy = "read"\n}\n'
    assert unknown_keys(rules) == []


@pytest.mark.parametrize(
    'rules, where, key',
    [
        ('namespace "a" { capabilites = ["read-job"] }', 'namespace "a"', 'capabilites'),
        (
            'namespace "a" { variables { path "x" { policy = "read" } } }',
            'namespace "a" > variables > path "x"',
            'policy',
        ),
        ('plugins { policy = "read" }', '', 'plugins'),
        ('agent { capabilities = ["read"] }', 'agent', 'capabilities'),
        ('"namespace" "a" { "polcy" = "read" }', 'namespace "a"', 'polcy'),
    ],
)
def test_an_unknown_key_is_named_where_it_is(rules, where, key):
    [(found_where, found_key, allowed)] = unknown_keys(rules)
    assert (found_where, found_key) == (where, key) and allowed


def test_the_sentence_names_the_key_the_block_and_what_is_allowed():
    text = describe(unknown_keys('namespace "a" { capabilites = ["read-job"] }'))
    assert text == 'unknown key \'capabilites\' in namespace "a" (allowed there: capabilities, policy, variables)'


@pytest.mark.parametrize('rules', ['namespace "a" { policy = ', 'namespace "a" {{', 'x = <<EOF\nfoo\nEOF\n', '}'])
def test_rules_it_cannot_read_are_left_to_nomad(rules):
    assert unknown_keys(rules) == []
