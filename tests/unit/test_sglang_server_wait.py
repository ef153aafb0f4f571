"""plugins/modules/sglang_server_wait.py: `start` starts a unit that is not active
(and only then), check mode starts nothing, start_seconds counts from systemd's
ExecMainStartTimestampMonotonic (CLOCK_MONOTONIC) to the first answer, and `outcome` says
started, crashed, hung or timeout (what the sweep classifies a candidate's start by)."""

import json
import time

import pytest
from ansible_collections.sglang.deploy.plugins.modules import sglang_server_wait


@pytest.fixture(name="unit")
def fixture_unit(monkeypatch):
    """A unit that is `state` until `systemctl start`, then active since 12.5 s ago."""
    unit = {"state": "inactive", "calls": []}

    def unit_state(module, name):
        if unit["state"] == "active":
            began = int((time.monotonic() - 12.5) * 1e6)
            return {"LoadState": "loaded", "ActiveState": "active", "MainPID": "7", "NRestarts": "0",
                    "ExecMainStartTimestampMonotonic": str(began)}
        return {"LoadState": "loaded", "ActiveState": unit["state"], "MainPID": "0", "NRestarts": "0",
                "ExecMainStartTimestampMonotonic": "0"}

    def run_command(self, argv, check_rc=False, **kwargs):
        unit["calls"].append(argv)
        unit["state"] = "active"
        return 0, "", ""

    monkeypatch.setattr(sglang_server_wait, "unit_state", unit_state)
    monkeypatch.setattr(sglang_server_wait.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(sglang_server_wait, "request", lambda url, timeout=0, headers=None: (200, ""))
    return unit


ARGS = {"unit": "sglang.service", "url": "http://127.0.0.1:30000/health_generate", "start": True}


def test_a_stopped_unit_is_started_and_its_start_time_reported(unit, run_module):
    out = run_module(sglang_server_wait, ARGS)
    assert unit["calls"] == [["systemctl", "start", "sglang.service"]]
    assert out["changed"] is True and out["started"] is True
    assert 12.0 <= out["start_seconds"] < 20


def test_a_running_unit_is_left_alone(unit, run_module):
    unit["state"] = "active"
    out = run_module(sglang_server_wait, ARGS)
    assert unit["calls"] == [] and out["changed"] is False and out["started"] is False


def test_check_mode_reports_the_start_and_starts_nothing(unit, run_module):
    out = run_module(sglang_server_wait, ARGS, check_mode=True)
    assert out["changed"] is True and unit["calls"] == []


def test_without_start_a_stopped_unit_is_not_started(unit, run_module):
    unit["state"] = "failed"
    out = run_module(sglang_server_wait, dict(ARGS, start=False, journal_lines=5))
    assert out["failed"] is True and "exited while starting" in out["msg"]
    assert ["systemctl", "start", "sglang.service"] not in unit["calls"]


def test_a_restart_is_recorded_cold_first_then_warm_per_generation(unit, run_module, tmp_path):
    log = tmp_path / "starts" / "sglang.jsonl"
    unit["state"] = "active"
    args = dict(ARGS, restarted=True, generation="abc123", start_log=str(log))
    out = run_module(sglang_server_wait, args)
    assert out["start"]["cache"] == "cold" and out["start"]["generation"] == "abc123"
    # a start done here, of the same generation: its caches hold what the first start compiled
    unit["state"] = "inactive"
    run_module(sglang_server_wait, dict(ARGS, generation="abc123", start_log=str(log)))
    # a new generation starts with empty caches; no generation: unknown
    run_module(sglang_server_wait, dict(args, generation="def456"))
    run_module(sglang_server_wait, dict(args, generation=""))
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["generation"], r["cache"]) for r in records] == [
        ("abc123", "cold"), ("abc123", "warm"), ("def456", "cold"), ("", "unknown")]
    assert all(12.0 <= r["seconds"] < 20 and r["unit"] == "sglang.service" for r in records)
    assert oct(log.stat().st_mode & 0o777) == "0o644"


def test_a_serving_unit_that_was_not_restarted_records_nothing(unit, run_module, tmp_path):
    unit["state"] = "active"
    out = run_module(sglang_server_wait, dict(ARGS, start_log=str(tmp_path / "s.jsonl")))
    assert out["start"] is None and not (tmp_path / "s.jsonl").exists()


def test_the_start_log_keeps_the_newest_records(tmp_path):
    log = tmp_path / "s.jsonl"
    for i in range(7):
        sglang_server_wait.record_start(str(log), {"n": i}, keep=5)
    assert [json.loads(line)["n"] for line in log.read_text().splitlines()] == [2, 3, 4, 5, 6]


@pytest.fixture(name="slow")
def fixture_slow(monkeypatch, tmp_path):
    """A unit that starts and keeps loading (503) until `ready` is set; NRestarts as given."""
    unit = {"state": "inactive", "restarts": 0, "ready": False, "journal": "Load weight begin. avail mem=70.1 GB"}

    def unit_state(module, name):
        return {"LoadState": "loaded", "ActiveState": unit["state"], "SubState": "running", "MainPID": "7",
                "NRestarts": str(unit["restarts"]), "InvocationID": "abc", "ExecMainStartTimestampMonotonic": "0"}

    def run_command(self, argv, check_rc=False, **kwargs):
        if argv[0] == "journalctl":
            return 0, unit["journal"] + "\n", ""
        unit["state"] = "activating"
        return 0, "", ""

    monkeypatch.setattr(sglang_server_wait, "unit_state", unit_state)
    monkeypatch.setattr(sglang_server_wait.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(sglang_server_wait, "request",
                        lambda url, timeout=0, headers=None: (200, "") if unit["ready"] else (503, ""))
    unit["args"] = dict(ARGS, report_every=1, interval=0.1, wait_id="h1-1", state_dir=str(tmp_path))
    return unit


def test_a_long_start_reports_its_progress_and_the_calls_make_one_wait(slow, run_module):
    first = run_module(sglang_server_wait, slow["args"])
    assert first["ready"] is False and first["changed"] is True and first["started"] is True
    assert first["progress_line"].startswith("sglang.service starting for 1 s of at most 900 s (HTTP 503); "
                                             "newest journal line: Load weight begin. avail mem=70.1 GB")
    # the next call of the same wait starts nothing again, and still says the wait started the unit
    slow["ready"] = True
    second = run_module(sglang_server_wait, slow["args"])
    assert second["ready"] is True and second["changed"] is True and second["elapsed"] >= 1.0


def test_a_restart_between_two_calls_is_a_crash(slow, run_module, monkeypatch):
    state = {"restarts": 0}
    monkeypatch.setattr(sglang_server_wait, "unit_state", lambda module, name: {
        "LoadState": "loaded", "ActiveState": "activating", "SubState": "start", "MainPID": "7",
        "NRestarts": str(state["restarts"]), "InvocationID": "abc", "ExecMainStartTimestampMonotonic": "0"})
    assert run_module(sglang_server_wait, slow["args"])["ready"] is False
    state["restarts"] = 1  # systemd restarted it after a crash while Ansible was between calls
    out = run_module(sglang_server_wait, slow["args"])
    assert out["failed"] and "exited while starting" in out["msg"]
    # a new wait (another id) takes the restart count as it finds it
    assert run_module(sglang_server_wait, dict(slow["args"], wait_id="h1-2"))["ready"] is False


def test_the_outcome_of_a_served_start_is_started(unit, run_module):
    assert run_module(sglang_server_wait, ARGS)["outcome"] == "started"
    unit["state"] = "active"
    assert run_module(sglang_server_wait, ARGS)["outcome"] == "started"


def test_the_outcome_of_an_exit_is_crashed(unit, run_module):
    unit["state"] = "failed"
    out = run_module(sglang_server_wait, dict(ARGS, start=False, journal_lines=5))
    assert out["failed"] is True and out["outcome"] == "crashed"


@pytest.mark.parametrize("answer, outcome", [
    ((0, "[Errno 111] Connection refused"), "timeout"),  # never listened: a slow start
    ((0, "timed out"), "hung"),  # accepted the request, never answered it
    ((503, ""), "hung"),  # answers, but does not generate
])
def test_the_time_running_out_is_hung_once_the_server_listened_else_timeout(slow, run_module, monkeypatch,
                                                                              answer, outcome):
    monkeypatch.setattr(sglang_server_wait, "request", lambda url, timeout=0, headers=None: answer)
    out = run_module(sglang_server_wait, dict(slow["args"], report_every=0, timeout=0))
    assert out["failed"] is True and "did not generate within 0 s" in out["msg"]
    assert out["outcome"] == outcome


def test_a_listen_seen_by_an_earlier_call_of_the_wait_makes_it_hung(slow, run_module, monkeypatch):
    answer = {"now": (503, "")}
    monkeypatch.setattr(sglang_server_wait, "request", lambda url, timeout=0, headers=None: answer["now"])
    first = run_module(sglang_server_wait, slow["args"])
    assert first["ready"] is False and first["outcome"] == "starting"
    answer["now"] = (0, "[Errno 111] Connection refused")  # the later call sees no listener
    out = run_module(sglang_server_wait, dict(slow["args"], timeout=0))
    assert out["failed"] is True and out["outcome"] == "hung"
