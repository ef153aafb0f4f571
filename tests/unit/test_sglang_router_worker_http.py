"""The sglang_router_worker module's HTTP paths (202 then an asynchronous listing, 400/404,
unreachable, check mode, the module's main()) against a stand-in router on a local socket
(http.server). The stand-in only exercises the client; the real router is what the smoke test
runs against."""

import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ansible_collections.sglang.deploy.plugins.modules import sglang_router_worker as m
from sglang_router_worker_support import fixture


class FakeRouter(BaseHTTPRequestHandler):
    """sglang-router 0.3.2's /workers API as measured: 202 for DELETE and POST, the change
    visible in GET /workers only a few GETs later (removal_lag, add_lag), an added worker
    first listed unhealthy (unhealthy_gets), 400 for an id that is not a UUID, 404 for an
    unknown one."""

    state = {}

    @classmethod
    def reset(cls, urls=(), **kw):
        cls.state = dict(workers={str(uuid.uuid4()): {"url": u, "healthy": True} for u in urls},
                         pending=[], requests=[], removal_lag=2, add_lag=2, unhealthy_gets=1,
                         never_add=False, mode="good", worker_metrics=[0], metrics_calls=0)
        cls.state.update(kw)

    def log_message(self, *a):
        pass

    def _send(self, code, body, ctype="application/json"):
        data = (json.dumps(body) if ctype == "application/json" else body).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _tick(self):
        """One GET /workers: pending changes come closer."""
        st = self.state
        left = []
        for change in st["pending"]:
            change["lag"] -= 1
            if change["lag"] > 0:
                left.append(change)
            elif change["op"] == "remove":
                st["workers"].pop(change["id"], None)
            elif change["op"] == "add":
                st["workers"][change["id"]] = {"url": change["url"], "healthy": st["unhealthy_gets"] == 0,
                                               "sick_left": st["unhealthy_gets"]}
        st["pending"] = left
        for w in st["workers"].values():
            if not w["healthy"]:
                if w.get("sick_left", 1) <= 0:
                    w["healthy"] = True
                w["sick_left"] = w.get("sick_left", 1) - 1

    def do_GET(self):
        st = self.state
        st["requests"].append(("GET", self.path, None))
        if self.path.startswith("/w1/metrics"):  # the worker
            values = st["worker_metrics"]
            value = values[min(st["metrics_calls"], len(values) - 1)]
            st["metrics_calls"] += 1
            if value is None:
                return self._send(404, "not found", "text/plain")
            # the recorded page with its running-requests gauge set to this poll's value
            text = re.sub(r"^(sglang:num_running_reqs\{.*\}) \S+$", r"\g<1> %s.0" % value,
                          fixture("metrics-sglang-0.5.23-busy.txt"), flags=re.M)
            # and the HTTP layer's count of the same requests
            text = re.sub(r'^(sglang:http_requests_active\{endpoint="/generate".*\}) \S+$',
                          r"\g<1> %s.0" % value, text, flags=re.M)
            return self._send(200, text, "text/plain; version=0.0.4")
        if st["mode"] == "500":
            return self._send(500, {"error": "boom", "code": "INTERNAL"})
        if st["mode"] == "garbage":
            return self._send(200, "<html>hello</html>", "text/html")
        if self.path == "/workers":
            self._tick()
            listing = [{"id": i, "url": w["url"], "model_id": "tiny-qwen2", "is_healthy": w["healthy"], "load": 0}
                       for i, w in st["workers"].items()]
            return self._send(200, {"workers": listing, "total": len(listing), "stats": {}})
        if self.path.startswith("/workers/"):
            wid = self.path.split("/")[2]
            job = next((c for c in st["pending"] if c["id"] == wid), None)
            if job:
                return self._send(200, {"id": wid, "url": job["url"], "is_healthy": False, "job_status": {
                    "job_type": "AddWorker", "status": "processing", "message": None}})
            return self._send(404, {"error": "Worker %s not found" % wid, "code": "WORKER_NOT_FOUND"})
        return self._send(404, {"detail": "Not Found"})

    def do_DELETE(self):
        st = self.state
        st["requests"].append(("DELETE", self.path, None))
        wid = self.path.split("/")[-1]
        try:
            uuid.UUID(wid)
        except ValueError:
            return self._send(400, {"error": "Invalid worker_id '%s' (expected UUID)" % wid, "code": "BAD_REQUEST"})
        if wid not in st["workers"]:
            return self._send(404, {"error": "Worker %s not found" % wid, "code": "WORKER_NOT_FOUND"})
        st["pending"].append({"op": "remove", "id": wid, "lag": st["removal_lag"]})
        return self._send(202, {"status": "accepted", "worker_id": wid,
                                "message": "Worker removal queued for background processing"})

    def do_POST(self):
        st = self.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        st["requests"].append(("POST", self.path, body))
        if "url" not in body:
            return self._send(422, "Failed to deserialize the JSON body into the target type: missing field `url`",
                              "text/plain")
        existing = [i for i, w in st["workers"].items() if w["url"] == body["url"]]
        wid = existing[0] if existing else str(uuid.uuid4())
        if not existing:
            lag = 10 ** 9 if st["never_add"] else st["add_lag"]
            st["pending"].append({"op": "add", "id": wid, "url": body["url"], "lag": lag})
        return self._send(202, {"status": "accepted", "worker_id": wid, "url": body["url"],
                                "location": "/workers/" + wid})


@pytest.fixture()
def router():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeRouter)
    th = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    th.start()
    base = "http://127.0.0.1:%d" % srv.server_address[1]
    FakeRouter.reset([base + "/w1", "http://10.0.0.2:30000"])
    yield base
    srv.shutdown()
    srv.server_close()


def params(base, state, **kw):
    p = dict(router_url=base, worker_url=base + "/w1", state=state, timeout=5, drain_timeout=5, poll_interval=0.01)
    p.update(kw)
    return p


def sent(method):
    return [r for r in FakeRouter.state["requests"] if r[0] == method]


def test_absent_removes_waits_for_the_listing_and_drains(router):
    FakeRouter.state["worker_metrics"] = [2, 1, 0]
    res = m.run(m.Router(router), params(router, "absent"), check_mode=False)
    assert res["changed"] and res["drained"] and res["in_flight_at_removal"] == 2
    assert res["workers"] == ["http://10.0.0.2:30000"]
    assert len(sent("DELETE")) == 1 and sent("DELETE")[0][1] == "/workers/" + res["worker_id"]
    assert FakeRouter.state["metrics_calls"] == 3
    assert "no request running or queued after" in res["msg"] and "2 in flight at removal" in res["msg"]


def test_absent_when_not_listed_changes_nothing(router):
    res = m.run(m.Router(router), params(router, "absent", worker_url="http://10.0.0.9:30000"), check_mode=False)
    assert not res["changed"] and res["worker_id"] is None and not sent("DELETE")
    assert res["msg"] == "http://10.0.0.9:30000 is not in router %s: nothing to remove" % router
    assert res["workers"] == [router + "/w1", "http://10.0.0.2:30000"]


def test_absent_check_mode_only_reads(router):
    res = m.run(m.Router(router), params(router, "absent", worker_url=router.upper() + "/w1/"), check_mode=True)
    assert res["changed"] and res["worker_id"] and "would remove" in res["msg"]
    assert not sent("DELETE") and FakeRouter.state["metrics_calls"] == 0


def test_absent_times_out_naming_router_worker_and_listing(router):
    FakeRouter.state["removal_lag"] = 10 ** 9
    with pytest.raises(m.RouterError) as exc:
        m.run(m.Router(router), params(router, "absent", timeout=0), check_mode=False)
    msg = str(exc.value)
    assert "router %s still lists worker %s/w1 0 s after DELETE /workers/" % (router, router) in msg
    assert "it lists: %s/w1 (healthy), http://10.0.0.2:30000 (healthy)" % router in msg


def test_absent_without_metrics_waits_the_drain_timeout_and_says_so(router):
    FakeRouter.state["worker_metrics"] = [None]
    res = m.run(m.Router(router), params(router, "absent", drain_timeout=1), check_mode=False)
    assert res["changed"] and not res["drained"] and res["in_flight_at_removal"] is None
    assert 1.0 <= res["drain_seconds"] < 3
    assert "metrics unreadable" in res["msg"] and "waited the full drain_timeout=1 s" in res["msg"]
    assert "HTTP 404" in res["msg"]


def test_present_adds_and_waits_until_listed_healthy(router):
    FakeRouter.state["workers"] = {}
    FakeRouter.state["unhealthy_gets"] = 2
    res = m.run(m.Router(router), params(router, "present", worker_url=router + "/w1/"), check_mode=False)
    assert res["changed"] and res["worker_id"] and res["workers"] == [router + "/w1"]
    assert sent("POST") == [("POST", "/workers", {"url": router + "/w1"})]
    gets = [r for r in sent("GET") if r[1] == "/workers"]
    assert len(gets) >= 1 + 2 + 2  # the first look, the listing lag, unhealthy while checked
    assert "listed healthy after" in res["msg"]


def test_present_when_listed_healthy_changes_nothing(router):
    res = m.run(m.Router(router), params(router, "present"), check_mode=False)
    assert not res["changed"] and res["worker_id"] and not sent("POST")
    assert res["msg"] == "%s/w1 is in router %s and healthy" % (router, router)


def test_present_listed_but_unhealthy_posts_again_and_waits(router):
    wid = next(iter(FakeRouter.state["workers"]))
    FakeRouter.state["workers"][wid].update(healthy=False, sick_left=3)
    res = m.run(m.Router(router), params(router, "present"), check_mode=False)
    assert res["changed"] and res["worker_id"] == wid and len(sent("POST")) == 1


def test_present_check_mode_only_reads(router):
    FakeRouter.state["workers"] = {}
    res = m.run(m.Router(router), params(router, "present"), check_mode=True)
    assert res["changed"] and res["worker_id"] is None and not sent("POST") and "would add" in res["msg"]


def test_present_times_out_with_listing_job_and_fix(router):
    FakeRouter.state["workers"] = {}
    FakeRouter.state["never_add"] = True
    with pytest.raises(m.RouterError) as exc:
        m.run(m.Router(router), params(router, "present", timeout=0), check_mode=False)
    msg = str(exc.value)
    assert "router %s does not list worker %s/w1 0 s after POST /workers; it lists: no worker" % (router, router) in msg
    assert "AddWorker processing" in msg and "may still join later" in msg
    assert msg.endswith("check that the router can reach %s/w1 (its health endpoint) and the worker serves" % router)


def test_router_errors_name_the_router_status_body_and_variable(router):
    FakeRouter.state["mode"] = "500"
    with pytest.raises(m.RouterError) as exc:
        m.Router(router).workers()
    msg = str(exc.value)
    assert msg.startswith("router %s: GET /workers -> HTTP 500: " % router)
    assert '"code": "INTERNAL"' in msg and "sglang_router_url" in msg
    FakeRouter.state["mode"] = "garbage"
    with pytest.raises(m.RouterError) as exc:
        m.Router(router).workers()
    assert "did not answer a worker listing" in str(exc.value) and "<html>hello</html>" in str(exc.value)


def test_not_a_router_hints_at_the_api(router):
    with pytest.raises(m.RouterError) as exc:
        m.Router(router + "/elsewhere").workers()
    assert "HTTP 404" in str(exc.value) and "is this URL the router?" in str(exc.value)


def test_invalid_id_is_a_400_and_an_unknown_one_is_tolerated(router):
    with pytest.raises(m.RouterError) as exc:
        m.Router(router).remove("not-a-uuid")
    assert "DELETE /workers/not-a-uuid -> HTTP 400" in str(exc.value) and "BAD_REQUEST" in str(exc.value)
    m.Router(router).remove(str(uuid.uuid4()))  # 404: removed meanwhile; the listing poll decides


def test_unreachable_router():
    with pytest.raises(m.RouterError) as exc:
        m.Router("http://127.0.0.1:9", timeout=2).workers()
    msg = str(exc.value)
    assert msg.startswith("router http://127.0.0.1:9: GET /workers -> no answer (")
    assert "sglang_router_url" in msg


def test_main_round_trip(router, run_module):
    worker = router + "/w1"
    args = dict(router_url=router, worker_url=worker, state="absent", poll_interval=0.01, drain_timeout=2)
    out = run_module(m, args, check_mode=True)
    assert out["changed"] and not sent("DELETE")
    out = run_module(m, args)
    assert out["changed"] and out["drained"] and out["in_flight_at_removal"] == 0 and out["drain_seconds"] >= 0
    assert run_module(m, args)["changed"] is False
    args["state"] = "present"
    out = run_module(m, args)
    assert out["changed"] and worker in out["workers"]
    assert run_module(m, args)["changed"] is False


def test_main_fails_with_the_router_message(run_module):
    out = run_module(m, dict(router_url="http://127.0.0.1:9", worker_url="http://127.0.0.1:9/w", state="present"))
    assert out["failed"] and "sglang_router_url" in out["msg"] and out["router_url"] == "http://127.0.0.1:9"
    out = run_module(m, dict(router_url="router:30000", worker_url="http://w:1", state="present"))
    assert out["failed"] and "not an http(s) URL" in out["msg"] and "sglang_router_url" in out["msg"]
    out = run_module(m, dict(router_url="http://r:1", worker_url="w:1", state="absent"))
    assert out["failed"] and "sglang_router_worker_url" in out["msg"]
