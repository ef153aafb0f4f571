"""Shared by the tests of roles/sglang_monitoring: its filters, promtool, the recorded /metrics
pages, and a PromQL metric-name reader."""

import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_monitoring")

from ansible_collections.sglang.deploy.plugins.module_utils.monitoring import config  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.sglang.deploy.plugins.module_utils.monitoring import hosts  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.sglang.deploy.plugins.module_utils.monitoring import rules  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.sglang.deploy.plugins.module_utils.watchdog import metrics as watchdog_metrics  # noqa: E402  pylint: disable=wrong-import-position

PAGES = [
    os.path.join(ROOT, "tests", "fixtures", "sglang-router", "metrics-sglang-0.5.23-busy.txt"),
    os.path.join(ROOT, "tests", "fixtures", "prometheus", "metrics-smg-1.13.0-healthy.txt"),
    os.path.join(ROOT, "tests", "fixtures", "prometheus", "metrics-smg-1.13.0-one-unhealthy.txt"),
]
# Series Prometheus makes itself for every target.
PROMETHEUS_SERIES = {"up"}
# dcgm-exporter's names the rules read, as its default counters list them (NVIDIA/dcgm-exporter,
# etc/default-counters.csv: "DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error
# encountered."). Not recorded here: the lent GPU machine has no DCGM (tests/fixtures/gpu-admit).
DCGM_PUBLISHED = {"DCGM_FI_DEV_XID_ERRORS"}
# The liveness watchdog's textfile (roles/sglang_watchdog, node_exporter's textfile collector,
# job node): the names its writer writes (plugins/module_utils/watchdog/metrics.py).
WATCHDOG_SERIES = {name for name, _, _ in watchdog_metrics.METRICS}
DASHBOARD = os.path.join(ROLE, "files", "sglang-fleet-dashboard.json")

# The synthetic fleet of tests/prometheus/README.md: two SGLang hosts behind one gateway host.
GATEWAYS = [{"gateway": "gw-1", "address": "gw-1", "port": 29000}]
OPTIONS = {"gateways": GATEWAYS}
FLEET = [
    hosts.host_entry("gpu-a", {
        "ansible_host": "10.0.0.1",
        "sglang_server_args": {"port": 30000, "speculative-algorithm": "NEXTN", "served-model-name": "m"},
        "sglang_verify_max_ttft_ms": 1500, "sglang_verify_min_decode_tps": 50,
        "sglang_monitoring_min_spec_accept_length": 1.3
    }, {}),
    hosts.host_entry("gpu-b", {
        "ansible_host": "10.0.0.2",
        "sglang_server_args": {"max-running-requests": 64, "served-model-name": "m"},
        "sglang_verify_max_ttft_ms": 500, "sglang_verify_min_decode_tps": 100
    }, {}),
]


# The synthetic fleet with gpu-a's dcgm-exporter scraped: every alert group exists.
GPU_FLEET = [dict(FLEET[0], dcgm=True), FLEET[1]]
# The rule options of tests/prometheus/: a rollout floor of 1 (floor.yml).
RULE_OPTIONS = dict(OPTIONS, gateway_floor=1)


def promtool():
    """promtool's path; the test fails (no skip) when it is not installed."""
    path = shutil.which("promtool") or ("/usr/bin/promtool" if os.path.exists("/usr/bin/promtool") else None)
    if not path:
        pytest.fail("promtool is not installed: install Debian's prometheus package "
                    "(apt-get install -y prometheus; `make tools` does it)", pytrace=False)
    return path


def run_promtool(*args, cwd=None):
    proc = subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def page_names():
    """Every series name in the recorded pages, plus Prometheus' own and the watchdog's textfile."""
    names = set(PROMETHEUS_SERIES) | WATCHDOG_SERIES
    for path in PAGES:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.strip() and not line.startswith("#"):
                    names.add(re.split(r"[{\s]", line, maxsplit=1)[0])
    return names


_KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
             "bool", "offset", "atan2", "inf", "nan"}


def metric_names(expr):
    """The metric names a PromQL expression reads: identifiers that are not functions, keywords,
    label names (in {...} or the lists of by/on/without/ignoring), strings or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'', '""', expr)
    text = re.sub(r"\{[^}]*\}", "{}", text)
    text = re.sub(r"\[[^\]]*\]", "[]", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    found = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", text):
        word, rest = match.group(0), text[match.end():].lstrip()
        if rest.startswith("(") or word.lower() in _KEYWORDS:
            continue
        if match.start() > 0 and (text[match.start() - 1].isdigit() or text[match.start() - 1] == "."):
            continue  # a duration or a number such as 5m, 1e3
        found.add(word)
    return found
