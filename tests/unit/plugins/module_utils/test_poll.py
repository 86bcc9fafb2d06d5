"""poll_until, on a clock the test moves."""

from ansible_collections.nomad_zfs.csi.plugins.module_utils._poll import poll_until


class Clock(object):
    def __init__(self):
        self.now, self.sleeps = 0.0, []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def test_stops_as_soon_as_done():
    clock, reads = Clock(), iter([1, 2, 3])
    assert poll_until(lambda: next(reads), lambda v: v == 2, 60, clock=clock, sleep=clock.sleep) == (2, True)
    assert clock.sleeps == [2.0]


def test_gives_up_without_a_pause_past_the_deadline():
    clock = Clock()
    assert poll_until(lambda: 'no', lambda v: False, 5, clock=clock, sleep=clock.sleep) == ('no', False)
    assert clock.sleeps == [2.0, 2.0] and clock.now == 4.0


def test_a_zero_timeout_reads_once():
    clock, reads = Clock(), []
    assert poll_until(lambda: reads.append(1), lambda v: False, 0, clock=clock, sleep=clock.sleep)[1] is False
    assert reads == [1] and clock.sleeps == []
