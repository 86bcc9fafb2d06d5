# What the tests' Nomad agents (scripts/nomad-dev.sh's, node B's of tests/integration/stack/node_b.py, and the
# separate hosts' of tests/integration/cluster) change for the VM's emulated CPU. Production agents keep the defaults.
#
# Host and task statistics every 30 s, not every second: no test reads them, and at 1 s the agent and its task
# executors took about 19 % of the emulated CPU while idle (10 % at 30 s, measured with top in the VM).
telemetry {
  collection_interval = "30s"
}
# An HTTPS connection must finish its TLS handshake and send its request's first byte within
# https_handshake_timeout (5 s by default), or the agent closes it without a response. Under the VM's load (a load
# average of 13 on one vCPU while a second agent started) a poll of /v1/nodes from this host was closed so:
# `http.client.RemoteDisconnected: Remote end closed connection without response` (CI of stop 68). The RPC
# handshake has the same limit.
limits {
  https_handshake_timeout = "60s"
  rpc_handshake_timeout   = "60s"
}
