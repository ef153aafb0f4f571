"""The sglang_gateway_worker module's listing and decisions on the answers recorded from smg
1.13.0 (tests/fixtures/smg/), and its states against a fake gateway that replays the measured
behaviour (202, the worker listed `draining` for a few polls, then gone; an addition listed
`ready` a few polls later). The HTTP paths are in test_sglang_gateway_worker_http.py."""

import json

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.gateway import api
from ansible_collections.sglang.deploy.plugins.module_utils.gateway import listing
from ansible_collections.sglang.deploy.plugins.modules import sglang_gateway_worker as m
from sglang_gateway_worker_support import answer, sglang_metrics

W1 = "http://127.0.0.1:31001"
W2 = "http://127.0.0.1:31002"


def workers(name):
    status, body = answer(name)
    assert status == 200
    return listing.parse_workers(body)


def test_two_healthy_workers_are_ready():
    ws = workers("get-workers-two-healthy.json")
    assert sorted(w["url"] for w in ws) == [W1, W2]
    assert all(w["is_healthy"] and w["status"] == "ready" for w in ws)
    assert listing.summary(ws)["healthy"] == 2


def test_a_draining_worker_is_listed_unhealthy_and_not_counted():
    ws = workers("get-workers-one-draining.json")
    w1 = listing.find_worker(ws, W1 + "/")
    assert w1["status"] == "draining" and w1["is_healthy"] is False
    assert listing.summary(ws)["healthy"] == 1 and listing.summary(ws)["total"] == 2
    assert listing.decide("absent", w1) == "wait_gone"
    assert listing.decide("present", w1) == "wait_gone_then_add"


def test_a_worker_failing_health_checks_is_not_ready():
    ws = workers("get-workers-one-unhealthy.json")
    down = listing.find_worker(ws, W2)
    assert down["status"] == "not_ready" and not down["is_healthy"]
    assert listing.decide("present", down) == "wait_healthy"
    assert listing.decide("absent", down) == "remove"
    assert listing.summary(ws)["healthy"] == 1


def test_decide_on_an_unlisted_and_a_serving_worker():
    ready = listing.find_worker(workers("get-workers-two-healthy.json"), W1)
    assert listing.decide("present", ready) is None and listing.decide("absent", ready) == "remove"
    assert listing.decide("present", None) == "add" and listing.decide("absent", None) is None


@pytest.mark.parametrize("name", ["post-workers-exists.json", "delete-worker-not-uuid.json",
                                  "get-workers-no-key.json", "patch-worker.json"])
def test_answers_that_are_not_a_listing_are_refused(name):
    with pytest.raises(ValueError):
        listing.parse_workers(answer(name)[1])


def test_the_job_of_an_update_is_described():
    assert listing.format_job(answer("get-worker-by-id.json")[1]) == ""
    job = {"job_status": {"job_type": "AddWorker", "status": "processing", "message": None}}
    assert listing.format_job(json.dumps(job)) == "AddWorker processing"
    assert "keeps retrying" in listing.job_note("id1", "AddWorker processing")


def test_in_flight_of_a_busy_sglang_page():
    assert api.in_flight(sglang_metrics()) >= 1
    assert api.in_flight("smg_worker_health 1\n") is None


def test_gateway_errors_name_the_variables_to_fix():
    status, body = answer("get-workers-wrong-key.json")
    err = str(api.gateway_error("http://gw:1", "GET", "/workers", status, body))
    assert "HTTP 401" in err and "sglang_gateway_admin_api_key" in err and "sglang_gateway_url" in err


class FakeGateway:
    """Replays smg 1.13's measured answers: DELETE -> the worker listed `draining` for
    `drain_polls` GETs, then gone; POST -> listed `ready` after `add_polls` GETs."""

    def __init__(self, listed, drain_polls=2, add_polls=2, never_healthy=False):
        self.listed = {w["url"]: dict(w) for w in listed}
        self.drain_polls, self.add_polls, self.never_healthy = drain_polls, add_polls, never_healthy
        self.calls = []
        self.pending = {}

    def workers(self):
        self.calls.append("GET")
        for url, left in list(self.pending.items()):
            if left <= 0:
                del self.pending[url]
                if url in self.listed and self.listed[url]["status"] == "draining":
                    del self.listed[url]
                else:
                    self.listed[url] = dict(id="new", url=url, is_healthy=not self.never_healthy,
                                            status="not_ready" if self.never_healthy else "ready", load=0)
            else:
                self.pending[url] = left - 1
        return [dict(w) for w in self.listed.values()]

    def remove(self, worker_id):
        self.calls.append("DELETE " + worker_id)
        for w in self.listed.values():
            if w["id"] == worker_id:
                w.update(status="draining", is_healthy=False)
                self.pending[w["url"]] = self.drain_polls

    def add(self, url, key=None):
        self.calls.append("POST %s key=%s" % (url, bool(key)))
        self.pending[url] = self.add_polls
        return "new"

    def job_status(self, worker_id):
        return "AddWorker processing"


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def one(gateway):
    return [("http://gw:30080", gateway)]


def params(**kw):
    p = dict(gateway_url="http://gw:30080", worker_url=W1, state="absent", timeout=30, drain_timeout=10,
             worker_api_key="k", poll_interval=0.5, admin_api_key="a")
    p.update(kw)
    return p


def test_absent_deletes_waits_for_the_gateway_then_drains_the_worker():
    gw = FakeGateway(workers("get-workers-two-healthy.json"))
    clock = Clock()
    counts = iter([2, 1, 0])
    res = m.run(one(gw), params(), False, clock, clock.sleep, lambda url, t: (next(counts), ""))
    assert res["changed"] and res["drained"] and res["in_flight_at_removal"] == 2
    assert [c for c in gw.calls if c.startswith("DELETE")] == ["DELETE " + res["worker_id"]]
    assert [w["url"] for w in res["workers"]] == [W2] and res["healthy"] == 1


def test_absent_on_a_draining_worker_waits_without_a_second_delete():
    gw = FakeGateway(workers("get-workers-one-draining.json"))
    gw.pending[W1] = 1
    clock = Clock()
    res = m.run(one(gw), params(), False, clock, clock.sleep, lambda url, t: (0, ""))
    assert res["changed"] and not any(c.startswith("DELETE") for c in gw.calls)


def test_absent_without_metrics_waits_the_drain_timeout_and_says_why():
    gw = FakeGateway(workers("get-workers-two-healthy.json"))
    clock = Clock()
    res = m.run(one(gw), params(drain_timeout=3), False, clock, clock.sleep, lambda url, t: (None, "HTTP 404"))
    assert res["drained"] is False and "HTTP 404" in res["msg"] and res["drain_seconds"] >= 3


def test_absent_fails_when_the_gateway_keeps_the_worker():
    gw = FakeGateway(workers("get-workers-two-healthy.json"), drain_polls=10 ** 6)
    clock = Clock()
    with pytest.raises(api.GatewayError, match="still lists worker .*draining"):
        m.run(one(gw), params(timeout=5), False, clock, clock.sleep, lambda url, t: (0, ""))


def test_present_adds_with_the_key_and_waits_until_ready():
    gw = FakeGateway(workers("get-workers-one.json"))
    clock = Clock()
    res = m.run(one(gw), params(state="present"), False, clock, clock.sleep)
    assert res["changed"] and "POST %s key=True" % W1 in gw.calls and res["healthy"] == 2


def test_present_after_a_removal_still_draining_waits_then_adds():
    gw = FakeGateway(workers("get-workers-one-draining.json"))
    gw.pending[W1] = 1
    clock = Clock()
    res = m.run(one(gw), params(state="present"), False, clock, clock.sleep)
    assert res["changed"] and gw.calls.index("POST %s key=True" % W1) > 1 and res["healthy"] == 2


def test_present_that_never_turns_healthy_fails_with_the_listing_and_the_job():
    gw = FakeGateway(workers("get-workers-one.json"), never_healthy=True)
    clock = Clock()
    with pytest.raises(api.GatewayError, match="not_ready .*AddWorker processing.*sglang_gateway_worker_api_key"):
        m.run(one(gw), params(state="present", timeout=3), False, clock, clock.sleep)


def test_present_and_listed_change_nothing_when_serving():
    gw = FakeGateway(workers("get-workers-two-healthy.json"))
    res = m.run(one(gw), params(state="present"), False)
    assert not res["changed"] and gw.calls == ["GET"]
    res = m.run(one(gw), params(state="listed", worker_url=None), False)
    assert not res["changed"] and res["healthy"] == 2 and res["total"] == 2 and "2 healthy" in res["msg"]


def test_check_mode_only_reads():
    gw = FakeGateway(workers("get-workers-two-healthy.json"))
    res = m.run(one(gw), params(), True)
    assert res["changed"] and gw.calls == ["GET"] and res["msg"].startswith("would remove")


class Sequence:
    """A gateway whose successive listings are given (the last one repeats)."""

    def __init__(self, *listings):
        self.listings, self.calls = list(listings), 0

    def workers(self):
        self.calls += 1
        return self.listings[min(self.calls - 1, len(self.listings) - 1)]


def test_listed_reads_again_until_enough_workers_outside_the_batch_are_healthy():
    both = workers("get-workers-two-healthy.json")
    one_down = [dict(both[0]), dict(both[1], is_healthy=False)]
    gw, clock = Sequence(one_down, one_down, both), Clock()
    res = m.run(one(gw), params(state="listed", worker_url=None, wait_healthy=1, wait_excluding=[both[0]["url"]]),
                False, clock, clock.sleep)
    assert res["enough"] and res["healthy"] == 2 and gw.calls == 3 and res["waited"] > 0
    # never enough: the listing comes back as it is after the timeout, for the caller to judge
    gw, clock = Sequence(one_down), Clock()
    res = m.run(one(gw), params(state="listed", worker_url=None, wait_healthy=2, timeout=5), False, clock, clock.sleep)
    assert not res["enough"] and res["healthy"] == 1 and 5 <= res["waited"] < 7
    assert [w["healthy"] for w in res["workers"]] == [True, False]


GW2 = "http://gw-2:30080"


def test_absent_leaves_every_gateway_before_the_worker_is_drained_once():
    first, second = FakeGateway(workers("get-workers-two-healthy.json")), FakeGateway(workers("get-workers-two-healthy.json"))
    clock, reads = Clock(), []

    def read(url, timeout):
        # the drain starts only once no gateway lists the worker any more
        assert W1 not in first.listed and W1 not in second.listed
        reads.append(url)
        return 0, ""

    res = m.run([("http://gw:30080", first), (GW2, second)], params(), False, clock, clock.sleep, read)
    assert res["changed"] and res["drained"] and reads == [W1]
    assert [c for c in first.calls if c.startswith("DELETE")] and [c for c in second.calls if c.startswith("DELETE")]
    assert set(res["worker_ids"]) == {"http://gw:30080", GW2} and res["gateway_url"] == ["http://gw:30080", GW2]
    assert "gw-2" in res["msg"] and [w["url"] for w in res["workers"]] == [W2]


def test_present_joins_every_gateway_and_only_the_missing_one_is_posted():
    listed_in_both = workers("get-workers-two-healthy.json")
    first, second = FakeGateway(listed_in_both), FakeGateway(workers("get-workers-one.json"))
    clock = Clock()
    res = m.run([("http://gw:30080", first), (GW2, second)], params(state="present"), False, clock, clock.sleep)
    assert res["changed"] and first.calls == ["GET"] and "POST %s key=True" % W1 in second.calls
    assert res["healthy"] == 2 and all(w["gateways"] == {"http://gw:30080": "ready", GW2: "ready"}
                                       for w in res["workers"])


def test_two_listings_that_disagree_count_a_worker_healthy_only_where_both_route_to_it():
    both = workers("get-workers-two-healthy.json")
    one_down = [dict(both[0]), dict(both[1], is_healthy=False, status="not_ready")]
    combined = listing.combine([("a", both), ("b", one_down)])
    assert combined["healthy"] == 1 and combined["total"] == 2
    assert [w["healthy"] for w in combined["workers"]] == [True, False]
    assert combined["workers"][1]["gateways"] == {"a": "ready", "b": "not_ready"}
    # a worker one gateway does not list at all is not healthy either
    missing = listing.combine([("a", both), ("b", both[:1])])
    assert missing["healthy"] == 1 and missing["workers"][1]["gateways"]["b"] == "absent"
    # one gateway: the same as its own summary
    assert listing.combine([("a", one_down)])["healthy"] == listing.summary(one_down)["healthy"]
    assert [w["status"] for w in listing.combine([("a", one_down)])["workers"]] == ["ready", "not_ready"]


def test_listed_waits_until_the_floor_holds_in_every_gateway():
    both = workers("get-workers-two-healthy.json")
    one_down = [dict(both[0]), dict(both[1], is_healthy=False)]
    first, second, clock = Sequence(both), Sequence(one_down, one_down, both), Clock()
    res = m.run([("a", first), ("b", second)], params(state="listed", worker_url=None, wait_healthy=2),
                False, clock, clock.sleep)
    assert res["enough"] and res["healthy"] == 2 and second.calls == 3 and "2 gateways" in res["msg"]


def test_every_gateway_gets_its_change_before_any_is_waited_on():
    """The removal (and the addition) goes to both gateways first; the waits follow, so the two
    gateways' settle times overlap instead of adding up (the first gateway is polled again only
    after the second got its DELETE)."""
    first = FakeGateway(workers("get-workers-two-healthy.json"), drain_polls=4)
    second = FakeGateway(workers("get-workers-two-healthy.json"), drain_polls=4)
    order = []
    for name, gw in (("first", first), ("second", second)):
        remove, listing = gw.remove, gw.workers
        gw.remove = lambda worker_id, r=remove, n=name: (order.append(n + " DELETE"), r(worker_id))[1]
        gw.workers = lambda l=listing, n=name: (order.append(n + " GET"), l())[1]
    clock = Clock()
    m.run([("http://gw:30080", first), (GW2, second)], params(), False, clock, clock.sleep, lambda url, t: (0, ""))
    assert order.index("second DELETE") < order.index("first GET", order.index("first DELETE")), order
    first, second = FakeGateway(workers("get-workers-one.json")), FakeGateway(workers("get-workers-one.json"))
    res = m.run([("http://gw:30080", first), (GW2, second)], params(state="present"), False, clock, clock.sleep)
    assert first.calls[1].startswith("POST") and second.calls[1].startswith("POST") and res["healthy"] == 2
