"""Shared by the tests of plugins/modules/sglang_gateway_worker.py: the answers recorded from
smg 1.13.0 in tests/fixtures/smg/ (each file: {"status": <HTTP status>, "body": <text>})."""

import json
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures", "smg")
SGLANG_METRICS = os.path.join(ROOT, "tests", "fixtures", "sglang-router", "metrics-sglang-0.5.23-busy.txt")


def answer(name):
    """(status, body text) of a recorded answer."""
    with open(os.path.join(FIX, name)) as handle:
        data = json.load(handle)
    return data["status"], data["body"]


def sglang_metrics():
    with open(SGLANG_METRICS) as handle:
        return handle.read()
