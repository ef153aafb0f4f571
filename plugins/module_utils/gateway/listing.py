# -*- coding: utf-8 -*-
# What smg 1.13 (Shepherd Model Gateway) answers on its worker API, read without side effects:
# the listing of GET /workers, a worker found by its URL, the background job of a change, and
# what a desired state asks for. Used by plugins/modules/sglang_gateway_worker.py (on the
# controller); tests/unit/test_sglang_gateway_worker.py runs it on the answers recorded in
# tests/fixtures/smg/. Standard library only.
"""The gateway's worker listing and what to do about it."""

import json
import urllib.parse

# smg 1.13 "status" of a listed worker (roles/sglang_gateway/README.md, "The gateway's API"):
# ready, not_ready (failed its health checks), draining (DELETE accepted, still listed until
# the gateway's drain settle time is over; is_healthy is false then).
DRAINING = "draining"


def normalize_url(url):
    """Compare form of a URL: no trailing slash, scheme and host lower-cased."""
    url = (url or "").strip()
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url.rstrip("/")
    return urllib.parse.urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, parts.fragment))


def parse_workers(data):
    """Workers of a GET /workers answer (dict or its JSON text) as a list of dicts with
    id, url, is_healthy, status, load. Raises ValueError when the answer is not a worker listing."""
    if isinstance(data, (str, bytes)):
        data = json.loads(data)
    if not isinstance(data, dict) or not isinstance(data.get("workers"), list):
        raise ValueError("not a worker listing (no 'workers' list)")
    workers = []
    for item in data["workers"]:
        if not isinstance(item, dict) or not item.get("url"):
            raise ValueError("worker entry without url: %r" % (item,))
        workers.append({
            "id": item.get("id"),
            "url": item["url"],
            "is_healthy": bool(item.get("is_healthy")),
            "status": item.get("status") or "",
            "load": item.get("load"),
        })
    return workers


def serving(worker):
    """Whether the gateway routes to this worker: healthy and not draining."""
    return worker is not None and worker["is_healthy"] and worker["status"] != DRAINING


def find_worker(workers, worker_url):
    """The listed worker whose URL is worker_url (normalised), or None."""
    want = normalize_url(worker_url)
    for worker in workers:
        if normalize_url(worker["url"]) == want:
            return worker
    return None


def describe_workers(workers):
    """One line for messages: what the gateway lists."""
    if not workers:
        return "no worker"
    return ", ".join("%s (%s)" % (w["url"], w["status"] or ("healthy" if w["is_healthy"] else "unhealthy"))
                     for w in workers)


def summary(workers):
    """The listing as the module returns it: counts and one entry per worker, each with `healthy`
    (serving(): what the rollout's batches count, plugins/module_utils/rollout/batches.py)."""
    return dict(workers=[dict(w, healthy=serving(w)) for w in workers], total=len(workers),
                healthy=sum(1 for w in workers if serving(w)))


def combine(listings):
    """Several gateways' listings ([(gateway url, workers)]) as one summary(): every worker any of
    them lists, in the order first seen, healthy only where every gateway lists it serving (a
    client of any gateway may be sent to it), its status the first non-ready one seen, and
    ``gateways``: each gateway's status of it ('absent' where one does not list it). Two
    listings that disagree therefore count the fewer healthy workers, never the more."""
    by_url, order = {}, []
    for gateway, workers in listings:
        for worker in workers:
            key = normalize_url(worker["url"])
            if key not in by_url:
                by_url[key] = {}
                order.append(key)
            by_url[key][gateway] = worker
    combined = []
    for key in order:
        seen = by_url[key]
        statuses = {gw: (seen[gw]["status"] or ("ready" if seen[gw]["is_healthy"] else "not_ready")) if gw in seen
                    else "absent" for gw, _ in listings}
        everywhere = len(seen) == len(listings) and all(serving(w) for w in seen.values())
        worst = next((s for s in statuses.values() if s != "ready"), "ready")
        first = next(iter(seen.values()))
        combined.append(dict(first, is_healthy=everywhere if len(listings) > 1 else first["is_healthy"],
                             status=worst if len(listings) > 1 else first["status"], healthy=everywhere,
                             gateways=statuses))
    return dict(workers=combined, total=len(combined), healthy=sum(1 for w in combined if w["healthy"]))


def format_job(data):
    """'AddWorker processing' (+ ': message') from a GET /workers/<id> answer, or ''."""
    try:
        job = (json.loads(data) if isinstance(data, (str, bytes)) else data).get("job_status") or {}
    except (ValueError, AttributeError):
        return ""
    if not isinstance(job, dict) or not job.get("status"):
        return ""
    text = "%s %s" % (job.get("job_type") or "job", job["status"])
    return text + (": %s" % job["message"] if job.get("message") else "")


def job_note(job_id, job):
    """The part of a failure message about the gateway's background job of an addition."""
    if not job:
        return ""
    note = "; its job %s: %s" % (job_id, job)
    if " processing" in job:
        note += " (the gateway keeps retrying until its --worker-startup-timeout-secs: the worker may still join later)"
    return note


def decide(state, worker):
    """What a desired state asks for, given the listed worker (or None):
    absent: 'remove' (listed, not draining), 'wait_gone' (draining already), None (not listed);
    present: 'wait_gone_then_add' (draining: smg refuses a second POST of a listed URL),
    'wait_healthy' (listed, not ready yet), 'add' (not listed), None (listed and serving)."""
    if state == "absent":
        if worker is None:
            return None
        return "wait_gone" if worker["status"] == DRAINING else "remove"
    if worker is None:
        return "add"
    if worker["status"] == DRAINING:
        return "wait_gone_then_add"
    return None if serving(worker) else "wait_healthy"
