# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The connection options every nomad_* module shares (module_utils/_nomad_module.py), and the action group.
    DOCUMENTATION = r"""
attributes:
  action_group:
    description: Use C(group/nomad_zfs.csi.nomad) in C(module_defaults) to set the connection options once.
    support: full
    membership:
      - nomad_zfs.csi.nomad
options:
  nomad_addr:
    description:
      - Address of the Nomad HTTP API.
      - Falls back to the E(NOMAD_ADDR) environment variable.
    type: str
    default: http://127.0.0.1:4646
  nomad_token:
    description:
      - ACL token sent as C(X-Nomad-Token). Never logged or returned.
      - Falls back to E(NOMAD_TOKEN).
    type: str
  region:
    description: Nomad region. Falls back to E(NOMAD_REGION).
    type: str
  namespace:
    description: Nomad namespace. Falls back to E(NOMAD_NAMESPACE).
    type: str
    default: default
  validate_certs:
    description: Verify the TLS certificate of an C(https) address.
    type: bool
    default: true
  ca_cert:
    description: CA bundle for an C(https) address. Falls back to E(NOMAD_CACERT).
    type: path
  client_cert:
    description: Client certificate for mutual TLS. Falls back to E(NOMAD_CLIENT_CERT).
    type: path
  client_key:
    description: Key of O(client_cert). Falls back to E(NOMAD_CLIENT_KEY).
    type: path
  tls_server_name:
    description:
      - The name to send and to verify in the agent's certificate, in place of the host of O(nomad_addr), as
        C(nomad -tls-server-name) does. Falls back to E(NOMAD_TLS_SERVER_NAME).
      - Nomad's own certificates (C(nomad tls cert create -server)) name C(server.<region>.nomad), C(localhost) and
        C(127.0.0.1). With V(server.global.nomad), servers are reached by any address, and each proves that it is a
        server of that region.
    type: str
    version_added: 0.3.0
  timeout:
    description: Seconds to wait for each HTTP call.
    type: int
    default: 10
requirements:
  - python-nomad >= 2.0 on the host that runs the module
"""
