# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""Unknown keys in ACL policy rules, found before Nomad stores them.

Nomad v1.11.3 refuses unknown keys only at the top level of a policy. Inside a block it stores them and grants
nothing: `namespace "a" { capabilites = ["read-job"] }` (a typo) becomes a policy that allows nothing, silently.
This reads the rules' block structure (HCL's keys, labels, braces, strings and comments) and names every key the
policy schema (acl/policy.go) does not have. Anything it cannot read is left to Nomad's own parser.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_CAPS = {'policy': None, 'capabilities': None}
# key -> (takes a label, the keys its block may hold); None marks an attribute.
SCHEMA = {
    'namespace': (
        True,
        {'policy': None, 'capabilities': None, 'variables': (False, {'path': (True, {'capabilities': None})})},
    ),
    'node_pool': (True, _CAPS),
    'host_volume': (True, _CAPS),
    'agent': (False, {'policy': None}),
    'node': (False, {'policy': None}),
    'operator': (False, _CAPS),
    'sentinel': (False, _CAPS),
    'quota': (False, {'policy': None}),
    'plugin': (False, {'policy': None}),
}

_TOKEN = re.compile(
    r'\s+|#[^\n]*|//[^\n]*|/\*.*?\*/'  # space and comments
    r'|(?P<str>"(?:[^"\\]|\\.)*")'
    r'|(?P<word>[A-Za-z_][A-Za-z0-9_.-]*|-?[0-9][0-9.]*)'
    r'|(?P<punct>[{}\[\]=,:])',
    re.S,
)


class _Unreadable(Exception):
    pass


def _tokens(text):
    pos, out = 0, []
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise _Unreadable()
        pos = match.end()
        for kind in ('str', 'word', 'punct'):
            if match.group(kind) is not None:
                value = match.group(kind)
                out.append((kind, value[1:-1] if kind == 'str' else value))
    return out


class _Reader(object):
    def __init__(self, tokens):
        self.tokens, self.i, self.found = tokens, 0, []

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None)

    def take(self, value=None):
        token = self.peek()
        if token[0] is None or (value is not None and token[1] != value):
            raise _Unreadable()
        self.i += 1
        return token

    def value(self):
        """Skip one attribute value: a string, word, list or object."""
        kind, value = self.take()
        if value == '[':
            while self.peek()[1] != ']':
                self.value()
                if self.peek()[1] == ',':
                    self.take()
            self.take(']')
        elif value == '{':
            self.body(None, '')
            self.take('}')
        elif kind == 'punct':
            raise _Unreadable()

    def body(self, schema, where):
        """Read keys until '}' or the end; record keys schema does not have (schema None: anything goes)."""
        while self.peek()[0] is not None and self.peek()[1] != '}':
            kind, key = self.take()
            if kind == 'punct':
                raise _Unreadable()
            labels = []
            while self.peek()[0] == 'str':
                labels.append(self.take()[1])
            rule = schema.get(key.lower(), False) if schema is not None else None
            if schema is not None and rule is False:
                self.found.append((where, key, sorted(schema)))
                rule = None
            if self.peek()[1] in ('=', ':'):
                self.take()
                if self.peek()[1] == '{' and rule:
                    self.take('{')
                    self.body(rule[1], _where(where, key, labels))
                    self.take('}')
                else:
                    self.value()
            else:
                self.take('{')
                self.body(rule[1] if rule else None, _where(where, key, labels))
                self.take('}')
            if self.peek()[1] == ',':
                self.take()


def _where(where, key, labels):
    block = key + ''.join(' "%s"' % label for label in labels)
    return '%s > %s' % (where, block) if where else block


def unknown_keys(rules):
    """[(block, key, keys allowed there)] for each key the policy schema does not have; [] when there are none
    or when the rules cannot be read here (Nomad's parser then has its say)."""
    try:
        reader = _Reader(_tokens(rules))
        reader.body(SCHEMA, '')
        if reader.peek()[0] is not None:
            return []
    except (_Unreadable, RecursionError):
        return []
    return reader.found


def describe(found):
    """The unknown keys as one sentence for the operator."""
    return '; '.join(
        'unknown key %r %s (allowed there: %s)'
        % (key, 'in ' + where if where else 'at the top level', ', '.join(allowed))
        for where, key, allowed in found
    )
