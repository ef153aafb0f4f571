#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the controller (delegate_to: localhost by default): takes one SGLang server out of an
# sglang-router (smg) and lets its in-flight requests finish, or puts it back and waits until the
# router calls it healthy. Standard library only: HTTP and the /metrics reader are the shared
# plugins/module_utils/sglang_http.py and plugins/module_utils/sglang_prometheus.py, reading the router's
# listing is this role's plugins/module_utils/sglang_router_listing.py.

DOCUMENTATION = r"""
---
module: sglang_router_worker
short_description: Remove an SGLang worker from an sglang-router and drain it, or add it back
description:
  - Uses the worker API of sglang-router 0.3.x (smg), that is C(GET /workers), C(DELETE /workers/<id>)
    and C(POST /workers); the older C(/add_worker) and C(/remove_worker) answer 404 there.
  - Both changes are asynchronous on the router (it answers 202); the module polls
    C(GET /workers) until the change shows, for at most I(timeout) seconds.
  - With I(state=absent), after the router stopped listing the worker, it waits until the worker
    itself has no running or queued request, reading the gauges C(sglang:num_running_reqs) and
    C(sglang:num_queue_reqs) of C(<worker_url>/metrics) (SGLang started with
    C(--enable-metrics)), and its active HTTP requests (C(sglang:http_requests_active) other than
    C(/metrics)), for at most I(drain_timeout) seconds. Without readable gauges it waits
    the whole I(drain_timeout) and says so in C(msg).
  - URLs are compared normalised (trailing slash stripped, scheme and host lower-cased).
  - In check mode only C(GET /workers) is sent; C(changed) says whether a change would be made.
options:
  router_url:
    description: Base URL of the router, e.g. C(http://router:30000).
    type: str
    required: true
  worker_url:
    description: URL of the SGLang server as the router knows it, e.g. C(http://10.0.0.5:30000).
    type: str
    required: true
  state:
    description:
      - C(absent) removes the worker from the router and drains it.
      - C(present) adds it and waits until the router lists it as healthy.
    type: str
    required: true
    choices: [absent, present]
  timeout:
    description: Seconds to wait for the router to apply the change.
    type: int
    default: 120
  drain_timeout:
    description:
      - Seconds to wait, after the removal, for the worker's running and queued requests to
        reach 0 (I(state=absent) only). C(0) reads the gauges once and does not wait.
    type: int
    default: 30
  worker_api_key:
    description: The worker's SGLang C(--api-key), sent as C(api_key) of C(POST /workers) (the router then uses it).
    type: str
  poll_interval:
    description: Seconds between two polls of the router or of the worker's metrics.
    type: float
    default: 0.5
author: [sglang_deploy]
"""

EXAMPLES = r"""
- name: Take this host out of the router before its restart
  sglang.deploy.sglang_router_worker:
    router_url: http://router.example:30000
    worker_url: "http://{{ ansible_host }}:30000"
    state: absent
    drain_timeout: 60
  delegate_to: localhost

- name: Put it back once it passed its gate
  sglang.deploy.sglang_router_worker:
    router_url: http://router.example:30000
    worker_url: "http://{{ ansible_host }}:30000"
    state: present
  delegate_to: localhost
"""

RETURN = r"""
worker_url:
  description: The worker URL as given.
  returned: always
  type: str
router_url:
  description: The router URL as given.
  returned: always
  type: str
worker_id:
  description: The router's id of the worker (before removal, or after addition); null when not listed.
  returned: always
  type: str
drained:
  description: Whether the worker was seen with 0 running and 0 queued requests after its removal.
  returned: always
  type: bool
drain_seconds:
  description: Seconds spent draining after the router stopped listing the worker.
  returned: always
  type: float
in_flight_at_removal:
  description: Running + queued requests on the worker at the first metrics reading after its removal; null when unreadable.
  returned: always
  type: int
workers:
  description: URLs the router lists after the change (before it, in check mode).
  returned: always
  type: list
  elements: str
msg:
  description: What was done, or would be done in check mode.
  returned: always
  type: str
"""

import json
import time
import urllib.parse

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_http import request
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_prometheus import parse_prometheus_sums
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_router_listing import (
    decide,
    describe_workers,
    find_worker,
    format_job,
    job_note,
    parse_workers,
)

REQUEST_TIMEOUT = 10.0
RUNNING = "sglang:num_running_reqs"
QUEUED = "sglang:num_queue_reqs"
# HTTP requests the server is answering (per endpoint); it sees a request before the scheduler
# gauges do (those update at prefill and every few decode steps). /metrics itself is not counted.
ACTIVE_HTTP = "sglang:http_requests_active"
METRICS_ENDPOINT = 'endpoint="/metrics"'
FIX_ROUTER = "check the variable sglang_router_url (and that the router runs and is reachable from here)"


# --------------------------------------------------------------------------------------------
# A worker's in-flight requests (tests/unit/test_sglang_router_worker.py)
# --------------------------------------------------------------------------------------------
def active_http(metrics_text):
    """Active HTTP requests of an SGLang /metrics page except /metrics itself, or None."""
    return parse_prometheus_sums(metrics_text, (ACTIVE_HTTP,), skip=METRICS_ENDPOINT)[ACTIVE_HTTP]


def in_flight(metrics_text):
    """Requests still in the server: running + queued (scheduler gauges), or the active HTTP
    requests when those are more (a request still being tokenized); None without both gauges."""
    # one pass: the skipped label only appears on http_requests_active samples
    sums = parse_prometheus_sums(metrics_text, (RUNNING, QUEUED, ACTIVE_HTTP), skip=METRICS_ENDPOINT)
    if sums[RUNNING] is None or sums[QUEUED] is None:
        return None
    return int(round(max(sums[RUNNING] + sums[QUEUED], sums[ACTIVE_HTTP] or 0.0)))


# --------------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------------
HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


def http(method, url, body=None, timeout=REQUEST_TIMEOUT):
    """(status, text); status 0 with the error text when no HTTP answer came."""
    return request(url, body, method, HEADERS, timeout)


class RouterError(Exception):
    pass


def _short(text, limit=300):
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit] + "..."


def router_error(router_url, method, path, status, text):
    answer = "no answer (%s)" % _short(text) if status == 0 else "HTTP %s: %s" % (status, _short(text) or "(empty body)")
    if status == 404 and path == "/workers":
        answer += " (sglang-router 0.3.x serves GET /workers: is this URL the router?)"
    return RouterError("router %s: %s %s -> %s; %s" % (router_url, method, path, answer, FIX_ROUTER))


class Router:
    def __init__(self, url, timeout=REQUEST_TIMEOUT):
        self.url = url
        self.base = url.rstrip("/")
        self.timeout = timeout

    def _call(self, method, path, body=None, ok_extra=()):
        status, text = http(method, self.base + path, body, self.timeout)
        if not (200 <= status < 300 or status in ok_extra):
            raise router_error(self.url, method, path, status, text)
        return status, text

    def workers(self):
        _, text = self._call("GET", "/workers")
        try:
            return parse_workers(text)
        except ValueError as exc:
            raise RouterError("router %s: GET /workers did not answer a worker listing (%s): %s; %s"
                              % (self.url, exc, _short(text), FIX_ROUTER))

    def remove(self, worker_id):
        # 404: removed meanwhile by someone else; the listing poll that follows confirms it
        self._call("DELETE", "/workers/" + urllib.parse.quote(str(worker_id), safe=""), ok_extra=(404,))

    def add(self, worker_url, api_key=None):
        """POST /workers (with the worker's SGLang key, if any); the router's id of the queued addition."""
        _, text = self._call("POST", "/workers", dict({"url": worker_url}, **({"api_key": api_key} if api_key else {})))
        try:
            return json.loads(text).get("worker_id")
        except (ValueError, AttributeError):
            return None

    def job_status(self, worker_id):
        """'<job_type> <status>[: message]' of GET /workers/<id> (0.3.x reports the background
        job of an addition there), or '' when the router does not say."""
        if not worker_id:
            return ""
        status, text = http("GET", self.base + "/workers/" + urllib.parse.quote(str(worker_id), safe=""),
                            timeout=self.timeout)
        return format_job(text) if status == 200 else ""


def read_in_flight(worker_url, timeout=REQUEST_TIMEOUT):
    """(in-flight count or None, why None)."""
    url = worker_url.rstrip("/") + "/metrics"
    status, text = http("GET", url, timeout=timeout)
    if status != 200:
        return None, "%s answered %s" % (url, ("HTTP %s" % status) if status else _short(text))
    count = in_flight(text)
    if count is None:
        return None, "%s lacks %s/%s (start SGLang with --enable-metrics)" % (url, RUNNING, QUEUED)
    return count, ""


def wait_listing(router, worker_url, timeout, interval, done, clock=time.monotonic, sleep=time.sleep):
    """Poll GET /workers until done(find_worker(...)) holds. (ok, workers, worker)."""
    deadline = clock() + timeout
    while True:
        workers = router.workers()
        worker = find_worker(workers, worker_url)
        if done(worker):
            return True, workers, worker
        if clock() >= deadline:
            return False, workers, worker
        sleep(interval)


def drain(worker_url, drain_timeout, interval, read=read_in_flight, clock=time.monotonic, sleep=time.sleep):
    """Wait until the worker has no running or queued request. Returns a dict with drained,
    drain_seconds, in_flight_at_removal, last (last count or None), why (last unreadable reason)."""
    start = clock()
    first = None
    last = None
    why = ""
    while True:
        # one reading may not overrun drain_timeout by more than a second
        remaining = drain_timeout - (clock() - start)
        count, reason = read(worker_url, max(1.0, min(REQUEST_TIMEOUT, remaining)))
        if count is None:
            why = reason
        else:
            why = ""
            if first is None:
                first = count
            last = count
            if count == 0:
                return dict(drained=True, drain_seconds=round(clock() - start, 2), in_flight_at_removal=first,
                            last=0, why="")
        if clock() - start >= drain_timeout:
            return dict(drained=False, drain_seconds=round(clock() - start, 2), in_flight_at_removal=first,
                        last=last, why=why)
        sleep(interval)


# --------------------------------------------------------------------------------------------
# The two states
# --------------------------------------------------------------------------------------------
def urls(workers):
    return [w["url"] for w in workers]


def look(router, p):
    """The router's listing now: (result skeleton, the listed worker or None)."""
    workers = router.workers()
    worker = find_worker(workers, p["worker_url"])
    res = dict(changed=False, worker_url=p["worker_url"], router_url=p["router_url"],
               worker_id=worker["id"] if worker else None, drained=False, drain_seconds=0.0,
               in_flight_at_removal=None, workers=urls(workers))
    return res, worker


def run(router, p, check_mode, clock=time.monotonic, sleep=time.sleep, read=read_in_flight):
    """Look at the router, decide, and (unless check_mode) apply p["state"]. The result dict."""
    res, worker = look(router, p)
    action = decide(p["state"], worker)
    where = "router %s" % p["router_url"]
    if action is None:
        res["msg"] = "%s %s" % (p["worker_url"], "is not in %s: nothing to remove" % where if p["state"] == "absent"
                                else "is in %s and healthy" % where)
        return res
    res["changed"] = True
    if check_mode:
        res["msg"] = ("would remove %s (id %s) from %s and drain it" % (p["worker_url"], worker["id"], where)
                      if action == "remove" else
                      "would add %s to %s%s" % (p["worker_url"], where, " (listed but unhealthy)" if worker else ""))
        return res
    if action == "remove":
        return remove_and_drain(router, p, res, worker, clock, sleep, read)
    return add_and_wait(router, p, res, clock, sleep)


def remove_and_drain(router, p, res, worker, clock, sleep, read):
    worker_url = p["worker_url"]
    t0 = clock()
    router.remove(worker["id"])
    ok, workers, _ = wait_listing(router, worker_url, p["timeout"], p["poll_interval"], lambda w: w is None,
                                  clock, sleep)
    res["workers"] = urls(workers)
    if not ok:
        raise RouterError(
            "router %s still lists worker %s %s s after DELETE /workers/%s; it lists: %s"
            % (p["router_url"], worker_url, p["timeout"], worker["id"], describe_workers(workers)))
    removed_after = round(clock() - t0, 2)
    d = drain(worker_url, p["drain_timeout"], p["poll_interval"], read, clock, sleep)
    res.update(drained=d["drained"], drain_seconds=d["drain_seconds"], in_flight_at_removal=d["in_flight_at_removal"])
    msg = "removed %s from router %s (gone from its listing after %s s); " % (worker_url, p["router_url"], removed_after)
    if d["drained"]:
        msg += "no request running or queued after %s s (%s in flight at removal)" % (
            d["drain_seconds"], d["in_flight_at_removal"])
    elif d["last"] is not None:
        msg += "%s request(s) still running or queued after drain_timeout=%s s" % (d["last"], p["drain_timeout"])
    else:
        msg += "metrics unreadable (%s): waited the full drain_timeout=%s s instead" % (d["why"], p["drain_timeout"])
    res["msg"] = msg
    return res


def add_and_wait(router, p, res, clock, sleep):
    worker_url = p["worker_url"]
    t0 = clock()
    job_id = router.add(worker_url.rstrip("/"), p.get("worker_api_key"))
    ok, workers, worker = wait_listing(router, worker_url, p["timeout"], p["poll_interval"],
                                       lambda w: w is not None and w["is_healthy"], clock, sleep)
    res["workers"] = urls(workers)
    res["worker_id"] = worker["id"] if worker else None
    if not ok:
        state = "lists worker %s as unhealthy" if worker else "does not list worker %s"
        job = router.job_status(job_id or (worker or {}).get("id"))
        raise RouterError(
            ("router %s " + state + " %s s after POST /workers; it lists: %s%s; check that the router can "
             "reach %s (its health endpoint) and the worker serves")
            % (p["router_url"], worker_url, p["timeout"], describe_workers(workers),
               job_note(job_id, job), worker_url))
    res["msg"] = "added %s to router %s (listed healthy after %s s)" % (
        worker_url, p["router_url"], round(clock() - t0, 2))
    return res


ARGUMENT_SPEC = dict(
    router_url=dict(type="str", required=True),
    worker_url=dict(type="str", required=True),
    state=dict(type="str", required=True, choices=["absent", "present"]),
    timeout=dict(type="int", default=120),
    drain_timeout=dict(type="int", default=30),
    worker_api_key=dict(type="str", no_log=True),
    poll_interval=dict(type="float", default=0.5),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    for key in ("router_url", "worker_url"):
        if not urllib.parse.urlsplit(p[key]).scheme.startswith("http"):
            module.fail_json(msg="%s=%r is not an http(s) URL%s" % (
                key, p[key], "; check the variable sglang_router_url" if key == "router_url"
                else "; check the variable sglang_router_worker_url"))
    router = Router(p["router_url"])
    try:
        res = run(router, p, module.check_mode)
    except RouterError as exc:
        module.fail_json(msg=str(exc), worker_url=p["worker_url"], router_url=p["router_url"])
    if p["state"] == "absent" and res["changed"] and not module.check_mode and not res["drained"]:
        module.warn(res["msg"])
    module.exit_json(**res)


if __name__ == "__main__":
    main()
