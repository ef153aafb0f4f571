#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the controller (delegate_to: localhost by default): takes one SGLang server out of an
# smg 1.13 gateway and lets its in-flight requests finish, puts it back with its key and waits
# until the gateway routes to it, or lists every worker as the gateway sees it. Standard library
# only: the gateway's API and the drain are plugins/module_utils/gateway/api.py, its
# listing plugins/module_utils/gateway/listing.py; the measured API is in
# roles/sglang_gateway/README.md.

DOCUMENTATION = r"""
---
module: sglang_gateway_worker
short_description: Drain an SGLang worker out of an smg gateway, add it back, or list the workers
description:
  - Uses the worker API of smg 1.13 (Shepherd Model Gateway), C(GET /workers),
    C(DELETE /workers/<id>) and C(POST /workers), with the gateway's control-plane admin key
    as a bearer token.
  - Both changes are asynchronous (the gateway answers 202); the module polls C(GET /workers)
    until the change shows, for at most I(timeout) seconds.
  - With I(state=absent), the gateway marks the worker C(draining) (no new request is routed to
    it) and drops it from its listing after its drain settle time (5 s, measured); requests
    already sent keep running on the worker. The module then waits until the worker itself has
    no running or queued request (C(sglang:num_running_reqs), C(sglang:num_queue_reqs) and
    C(sglang:http_requests_active) of C(<worker_url>/metrics), SGLang started with
    C(--enable-metrics)), for at most I(drain_timeout) seconds. Without readable gauges it waits
    the whole I(drain_timeout) and says so in C(msg).
  - With I(state=present), it registers the worker with I(worker_api_key) and waits until the
    gateway lists it healthy and C(ready).
  - With I(state=listed), it changes nothing and returns every worker with its URL, health and
    status, and the count of healthy (ready) workers.
  - URLs are compared normalised (trailing slash stripped, scheme and host lower-cased).
  - In check mode only C(GET /workers) is sent; C(changed) says whether a change would be made.
options:
  gateway_url:
    description:
      - Base URL of every gateway in front of the worker, e.g. C([http://gateway-1:30080, http://gateway-2:30080])
        (roles/sglang_gateway, C(sglang_gateway_urls)); one URL is a list of one.
      - C(absent) removes the worker from each, then drains it once; C(present) adds it to each and waits on each;
        C(listed) combines their listings (a worker counts healthy only when every gateway lists it healthy and ready).
    type: list
    elements: str
    required: true
    aliases: [gateway_urls]
  admin_api_key:
    description: A control-plane key of role C(admin) (C(--control-plane-api-keys)); C(GET /workers) also takes a C(user) key.
    type: str
  worker_url:
    description: URL of the SGLang server as the gateway knows it, e.g. C(http://10.0.0.5:30000). Required unless I(state=listed).
    type: str
  state:
    description:
      - C(absent) removes the worker from the gateway and drains it.
      - C(present) adds it and waits until the gateway lists it healthy.
      - C(listed) returns the gateway's workers, changing nothing.
    type: str
    required: true
    choices: [absent, present, listed]
  timeout:
    description: Seconds to wait for the gateway to apply the change.
    type: int
    default: 120
  drain_timeout:
    description:
      - Seconds to wait, after the removal, for the worker's running and queued requests to
        reach 0 (I(state=absent) only). C(0) reads the gauges once and does not wait.
    type: int
    default: 30
  worker_api_key:
    description: The worker's SGLang C(--api-key), sent as C(api_key) of C(POST /workers).
    type: str
  poll_interval:
    description: Seconds between two polls of the gateway or of the worker's metrics.
    type: float
    default: 0.5
  wait_healthy:
    description:
      - I(state=listed) only. Read the listing again until at least this many workers, not counting
        those of I(wait_excluding), are healthy and ready, or I(timeout) passed; the listing is
        returned either way (C(waited) says how long), the caller judges it. C(0) reads it once.
    type: int
    default: 0
  wait_excluding:
    description: I(state=listed) only. Worker URLs that I(wait_healthy) does not count (a batch about to leave).
    type: list
    elements: str
    default: []
author: [sglang_deploy]
"""

EXAMPLES = r"""
- name: Take this host out of the gateway before its restart
  sglang.deploy.sglang_gateway_worker:
    gateway_url: http://gateway.example:30080
    admin_api_key: "{{ sglang_gateway_admin_api_key }}"
    worker_url: "http://{{ ansible_host }}:30000"
    state: absent
    drain_timeout: 60
  delegate_to: localhost
  no_log: true

- name: Count the workers the gateway routes to
  sglang.deploy.sglang_gateway_worker:
    gateway_url: http://gateway.example:30080
    admin_api_key: "{{ sglang_gateway_admin_api_key }}"
    state: listed
  delegate_to: localhost
  register: gateway_workers
"""

RETURN = r"""
gateway_url:
  description: The gateway URLs as given.
  returned: always
  type: list
  elements: str
worker_ids:
  description: Each gateway's id of the worker (I(state=absent) and I(present)).
  returned: state=absent or state=present
  type: dict
worker_url:
  description: The worker URL as given (null for I(state=listed)).
  returned: always
  type: str
worker_id:
  description: The first gateway's id of the worker (before removal, or after addition); null when not listed.
  returned: always
  type: str
drained:
  description: Whether the worker was seen with 0 running and 0 queued requests after its removal.
  returned: always
  type: bool
drain_seconds:
  description: Seconds spent draining after the gateway stopped listing the worker.
  returned: always
  type: float
in_flight_at_removal:
  description: Running + queued requests on the worker at the first reading after its removal; null when unreadable.
  returned: always
  type: int
workers:
  description:
    - The workers after the change (before it, in check mode), each with id, url, is_healthy, status, load, healthy
      and gateways (each gateway's status of it, C(absent) where it is not listed).
    - With several gateways, healthy means that every gateway lists it healthy and ready (routes to it).
  returned: always
  type: list
  elements: dict
total:
  description: How many workers the gateway lists.
  returned: always
  type: int
healthy:
  description: How many of them are healthy and ready in every gateway (each gateway routes to them).
  returned: always
  type: int
waited:
  description: Seconds spent reading the listing again for I(wait_healthy).
  returned: state=listed
  type: float
enough:
  description: Whether at least I(wait_healthy) workers outside I(wait_excluding) were healthy at the end.
  returned: state=listed
  type: bool
msg:
  description: What was done, or would be done in check mode.
  returned: always
  type: str
"""

import time
import urllib.parse

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.gateway.api import (
    Gateway,
    GatewayError,
    drain,
    read_in_flight,
    wait_listing,
)
from ansible_collections.sglang.deploy.plugins.module_utils.gateway.listing import (
    DRAINING,
    combine,
    decide,
    describe_workers,
    find_worker,
    job_note,
    normalize_url,
    serving,
    summary,
)
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_http import public_url


def shown(value, urls):
    """``value`` (the result, its messages and listings) with every URL of ``urls`` as public_url
    shows it: a URL's user information, query or fragment (user:password@, ?token=) is printed nowhere."""
    if isinstance(value, str):
        for url in urls:
            if url and public_url(url) != url:
                value = value.replace(url, public_url(url)).replace(url.rstrip("/"), public_url(url).rstrip("/"))
        return value
    if isinstance(value, dict):
        return {shown(k, urls): shown(v, urls) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [shown(v, urls) for v in value]
    return value


def skeleton(gateway_url, worker_url=None, worker_id=None, **listing):
    """The module's result before anything is done: nothing changed or drained yet."""
    return dict(changed=False, worker_url=worker_url, gateway_url=gateway_url, worker_id=worker_id, drained=False,
                drain_seconds=0.0, in_flight_at_removal=None, **listing)


def look(gateway, p):
    """The gateway's listing now: (result skeleton, the listed worker or None)."""
    workers = gateway.workers()
    worker = find_worker(workers, p["worker_url"]) if p.get("worker_url") else None
    return skeleton(p["gateway_url"], p.get("worker_url"), worker["id"] if worker else None, **summary(workers)), worker


def run(gateways, p, check_mode, clock=time.monotonic, sleep=time.sleep, read=read_in_flight):
    """Apply p["state"] on every gateway of ``gateways`` ([(url, Gateway)], the hosts of
    sglang_gateway_urls; unless check_mode) and return one result: the change is sent to every
    gateway first, then each is waited on (the gateways apply it at the same time: smg keeps a
    removed worker draining for its settle time); removed from every gateway before the worker is
    drained once; added to every gateway, each waited on until it routes to it; the listings
    combined (combine of plugins/module_utils/gateway/listing.py)."""
    if p["state"] == "listed":
        return listed(gateways, p, clock, sleep)
    waits = [start_one(gateway, dict(p, gateway_url=url), check_mode, clock, sleep) for url, gateway in gateways]
    results = [wait() for wait in waits]
    res = dict(results[0], gateway_url=[url for url, _ in gateways], changed=any(r["changed"] for r in results),
               worker_ids={url: r["worker_id"] for (url, _), r in zip(gateways, results)},
               **combine([(url, r["workers"]) for (url, _), r in zip(gateways, results)]))
    res["msg"] = "; ".join(r["msg"] for r in results)
    if p["state"] == "absent" and res["changed"] and not check_mode:
        res.update(drain_worker(p, clock, sleep, read))
        res["msg"] += "; " + res.pop("drain_msg")
    return res


def start_one(gateway, p, check_mode, clock, sleep):
    """One gateway: look, decide, and (unless check_mode) send the removal or the addition; the
    wait for it is returned (a function that gives the gateway's result), so that every gateway
    gets its change before any is waited on. No drain: run() drains once every gateway dropped it."""
    res, worker = look(gateway, p)
    where = "gateway %s" % p["gateway_url"]
    action = decide(p["state"], worker)
    if action is None:
        res["msg"] = "%s %s" % (p["worker_url"], "is not in %s: nothing to remove" % where if p["state"] == "absent"
                                else "is in %s, healthy and ready" % where)
        return lambda: res
    if action == "wait_healthy":
        # listed already (smg answers 409 to a second POST): only the wait, no change of ours
        return lambda: add_and_wait(gateway, p, res, clock, sleep, post=False)
    res["changed"] = True
    if check_mode:
        res["msg"] = ("would remove %s (id %s) from %s and drain it" % (p["worker_url"], worker["id"], where)
                      if p["state"] == "absent" else "would add %s to %s" % (p["worker_url"], where))
        return lambda: res
    if p["state"] == "absent":
        t0, load = clock(), worker.get("load")
        if worker["status"] != DRAINING:
            gateway.remove(worker["id"])
        return lambda: removed(gateway, p, res, t0, load, clock, sleep)
    if action == "wait_gone_then_add":  # smg refuses a second POST while the old entry drains
        return lambda: (wait_gone(gateway, p, clock, sleep), add_and_wait(gateway, p, res, clock, sleep))[1]
    posted = (clock(), gateway.add(p["worker_url"].rstrip("/"), p.get("worker_api_key")))
    return lambda: add_and_wait(gateway, p, res, clock, sleep, posted=posted)


def listed(gateways, p, clock, sleep):
    """The listings combined, read again while fewer than wait_healthy workers outside
    wait_excluding are healthy in every gateway (until timeout); `waited` is the seconds spent,
    `enough` whether the count was met."""
    t0, excluded = clock(), {normalize_url(u) for u in p.get("wait_excluding") or []}

    def read_all():
        return combine([(url, gateway.workers()) for url, gateway in gateways])

    def others(listing):
        return sum(1 for w in listing["workers"] if w["healthy"] and normalize_url(w["url"]) not in excluded)

    res = skeleton([url for url, _ in gateways], **read_all())
    wanted = p.get("wait_healthy") or 0
    while others(res) < wanted and clock() - t0 < p["timeout"]:
        sleep(max(p["poll_interval"], 1.0))
        res.update(read_all())
    res.update(waited=round(clock() - t0, 2), enough=others(res) >= wanted)
    res["msg"] = "%s list%s %s worker(s), %s healthy%s: %s" % (
        where_text(res["gateway_url"]), "" if len(gateways) > 1 else "s", res["total"], res["healthy"],
        " in every one" if len(gateways) > 1 else "", describe_workers(res["workers"]))
    return res


def where_text(urls):
    return ("gateway %s" % urls[0]) if len(urls) == 1 else ("the %d gateways %s" % (len(urls), ", ".join(urls)))


def wait_gone(gateway, p, clock, sleep):
    ok, workers, worker = wait_listing(gateway, p["worker_url"], p["timeout"], p["poll_interval"],
                                       lambda w: w is None, clock, sleep)
    if not ok:
        raise GatewayError("gateway %s still lists worker %s (%s) %s s after its removal; it lists: %s"
                           % (p["gateway_url"], p["worker_url"], worker["status"], p["timeout"],
                              describe_workers(workers)))
    return workers


def removed(gateway, p, res, t0, load_at_removal, clock, sleep):
    """After the removal was sent (at t0): wait until the gateway no longer lists the worker."""
    res.update(summary(wait_gone(gateway, p, clock, sleep)))
    res["msg"] = "removed %s from gateway %s (its load was %s; gone from its listing after %s s)" % (
        p["worker_url"], p["gateway_url"], load_at_removal, round(clock() - t0, 2))
    return res


def drain_worker(p, clock, sleep, read):
    """Once no gateway routes to the worker: wait until it has no request running or queued."""
    d = drain(p["worker_url"], p["drain_timeout"], p["poll_interval"], read, clock, sleep)
    out = dict(drained=d["drained"], drain_seconds=d["drain_seconds"], in_flight_at_removal=d["in_flight_at_removal"])
    if d["drained"]:
        out["drain_msg"] = "no request running or queued after %s s (%s in flight at removal)" % (
            d["drain_seconds"], d["in_flight_at_removal"])
    elif d["last"] is not None:
        out["drain_msg"] = "%s request(s) still running or queued after drain_timeout=%s s" % (
            d["last"], p["drain_timeout"])
    else:
        out["drain_msg"] = "metrics unreadable (%s): waited the full drain_timeout=%s s instead" % (
            d["why"], p["drain_timeout"])
    return out


def add_and_wait(gateway, p, res, clock, sleep, post=True, posted=None):
    """Add the worker (unless ``post`` is false, or ``posted``: (time, job id) of an addition sent
    already) and wait until the gateway lists it healthy and ready."""
    worker_url = p["worker_url"]
    if posted is not None:
        t0, job_id = posted
    else:
        t0 = clock()
        job_id = gateway.add(worker_url.rstrip("/"), p.get("worker_api_key")) if post else None
    ok, workers, worker = wait_listing(gateway, worker_url, p["timeout"], p["poll_interval"], serving, clock, sleep)
    res.update(summary(workers))
    res["worker_id"] = worker["id"] if worker else None
    if not ok:
        state = ("lists worker %%s as %s" % worker["status"]) if worker else "does not list worker %s"
        job = gateway.job_status(job_id or (worker or {}).get("id"))
        raise GatewayError(
            ("gateway %s " + state + " %s s after %s; it lists: %s%s; check that the gateway can reach %s "
             "(its /health), that the worker serves, and that sglang_gateway_worker_api_key is the worker's key")
            % (p["gateway_url"], worker_url, p["timeout"], "POST /workers" if post else "the first look",
               describe_workers(workers), job_note(job_id, job), worker_url))
    res["msg"] = "%s %s in gateway %s (listed healthy after %s s)" % (
        "added" if post else "waited for", worker_url, p["gateway_url"], round(clock() - t0, 2))
    return res


ARGUMENT_SPEC = dict(
    gateway_url=dict(type="list", elements="str", required=True, aliases=["gateway_urls"]),
    admin_api_key=dict(type="str", no_log=True),
    worker_url=dict(type="str"),
    state=dict(type="str", required=True, choices=["absent", "present", "listed"]),
    timeout=dict(type="int", default=120),
    drain_timeout=dict(type="int", default=30),
    worker_api_key=dict(type="str", no_log=True),
    poll_interval=dict(type="float", default=0.5),
    wait_healthy=dict(type="int", default=0),
    wait_excluding=dict(type="list", elements="str", default=[]),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True,
                           required_if=[("state", "absent", ["worker_url"]), ("state", "present", ["worker_url"])])
    p = module.params
    urls = [u for u in p["gateway_url"] if u]
    if not urls:
        module.fail_json(msg="gateway_url is empty; check the variable sglang_gateway_urls")
    secret = urls + [p["worker_url"]] + list(p["wait_excluding"] or [])
    for key, var, values in (("gateway_url", "sglang_gateway_urls", urls),
                             ("worker_url", "sglang_gateway_worker_url", [p["worker_url"]])):
        for value in values:
            if value is not None and not urllib.parse.urlsplit(value).scheme.startswith("http"):
                module.fail_json(msg="%s=%r is not an http(s) URL; check the variable %s" % (key, public_url(value), var))
    gateways = [(url, Gateway(url, p["admin_api_key"])) for url in urls]
    try:
        res = run(gateways, p, module.check_mode)
    except GatewayError as exc:
        module.fail_json(**shown(dict(msg=str(exc), worker_url=p["worker_url"], gateway_url=urls), secret))
    res = shown(res, secret)
    if p["state"] == "absent" and res["changed"] and not module.check_mode and not res["drained"]:
        module.warn(res["msg"])
    module.exit_json(**res)


if __name__ == "__main__":
    main()
