"""A Nomad client for unit tests: objects held by API path, every call recorded, errors as NomadClient raises them.

It stands in for the HTTP API only, so that main() runs in milliseconds; what a real agent does is the
integration tests' job, on the stack.
"""

import copy

from ansible_collections.nomad_zfs.csi.plugins.module_utils import _nomad_module
from ansible_collections.nomad_zfs.csi.plugins.module_utils._nomad_client import NomadError


class FakeNomad(object):
    """objects: {api path: JSON}; handlers: {(method, path): function(body, params) -> answer};
    calls: [(method, path, body or params)]."""

    def __init__(self, **objects):
        self.objects, self.handlers, self.calls, self.params, self.index = dict(objects), {}, [], None, 10
        self.headers = []  # what each get sent
        self.namespace = 'default'

    def install(self, monkeypatch):
        def connect(params):
            self.params, self.namespace = params, params['namespace']
            return self

        monkeypatch.setattr(_nomad_module, 'NomadClient', connect)
        return self

    def writes(self):
        return [c for c in self.calls if c[0] != 'get']

    def _answer(self, method, path, body, params):
        self.calls.append((method, path, body if body is not None else params))
        handler = self.handlers.get((method, path))
        if handler:
            return handler(body, params)
        return None

    def get(self, path, params=None, missing_ok=False, headers=None):
        self.headers.append(headers)
        answer = self._answer('get', path, None, params)
        if answer is not None:
            return answer
        if path not in self.objects:
            if missing_ok:
                return None
            raise NomadError('Nomad at fake: GET %s not found (404)' % path, 404, '%s not found' % path)
        return copy.deepcopy(self.objects[path])

    def get_text(self, path, params=None):
        return self._answer('get', path, None, params)

    def put(self, path, body=None, params=None):
        answer = self._answer('put', path, body, params)
        if answer is not None:
            return answer
        self.index += 1
        return {'Index': self.index}

    def delete(self, path, params=None, missing_ok=False, headers=None):
        answer = self._answer('delete', path, headers, params)
        self.objects.pop(path, None)
        return {} if answer is None else answer
