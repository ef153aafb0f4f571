# -*- coding: utf-8 -*-
# The calls plugins/modules/sglang_gateway_worker.py makes: smg 1.13's worker API (with the
# control-plane admin key as a bearer token) and a worker's in-flight requests from its
# /metrics, and the two poll loops over them (the listing until a change shows; the worker
# until its requests finished). HTTP is plugins/module_utils/sglang_http.py, the Prometheus text
# plugins/module_utils/sglang_prometheus.py. Tested by tests/unit/test_sglang_gateway_worker*.py.
"""smg's worker API and a worker's drain."""

import json
import time
import urllib.parse

from ansible_collections.sglang.deploy.plugins.module_utils.sglang_http import request
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_prometheus import parse_prometheus_sums
from ansible_collections.sglang.deploy.plugins.module_utils.gateway.listing import (
    find_worker,
    format_job,
    parse_workers,
)

REQUEST_TIMEOUT = 10.0
RUNNING = "sglang:num_running_reqs"
QUEUED = "sglang:num_queue_reqs"
# HTTP requests the server is answering (per endpoint); it sees a request before the scheduler
# gauges do. /metrics itself is not counted.
ACTIVE_HTTP = "sglang:http_requests_active"
METRICS_ENDPOINT = 'endpoint="/metrics"'
FIX_GATEWAY = ("check the variable sglang_gateway_urls (and that each gateway runs and is reachable from here) "
               "and sglang_gateway_admin_api_key (the gateway's control-plane admin key)")


class GatewayError(Exception):
    pass


def short(text, limit=300):
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit] + "..."


def in_flight(metrics_text):
    """Requests still in an SGLang server: running + queued (scheduler gauges), or the active HTTP
    requests when those are more (a request still being tokenized); None without both gauges."""
    sums = parse_prometheus_sums(metrics_text, (RUNNING, QUEUED, ACTIVE_HTTP), skip=METRICS_ENDPOINT)
    if sums[RUNNING] is None or sums[QUEUED] is None:
        return None
    return int(round(max(sums[RUNNING] + sums[QUEUED], sums[ACTIVE_HTTP] or 0.0)))


def gateway_error(gateway_url, method, path, status, text):
    answer = "no answer (%s)" % short(text) if status == 0 else "HTTP %s: %s" % (status, short(text) or "(empty body)")
    if status in (401, 403):
        answer += " (smg answers 401 without or with a wrong control-plane key, 403 for a key whose role is not admin)"
    elif status == 404 and path == "/workers":
        answer += " (smg 1.13 serves GET /workers: is this URL the gateway?)"
    return GatewayError("gateway %s: %s %s -> %s; %s" % (gateway_url, method, path, answer, FIX_GATEWAY))


class Gateway:
    """smg's /workers API; every call carries the admin key (never logged: the module's no_log)."""

    def __init__(self, url, admin_key=None, timeout=REQUEST_TIMEOUT):
        self.url = url
        self.base = url.rstrip("/")
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if admin_key:
            self.headers["Authorization"] = "Bearer " + admin_key

    def http(self, method, path, body=None):
        return request(self.base + path, body, method, self.headers, self.timeout)

    def _call(self, method, path, body=None, ok_extra=()):
        status, text = self.http(method, path, body)
        if not (200 <= status < 300 or status in ok_extra):
            raise gateway_error(self.url, method, path, status, text)
        return status, text

    def workers(self):
        _, text = self._call("GET", "/workers")
        try:
            return parse_workers(text)
        except ValueError as exc:
            raise GatewayError("gateway %s: GET /workers did not answer a worker listing (%s): %s; %s"
                               % (self.url, exc, short(text), FIX_GATEWAY))

    def remove(self, worker_id):
        # 404: removed meanwhile by someone else; the listing poll that follows confirms it
        self._call("DELETE", "/workers/" + urllib.parse.quote(str(worker_id), safe=""), ok_extra=(404,))

    def add(self, worker_url, api_key=None):
        """POST /workers with the worker's SGLang key (smg sends it to the worker when a client
        request carries no Authorization, and on its health checks). The id of the queued
        addition; 409 (WORKER_ALREADY_EXISTS: added meanwhile) is left to the listing poll."""
        body = dict({"url": worker_url}, **({"api_key": api_key} if api_key else {}))
        status, text = self._call("POST", "/workers", body, ok_extra=(409,))
        try:
            return json.loads(text).get("worker_id") if status != 409 else None
        except (ValueError, AttributeError):
            return None

    def job_status(self, worker_id):
        """'<job_type> <status>[: message]' of GET /workers/<id>, or ''."""
        if not worker_id:
            return ""
        status, text = self.http("GET", "/workers/" + urllib.parse.quote(str(worker_id), safe=""))
        return format_job(text) if status == 200 else ""


def read_in_flight(worker_url, timeout=REQUEST_TIMEOUT):
    """(in-flight count or None, why None) from the worker's /metrics (SGLang serves it without a key)."""
    url = worker_url.rstrip("/") + "/metrics"
    status, text = request(url, None, "GET", {"Accept": "text/plain"}, timeout)
    if status != 200:
        return None, "%s answered %s" % (url, ("HTTP %s" % status) if status else short(text))
    count = in_flight(text)
    if count is None:
        return None, "%s lacks %s/%s (start SGLang with --enable-metrics)" % (url, RUNNING, QUEUED)
    return count, ""


def wait_listing(gateway, worker_url, timeout, interval, done, clock=time.monotonic, sleep=time.sleep):
    """Poll GET /workers until done(find_worker(...)) holds. (ok, workers, worker)."""
    deadline = clock() + timeout
    while True:
        workers = gateway.workers()
        worker = find_worker(workers, worker_url)
        if done(worker):
            return True, workers, worker
        if clock() >= deadline:
            return False, workers, worker
        sleep(interval)


def drain(worker_url, drain_timeout, interval, read=read_in_flight, clock=time.monotonic, sleep=time.sleep):
    """Wait until the worker has no running or queued request. A dict with drained,
    drain_seconds, in_flight_at_removal, last (last count or None), why (last unreadable reason)."""
    start = clock()
    first = None
    last = None
    why = ""
    while True:
        remaining = drain_timeout - (clock() - start)
        count, reason = read(worker_url, max(1.0, min(REQUEST_TIMEOUT, remaining)))
        if count is None:
            why = reason
        else:
            why = ""
            first = count if first is None else first
            last = count
            if count == 0:
                return dict(drained=True, drain_seconds=round(clock() - start, 2), in_flight_at_removal=first,
                            last=0, why="")
        if clock() - start >= drain_timeout:
            return dict(drained=False, drain_seconds=round(clock() - start, 2), in_flight_at_removal=first,
                        last=last, why=why)
        sleep(interval)
