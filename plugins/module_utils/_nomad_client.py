# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""One Nomad HTTP API client for every nomad_* module (python-nomad underneath).

Errors name the address and the fix and never contain the token; they keep the HTTP status and
Nomad's own error text, so callers decide on those and not on the wording.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import traceback

try:
    from urllib.parse import quote
except ImportError:  # Python 2, which ansible-test's sanity imports still parse
    from urllib import quote

from ansible_collections.nomad_zfs.csi.plugins.module_utils._acl_needs import needed

try:
    import nomad.api.base
    import nomad.api.exceptions
    import requests
    from requests.adapters import HTTPAdapter
    from requests.exceptions import ReadTimeout

    HAS_NOMAD = True
    NOMAD_IMPORT_ERROR = None

    class _Requester(nomad.api.base.Requester):
        """python-nomad's requester for any /v1 path (its own endpoints lack CSI and parse)."""

        def _endpoint_builder(self, *args):
            # The base class joins an empty ENDPOINT in, giving v1//path, which Nomad redirects.
            return '%s/%s' % (self.version, '/'.join(a for a in args if a))

    class _ServerNameAdapter(HTTPAdapter):
        """HTTPS that sends and checks one name of the agent's certificate, whatever host the address names, as
        Nomad's CLI does with -tls-server-name: Nomad's own certificates hold server.<region>.nomad, not the
        address an operator reaches the servers by."""

        def __init__(self, server_name):
            self._server_name = server_name
            super(_ServerNameAdapter, self).__init__()

        def init_poolmanager(self, *args, **kwargs):
            # server_hostname alone: urllib3 2 has OpenSSL check the certificate against it, as against the
            # address's host (assert_hostname would move the check into urllib3, with other errors).
            kwargs.update(server_hostname=self._server_name)
            super(_ServerNameAdapter, self).init_poolmanager(*args, **kwargs)

        def proxy_manager_for(self, proxy, **proxy_kwargs):
            # Through HTTPS_PROXY (a bastion's SOCKS proxy, as docs/deploy.md has it) too: requests makes those
            # pools apart from init_poolmanager's.
            proxy_kwargs.update(server_hostname=self._server_name)
            return super(_ServerNameAdapter, self).proxy_manager_for(proxy, **proxy_kwargs)

except ImportError:
    HAS_NOMAD = False
    NOMAD_IMPORT_ERROR = traceback.format_exc()


def path_segments(path):
    """The path's segments, each percent-encoded: a name that others choose (a job ID, a variable path) stays one
    segment, so that a `?`, `#` or `%` in it cannot add a query (another namespace) or reach another endpoint. A `.`
    or `..` segment, which the HTTP library would fold into its parent, is refused."""
    segments = path.strip('/').split('/')
    if any(segment in ('.', '..') for segment in segments):
        raise NomadError('Refused to call Nomad at a path with a . or .. segment: %s' % path)
    return [quote(segment, safe='') for segment in segments]


class NomadError(Exception):
    """A Nomad API failure, already worded for the operator; status and nomad_error are what Nomad answered."""

    def __init__(self, msg, status=None, nomad_error=''):
        super(NomadError, self).__init__(msg)
        self.status, self.nomad_error = status, nomad_error


class NomadClient(object):
    """Thin JSON client: get/put/delete on /v1 paths, with errors that say what to fix."""

    def __init__(self, params):
        self.addr = params['nomad_addr'].rstrip('/')
        self.namespace = params['namespace']
        self.timeout = params['timeout']
        self.server_name = params.get('tls_server_name')
        self.calls = 0
        # requests takes a CA bundle's path, or a bool; validate_certs=false wins over any CA.
        verify = (params['ca_cert'] or True) if params['validate_certs'] else False
        cert = (params['client_cert'], params['client_key']) if params['client_cert'] else ()
        session = requests.Session()
        if self.server_name:
            session.mount('https://', _ServerNameAdapter(self.server_name))
        self._requester = _Requester(
            session=session,
            address=self.addr,
            token=params['nomad_token'],
            timeout=params['timeout'],
            verify=verify,
            cert=cert,
            region=params['region'],
        )

    def get(self, path, params=None, missing_ok=False, headers=None):
        return self._call('get', path, params=params, missing_ok=missing_ok, headers=headers)

    def get_text(self, path, params=None):
        """A plain-text read, such as a task's log; None when Nomad has none."""
        return self._call('get', path, params=params, missing_ok=True, text=True)

    def put(self, path, body=None, params=None):
        return self._call('put', path, params=params, json=body)

    def delete(self, path, params=None, missing_ok=False, headers=None):
        return self._call('delete', path, params=params, missing_ok=missing_ok, headers=headers)

    def _call(self, method, path, params=None, json=None, missing_ok=False, headers=None, text=False):
        """One HTTP call. missing_ok turns a 404 into None."""
        query = {'namespace': self.namespace}
        query.update(params or {})
        self.calls += 1
        try:
            resp = self._requester.request(
                *path_segments(path), method=method, params=query, json=json, headers=headers
            )
        except nomad.api.exceptions.URLNotFoundNomadException as e:
            if missing_ok:
                return None
            msg = 'Nomad at %s: %s %s not found (404): %s' % (self.addr, method.upper(), path, _body(e))
            raise NomadError(msg, 404, _text(e))
        except nomad.api.exceptions.URLNotAuthorizedNomadException as e:
            needs = needed(method, path, query['namespace'], query)
            raise NomadError(
                'Nomad at %s answered %s to %s %s: %s. Give nomad_token (or NOMAD_TOKEN) a policy with %s.'
                % (
                    self.addr,
                    _status(e),
                    method.upper(),
                    path,
                    _body(e),
                    needs or 'what this call needs in namespace %s' % query['namespace'],
                ),
                _status(e),
                _text(e),
            )
        except nomad.api.exceptions.BaseNomadException as e:
            if isinstance(getattr(e, 'nomad_resp', None), ReadTimeout):
                raise NomadError(
                    'Nomad at %s did not answer %s %s within %ds. It is reachable, and the call may '
                    'still finish there: a CSI plugin can take longer to create or snapshot a volume. '
                    'Raise timeout and run again.' % (self.addr, method.upper(), path, self.timeout)
                )
            unverified = _unverified_certificate(e)
            if unverified:
                if self.server_name:
                    raise NomadError(
                        'Nomad at %s: its TLS certificate was not verified as %s, the name tls_server_name (or '
                        'NOMAD_TLS_SERVER_NAME) gives (%s). Give nomad_ca_cert (or NOMAD_CACERT) the CA that signed '
                        "it, and a name the certificate holds: Nomad's own `nomad tls cert create -server` names "
                        'server.<region>.nomad.' % (self.addr, self.server_name, unverified)
                    )
                raise NomadError(
                    'Nomad at %s: its TLS certificate was not verified (%s). Give nomad_ca_cert (or NOMAD_CACERT) '
                    "the CA that signed it, and a certificate that names the host of nomad_addr: Nomad's own "
                    '`nomad tls cert create -server` names only server.<region>.nomad, localhost and 127.0.0.1; add '
                    'that host with -additional-dnsname (or -additional-ipaddress), or give tls_server_name (or '
                    'NOMAD_TLS_SERVER_NAME) a name it holds, such as server.global.nomad.' % (self.addr, unverified)
                )
            if getattr(e, 'nomad_resp', None) is None or not hasattr(e.nomad_resp, 'status_code'):
                raise NomadError(
                    'Cannot reach Nomad at %s (%s). Check that the agent is running and that '
                    'nomad_addr (or NOMAD_ADDR) points at its HTTP API.' % (self.addr, _first_line(e))
                )
            msg = 'Nomad at %s refused %s %s (%s): %s' % (self.addr, method.upper(), path, _status(e), _body(e))
            raise NomadError(msg, _status(e), _text(e))
        if resp.status_code >= 300:
            raise NomadError(
                "Nomad at %s answered %s %s to %s %s; check that nomad_addr is the agent's "
                'address itself.' % (self.addr, resp.status_code, resp.reason, method.upper(), path),
                resp.status_code,
            )
        if text:
            return resp.text
        if not resp.content:
            return {}
        return resp.json()


def csi_secrets_header(secrets):
    """Nomad's X-Nomad-CSI-Secrets header for secrets, or None: CSI secrets travel in this header, never
    in the URL that proxies log."""
    if not secrets:
        return None
    return {'X-Nomad-CSI-Secrets': ','.join('%s=%s' % kv for kv in sorted(secrets.items()))}


def _status(exc):
    return getattr(getattr(exc, 'nomad_resp', None), 'status_code', None)


def _text(exc):
    """Nomad's error text, as it sent it (stripped)."""
    return (getattr(getattr(exc, 'nomad_resp', None), 'text', '') or '').strip()


def _body(exc):
    return _text(exc)[:500] or 'no details'


def _unverified_certificate(exc):
    """Why the agent's certificate failed verification (an unknown CA, a name it does not hold), or None. requests
    wraps the ssl module's error in two layers of its own and urllib3's; their text keeps OpenSSL's reason."""
    text = str(getattr(exc, 'nomad_resp', exc))
    if 'CERTIFICATE_VERIFY_FAILED' not in text:
        return None
    reason = re.search(r'certificate verify failed: (.*?)\s*\(_ssl\.c', text)
    return reason.group(1).strip() if reason else 'CERTIFICATE_VERIFY_FAILED'


def _first_line(exc):
    return str(getattr(exc, 'nomad_resp', exc)).splitlines()[0][:300] if str(exc) else type(exc).__name__
