"""The sglang_router_worker module's drain and poll loops (drain, wait_listing) on a fake clock
that only moves when the code sleeps, with stand-ins for the /metrics reading and the router
listing."""

from ansible_collections.sglang.deploy.plugins.modules import sglang_router_worker as m


class Clock:
    """A clock that only moves when the code sleeps."""

    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, seconds):
        self.t += seconds


def reader(*counts):
    """read_in_flight stand-in: one answer per call, the last repeated."""
    calls = []

    def read(url, timeout=None):
        calls.append(timeout)
        value = counts[min(len(calls) - 1, len(counts) - 1)]
        return (None, "unreadable") if value is None else (value, "")
    read.calls = calls
    return read


def test_drain_stops_at_the_first_zero():
    clock = Clock()
    d = m.drain("http://w:1", 30, 0.5, reader(3, 2, 0, 5), clock, clock.sleep)
    assert d == {"drained": True, "drain_seconds": 1.0, "in_flight_at_removal": 3, "last": 0, "why": ""}


def test_drain_idle_worker_is_immediate_and_zero_timeout_reads_once():
    clock = Clock()
    assert m.drain("http://w:1", 30, 0.5, reader(0), clock, clock.sleep)["drain_seconds"] == 0.0
    read = reader(4)
    d = m.drain("http://w:1", 0, 0.5, read, clock, clock.sleep)
    assert len(read.calls) == 1 and not d["drained"] and d["last"] == 4 and d["in_flight_at_removal"] == 4


def test_drain_gives_up_after_drain_timeout_with_requests_left():
    clock = Clock()
    d = m.drain("http://w:1", 5, 0.5, reader(2), clock, clock.sleep)
    assert not d["drained"] and d["last"] == 2 and d["in_flight_at_removal"] == 2
    assert d["drain_seconds"] == 5.0


def test_drain_without_metrics_waits_the_whole_drain_timeout():
    clock = Clock()
    read = reader(None)
    d = m.drain("http://w:1", 4, 0.5, read, clock, clock.sleep)
    assert d == {"drained": False, "drain_seconds": 4.0, "in_flight_at_removal": None, "last": None,
                 "why": "unreadable"}
    # a reading never overruns the drain_timeout by much: its timeout is what is left (at least 1 s)
    assert read.calls[0] == 4 and read.calls[-1] == 1.0


def test_drain_metrics_that_appear_late_still_count():
    clock = Clock()
    d = m.drain("http://w:1", 10, 0.5, reader(None, None, 1, 0), clock, clock.sleep)
    assert d["drained"] and d["in_flight_at_removal"] == 1 and d["drain_seconds"] == 1.5


class ListingRouter:
    def __init__(self, *listings):
        self.listings = listings
        self.calls = 0

    def workers(self):
        self.calls += 1
        return self.listings[min(self.calls - 1, len(self.listings) - 1)]


def test_wait_listing_polls_until_done_or_timeout():
    w = {"id": "1", "url": "http://a:1", "is_healthy": True}
    clock = Clock()
    router = ListingRouter([w], [w], [])
    ok, workers, worker = m.wait_listing(router, "http://a:1/", 10, 0.5, lambda x: x is None, clock, clock.sleep)
    assert ok and workers == [] and worker is None and router.calls == 3
    clock = Clock()
    router = ListingRouter([w])
    ok, workers, worker = m.wait_listing(router, "http://a:1", 3, 0.5, lambda x: x is None, clock, clock.sleep)
    assert not ok and worker == w and router.calls == 7  # t = 0, 0.5, ... 3.0
