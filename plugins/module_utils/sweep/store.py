# -*- coding: utf-8 -*-
# Controller side only: the files of a tuning sweep, reports/sweeps/<sweep_name>/<host>/ by
# default. Every write is atomic (roles/sglang_verify's store: a temporary file renamed over the
# target), so an interrupted play leaves either the old record or the new one, never half.
"""Results of a sweep on disk, and what a resumed sweep may skip.

``<dir>/sweep.json``: the plan (candidates, redacted), the sweep's settings, the start of the
first run and of every resumed run, the deadline of the current run and, once reported, the
ranking (``summary``). ``<dir>/candidate-<key>.json``: one record per candidate, written with
``status: running`` before its server is started and ``status: finished`` with its outcome.

A candidate whose record is finished (any outcome) is not run again; a record still ``running``
(the play was interrupted) or a missing one means the candidate is run again.
"""

import datetime
import os

from ansible_collections.sglang.deploy.plugins.module_utils.sweep.plan import validate_name
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import read_json, write_json

SWEEP_FILE = "sweep.json"
FINISHED = "finished"
RUNNING = "running"
# the options every sweep module takes: where the host's results are
SWEEP_ARGS = dict(
    host=dict(type="str", required=True),
    report_dir=dict(type="path", required=True),
    sweep_name=dict(type="str", required=True),
)


def iso(epoch):
    """A time as the sweep files write it (UTC, ISO 8601)."""
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sweep_dir(report_dir, sweep_name, host):
    """``<report_dir>/<sweep_name>/<host>``."""
    return os.path.join(report_dir, validate_name(sweep_name, "sweep_name"), validate_name(host, "host"))


def record_path(directory, key):
    return os.path.join(directory, "candidate-%s.json" % validate_name(key, "candidate key"))


def read_sweep(directory):
    """The sweep file, or None."""
    data = read_json(os.path.join(directory, SWEEP_FILE))
    return data if isinstance(data, dict) else None


def write_sweep(directory, data):
    write_json(os.path.join(directory, SWEEP_FILE), data)
    return os.path.join(directory, SWEEP_FILE)


def read_record(directory, key):
    """A candidate's record, or None (missing or unreadable)."""
    data = read_json(record_path(directory, key))
    return data if isinstance(data, dict) else None


def write_record(directory, key, record):
    path = record_path(directory, key)
    write_json(path, record)
    return path


def finished(record):
    """Whether a record says its candidate was run to an outcome."""
    return bool(record) and record.get("status") == FINISHED and bool(record.get("outcome"))


def done(directory, keys):
    """The keys, in order, whose candidates finished (any outcome): a resumed sweep skips them."""
    return [key for key in keys if finished(read_record(directory, key))]


def records(directory, keys):
    """``{key: record}`` of the keys that have a record (finished or not)."""
    out = {}
    for key in keys:
        rec = read_record(directory, key)
        if rec is not None:
            out[key] = rec
    return out
