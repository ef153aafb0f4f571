"""Shared by the tests of plugins/modules/sglang_router_worker.py: the answers
recorded from sglang-router 0.3.2 and SGLang 0.5.23 in tests/fixtures/sglang-router/."""

import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures", "sglang-router")


def fixture(name):
    with open(os.path.join(FIX, name)) as handle:
        return handle.read()
