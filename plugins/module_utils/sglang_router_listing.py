# -*- coding: utf-8 -*-
# What sglang-router 0.3.x (smg) answers on its worker API, read without side effects: the
# listing of GET /workers, a worker found by its URL, the background job of an addition, and
# what a desired state asks for. Used by plugins/modules/sglang_router_worker.py (on the controller);
# tests/unit/test_sglang_router_worker.py runs it on recorded answers. Standard library only.
"""The router's worker listing and what to do about it."""

import json
import urllib.parse


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
    id, url, is_healthy. Raises ValueError when the answer is not a worker listing."""
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
            # a listing without the field (older routers) counts as healthy: it lists what it routes to
            "is_healthy": bool(item.get("is_healthy", True)),
            "load": item.get("load"),
        })
    return workers


def find_worker(workers, worker_url):
    """The listed worker whose URL is worker_url (normalised), or None."""
    want = normalize_url(worker_url)
    for worker in workers:
        if normalize_url(worker["url"]) == want:
            return worker
    return None


def describe_workers(workers):
    """One line for messages: what the router lists."""
    if not workers:
        return "no worker"
    return ", ".join("%s (%s)" % (w["url"], "healthy" if w["is_healthy"] else "unhealthy") for w in workers)


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
    """The part of a failure message about the router's background job of an addition."""
    if not job:
        return ""
    note = "; its job %s: %s" % (job_id, job)
    if " processing" in job:
        note += " (the router keeps retrying until its --worker-startup-timeout-secs: the worker may still join later)"
    return note


def decide(state, worker):
    """'remove', 'add' or None (nothing to do) for a desired state and the listed worker (or None)."""
    if state == "absent":
        return "remove" if worker is not None else None
    if worker is not None and worker["is_healthy"]:
        return None
    return "add"
