# -*- coding: utf-8 -*-
# Copyright: nomad_zfs.csi contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Private to the nomad_zfs.csi collection: not a public API, and it may change in any release.
"""One wait loop for every module that waits for Nomad or retries it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time


def poll_until(read, done, timeout, pause=2.0, clock=None, sleep=None):
    # type: (Callable[[], T], Callable[[T], bool], float, float, Any, Any) -> tuple[T, bool]
    """Call read() until done(value) or timeout seconds have passed; returns (last value, whether done).

    read() runs at least once; no pause starts that would end after the deadline. clock and sleep default
    to time.monotonic and time.sleep, looked up on each call so that tests can replace them.
    """
    clock, sleep = clock or time.monotonic, sleep or time.sleep
    deadline = clock() + timeout
    while True:
        value = read()
        if done(value):
            return value, True
        if clock() + pause > deadline:
            return value, False
        sleep(pause)
