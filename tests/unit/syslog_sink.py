"""A stand-in for syslog: a datagram socket bound at /dev/log, where AnsibleModule's syslog() sends when there is no
journald. The unit tests read what modules log in-process; the stack tests, what modules run by Ansible on this
host logged."""

import fcntl
import os
import socket
import threading

SYSLOG_PATH = '/dev/log'
# ansible-test units runs tests in several processes at once; one sink at a time can hold /dev/log.
LOCK_PATH = '/tmp/nomad-zfs-csi-syslog-sink.lock'


class Unavailable(Exception):
    """Nothing can stand in for syslog here: not root, or a syslog daemon holds /dev/log."""


class SyslogSink(object):
    """sink = SyslogSink().open(); ... sink.messages() is every message received so far; sink.close()."""

    def open(self):
        if os.geteuid() != 0:
            raise Unavailable('this is not root, so nothing can bind %s' % SYSLOG_PATH)
        self.lock = open(LOCK_PATH, 'w')
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        if os.path.exists(SYSLOG_PATH):  # another sink removes its socket before it lets go of the lock
            self.lock.close()
            raise Unavailable('a syslog daemon holds %s' % SYSLOG_PATH)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(SYSLOG_PATH)
        self.sock.settimeout(0.05)
        self.received, self.done, self.reading = [], threading.Event(), threading.Lock()
        # Read as they come: a datagram socket queues only net.unix.max_dgram_qlen messages (10 here), and a
        # sender's syslog() then blocks until there is room.
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        return self

    def _read(self):
        while not self.done.is_set():
            with self.reading:
                try:
                    self.received.append(self.sock.recv(1 << 20).decode('utf-8', 'replace'))
                except (socket.timeout, BlockingIOError):
                    pass

    def messages(self):
        """Every message received so far, those already sent included."""
        with self.reading:
            while True:
                try:
                    self.received.append(self.sock.recv(1 << 20, socket.MSG_DONTWAIT).decode('utf-8', 'replace'))
                except (socket.timeout, BlockingIOError):
                    return list(self.received)

    def close(self):
        self.done.set()
        self.reader.join()
        self.sock.close()
        os.unlink(SYSLOG_PATH)
        self.lock.close()
