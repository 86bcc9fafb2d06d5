"""A stand-in for syslog: a datagram socket bound at /dev/log, where AnsibleModule's syslog() sends when there is no
journald. The unit tests read what modules log in-process; the stack tests, what modules run by Ansible on this
host logged."""

import os
import socket

SYSLOG_PATH = '/dev/log'


class SyslogSink(object):
    """with SyslogSink() as sink: ... sink.messages() is every message received so far."""

    @staticmethod
    def unavailable():
        """Why no sink can be bound here (a syslog daemon holds /dev/log, or this is not root), or None."""
        if os.path.exists(SYSLOG_PATH) or os.geteuid() != 0:
            return '%s is taken, or this is not root: nothing can stand in for syslog here' % SYSLOG_PATH
        return None

    def __enter__(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self.sock.bind(SYSLOG_PATH)
        self.sock.setblocking(False)
        self.received = []
        return self

    def messages(self):
        while True:
            try:
                self.received.append(self.sock.recv(1 << 20).decode('utf-8', 'replace'))
            except BlockingIOError:
                return list(self.received)

    def __exit__(self, *exc):
        self.sock.close()
        os.unlink(SYSLOG_PATH)
