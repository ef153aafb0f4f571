# -*- coding: utf-8 -*-
# The liveness watchdog's figures as a node_exporter textfile (Prometheus' text exposition), read
# by the alert rules of roles/sglang_monitoring (docs/monitoring.md). Written by
# roles/sglang_watchdog/files/sglang-watchdog after every run. Tested by
# tests/unit/test_sglang_watchdog.py.
"""The watchdog's state as Prometheus text."""

METRICS = (
    ("sglang_watchdog_last_run_timestamp_seconds", "gauge", "Unix time of the watchdog's last run."),
    ("sglang_watchdog_healthy", "gauge", "1 when the last generation probe passed."),
    ("sglang_watchdog_consecutive_failures", "gauge", "Failed probes in a row that counted (no token moved)."),
    ("sglang_watchdog_restarts_total", "counter", "Restarts the watchdog issued."),
    ("sglang_watchdog_last_restart_timestamp_seconds", "gauge", "Unix time of the last restart it issued, 0 before any."),
    ("sglang_watchdog_held", "gauge", "1 while a rollout (or a failed one) holds the host: the watchdog does nothing."),
    ("sglang_watchdog_listed", "gauge", "1 when this gateway lists the host's worker serving."),
    ("sglang_watchdog_given_up", "gauge", "1 while the watchdog stopped restarting the host and keeps it out."),
    ("sglang_watchdog_sentinel_runs_total", "counter", "Batches of quality prompts the serving sentinel asked and judged."),
    ("sglang_watchdog_sentinel_wrong_total", "counter",
     "Sentinel batches with a wrong answer against the release's reference (a transient included)."),
    ("sglang_watchdog_sentinel_ok", "gauge", "1 when the sentinel's last judged batch was right (at once or asked again)."),
    ("sglang_watchdog_sentinel_last_seconds", "gauge", "Seconds the sentinel's last batch took."),
    ("sglang_watchdog_sentinel_out", "gauge", "1 while the host is out of every gateway for wrong answers."),
)


def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", " ").replace('"', '\\"')


def _labels(labels):
    return "{%s}" % ",".join('%s="%s"' % (k, _escape(v)) for k, v in labels)


def render(service, state, now, healthy, held, listed):
    """The textfile: `listed` maps each gateway URL to True/False (absent: no gateway)."""
    base = (("service", service),)
    sentinel = state.get("sentinel") or {}
    values = {
        "sglang_watchdog_last_run_timestamp_seconds": [(base, now)],
        "sglang_watchdog_healthy": [(base, 1 if healthy else 0)],
        "sglang_watchdog_consecutive_failures": [(base, state.get("failures", 0))],
        "sglang_watchdog_restarts_total": [(base, state.get("restarts_total", 0))],
        "sglang_watchdog_last_restart_timestamp_seconds": [(base, state.get("restarted_at") or 0)],
        "sglang_watchdog_held": [(base, 1 if held else 0)],
        "sglang_watchdog_listed": [(base + (("gateway", url),), 1 if ok else 0) for url, ok in sorted(listed.items())],
        "sglang_watchdog_given_up": [],
        "sglang_watchdog_sentinel_runs_total": [(base, sentinel.get("runs_total", 0))],
        "sglang_watchdog_sentinel_wrong_total": [(base, sentinel.get("wrong_total", 0))],
        "sglang_watchdog_sentinel_ok": [(base, 1 if sentinel.get("last_ok", True) else 0)],
        "sglang_watchdog_sentinel_last_seconds": [(base, sentinel.get("last_seconds", 0.0))],
        "sglang_watchdog_sentinel_out": [(base, 1 if state.get("quarantine") or (
            (state.get("given_up") or {}).get("reason") == "wrong_answers") else 0)],
    }
    given_up = state.get("given_up")
    if given_up:
        values["sglang_watchdog_given_up"] = [
            (base + (("reason", given_up.get("reason", "")), ("detail", given_up.get("detail", "")[:160])), 1)]
    lines = []
    for name, kind, text in METRICS:
        if not values[name]:
            continue
        lines += ["# HELP %s %s" % (name, text), "# TYPE %s %s" % (name, kind)]
        lines += ["%s%s %s" % (name, _labels(labels), _number(value)) for labels, value in values[name]]
    return "\n".join(lines) + "\n"


def _number(value):
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)
