"""The liveness watchdog's decisions (plugins/module_utils/watchdog/decide.py) and its textfile
(watchdog/metrics.py), run after run, on observations as the program on the host
(roles/sglang_watchdog/files/sglang_watchdog_run.py) makes them."""

import json

from ansible_collections.sglang.deploy.plugins.module_utils.watchdog import decide as wd
from ansible_collections.sglang.deploy.plugins.module_utils.watchdog.metrics import render

CONFIG = {"threshold": 3, "restart_limit": 3, "restart_window": 3600, "restart_backoff": 60,
          "start_grace": 300, "stop_grace": 180, "fatal_xids": [8, 79], "interval": 5}
SERVING = {"active": "active", "main_pid": 100, "active_since": 0.0, "probe_ok": True, "progress": 10.0,
           "listed_everywhere": True, "listed_anywhere": True}
HUNG = dict(SERVING, probe_ok=False, probe_why="no answer in 5 s", listed_everywhere=False)


def runs(observations, state=None, start=1000.0, step=5.0):
    """Every run's (state, actions), one observation each, `step` seconds apart."""
    out = []
    for i, obs in enumerate(observations):
        state, actions = wd.decide(state, obs, CONFIG, start + i * step)
        out.append((state, actions))
    return out


def test_a_serving_host_listed_everywhere_needs_nothing():
    state, actions = runs([SERVING])[-1]
    assert actions == [] and state["failures"] == 0 and state["served_pid"] == 100


def test_a_serving_host_missing_from_a_gateway_is_put_back():
    _, actions = runs([dict(SERVING, listed_everywhere=False)])[-1]
    assert actions == [wd.ADD]


def test_three_failed_probes_without_progress_take_it_out_capture_and_restart():
    result = runs([SERVING, HUNG, HUNG, HUNG])
    assert [a for _, a in result] == [[], [], [], [wd.REMOVE, wd.CAPTURE, wd.RESTART]]
    state = result[-1][0]
    assert state["restarts_total"] == 1 and state["restart_pid"] == 100 and state["out"]


def test_a_probe_that_fails_while_tokens_move_is_busy_not_hung():
    busy = [dict(HUNG, progress=10.0 + i) for i in range(6)]
    result = runs([SERVING] + busy)
    assert all(a == [] for _, a in result) and result[-1][0]["failures"] == 0
    assert "busy" in result[-1][0]["note"]


def test_an_answer_that_refuses_the_key_is_never_a_hang():
    refused = dict(HUNG, probe_busy_ok=True, probe_why="HTTP 401")
    result = runs([SERVING] + [refused] * 5)
    assert all(a == [] for _, a in result)


def test_a_new_process_is_starting_until_its_grace_ends():
    new = dict(HUNG, main_pid=200, active_since=1000.0)
    result = runs([SERVING] + [new] * 10)  # 50 s of a start: within 300 s
    assert all(a == [] for _, a in result) and "starting" in result[-1][0]["note"]
    late = runs([new] * 3, state=result[-1][0], start=1400.0)
    assert late[-1][1] == [wd.REMOVE, wd.CAPTURE, wd.RESTART]


def test_back_in_once_the_restarted_server_serves_then_counted_once():
    restarted = runs([SERVING, HUNG, HUNG, HUNG])[-1][0]
    back = dict(SERVING, main_pid=200, active_since=1030.0, listed_everywhere=False, listed_anywhere=False)
    state, actions = wd.decide(restarted, back, CONFIG, 1060.0)
    assert actions == [wd.ADD] and not state["out"] and state["restarts_total"] == 1


def test_held_by_a_rollout_nothing_is_done_even_when_hung():
    result = runs([dict(HUNG, held=True, hold_reason="rollout")] * 5)
    assert all(a == [] for _, a in result) and result[-1][0]["failures"] == 0
    assert result[-1][0]["note"] == "held (rollout): nothing done"


def test_a_hold_ends_at_its_time_or_never():
    assert wd.hold_active({"until": 0}, 1e12)
    assert wd.hold_active({"until": 200}, 100) and not wd.hold_active({"until": 200}, 300)
    assert not wd.hold_active(None, 1)


def test_a_stopped_or_failed_unit_is_left_to_systemd():
    for active in ("inactive", "failed", "activating"):
        result = runs([dict(HUNG, active=active)] * 5)
        assert all(a == [] for _, a in result)


def test_restarts_back_off_then_give_up_at_the_limit():
    state = None
    restarts = []
    now = 1000.0
    for _ in range(60):
        state, actions = wd.decide(state, HUNG, dict(CONFIG, start_grace=0), now)
        if wd.RESTART in actions:
            restarts.append(now)
        if state["given_up"]:
            break
        now += 5
    assert len(restarts) == 3
    # the third restart waited the back-off (60 s) after the second
    assert restarts[2] - restarts[1] >= 60 and restarts[1] - restarts[0] < 60
    assert state["given_up"]["reason"] == wd.GIVE_UP_LIMIT
    # given up: never restarted again, kept out of the gateways it still shows up in
    state, actions = wd.decide(state, dict(HUNG, listed_anywhere=True), CONFIG, now + 999)
    assert actions == [wd.REMOVE]


def test_a_fatal_xid_gives_up_without_a_restart():
    xid = "NVRM: Xid (PCI:0000:01:00): 79, pid=1234, GPU has fallen off the bus."
    result = runs([SERVING, HUNG, HUNG, dict(HUNG, xid_lines=[xid])])
    state, actions = result[-1]
    assert actions == [wd.REMOVE, wd.CAPTURE] and wd.RESTART not in actions
    assert state["given_up"]["reason"] == wd.GIVE_UP_XID and "79" in state["given_up"]["detail"]


def test_an_xid_a_restart_can_fix_does_not_give_up():
    xid = "NVRM: Xid (PCI:0000:01:00): 13, pid=1234, Graphics SM Warp Exception"
    _, actions = runs([SERVING, HUNG, HUNG, dict(HUNG, xid_lines=[xid])])[-1]
    assert wd.RESTART in actions


def test_an_old_process_that_will_not_die_gives_up():
    restarted = runs([SERVING, HUNG, HUNG, HUNG])[-1][0]
    stuck = dict(SERVING, main_pid=0, active="deactivating", old_pid_alive=True, old_pid_state="D")
    state, _ = wd.decide(restarted, stuck, CONFIG, restarted["restarted_at"] + 60)
    assert not state["given_up"]
    state, _ = wd.decide(state, stuck, CONFIG, restarted["restarted_at"] + 200)
    assert state["given_up"]["reason"] == wd.GIVE_UP_STUCK and "state D" in state["given_up"]["detail"]


def test_the_textfile_says_restarts_listing_and_give_up():
    state = dict(wd.new_state(), restarts_total=2, restarted_at=1234.5,
                 given_up={"reason": "gpu_xid", "detail": 'Xid "79"'})
    text = render("sglang", state, 2000.0, False, False, {"http://gw:30080": False})
    assert 'sglang_watchdog_restarts_total{service="sglang"} 2' in text
    assert 'sglang_watchdog_listed{service="sglang",gateway="http://gw:30080"} 0' in text
    assert 'sglang_watchdog_given_up{service="sglang",reason="gpu_xid",detail="Xid \\"79\\""} 1' in text
    assert 'sglang_watchdog_last_restart_timestamp_seconds{service="sglang"} 1234.5' in text
    assert "sglang_watchdog_given_up" not in render("sglang", wd.new_state(), 1.0, True, False, {})


def _program():
    """The program as the role installs it (roles/sglang_watchdog/files), imported by name."""
    from ansible_collections.sglang.deploy.roles.sglang_watchdog.files import sglang_watchdog_run
    return sglang_watchdog_run


def test_hold_release_and_status_from_the_command(tmp_path, capsys):
    program = _program()
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"state_dir": str(tmp_path / "state"), "service": "sglang"}))
    (tmp_path / "gateways.json").write_text(json.dumps({"gateways": ["http://gw:30080"]}))
    assert program.main(["--config", str(config), "release"]) == 0
    assert capsys.readouterr().out.strip() == "unchanged"
    program.main(["--config", str(config), "hold", "--for", "0", "--reason", "rollout"])
    capsys.readouterr()
    program.main(["--config", str(config), "status"])
    assert json.loads(capsys.readouterr().out)["hold"] == {"reason": "rollout", "until": 0}
    program.main(["--config", str(config), "release"])
    assert capsys.readouterr().out.strip() == "released"
    assert not (tmp_path / "state" / "hold.json").exists()


def test_the_role_installs_every_module_the_program_imports():
    """roles/sglang_watchdog/vars/main.yml lists the module_utils copied beside the program: every
    project import of the program and of those modules, and the package (__init__.py) of each,
    must be among them."""
    import re
    from pathlib import Path
    import yaml
    root = Path(__file__).resolve().parents[2]
    utils = root / "plugins/module_utils"
    entries = yaml.safe_load((root / "roles/sglang_watchdog/vars/main.yml").read_text())["_sglang_watchdog_files"]
    listed = {re.fullmatch(r"\{\{ _sglang_watchdog_lib \}\}/([\w/]+\.py)", e["path"]).group(1)
              for e in entries if e["path"].startswith("{{ _sglang_watchdog_lib }}/")}
    for name in listed:  # each read from the module of its own name
        entry = next(e for e in entries if e["path"] == "{{ _sglang_watchdog_lib }}/" + name)
        assert f"_sglang_watchdog_src ~ '/{name}'" in entry["content"], entry
    files = [root / "roles/sglang_watchdog/files/sglang_watchdog_run.py"] + [utils / name for name in listed]
    needed = set()
    for path in files:
        for module, names in re.findall(r"plugins\.module_utils((?:\.\w+)*) import ([\w, ]+)", path.read_text()):
            dotted = module.strip(".")
            for candidate in [dotted] + [(dotted + "." if dotted else "") + n.split()[0] for n in names.split(",")]:
                rel = candidate.replace(".", "/")
                for file in (rel + ".py", rel + "/__init__.py"):
                    if candidate and (utils / file).is_file():
                        needed.add(file)
    needed |= {str(Path(name).parent / "__init__.py") for name in needed if "/" in name}
    assert {"sglang_http.py", "watchdog/decide.py", "gateway/api.py", "gateway/__init__.py"} <= needed
    assert needed <= listed, needed - listed
