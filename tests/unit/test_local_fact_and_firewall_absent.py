"""plugins/module_utils/local_fact.py (the local fact written in the gathering module's own call) and
plugins/modules/sglang_firewall_absent.py (the firewall removed in one call), on
files in a temporary directory; systemctl and nft are not called where nothing needs them."""

import json

from ansible_collections.sglang.deploy.plugins.modules import sglang_firewall_absent
from ansible_collections.sglang.deploy.plugins.module_utils.local_fact import render, write_local_fact


def test_local_fact_is_written_once_then_left_alone(tmp_path):
    facts = {"gpu_count": 0, "b": [1, 2]}
    target = tmp_path / "facts.d"
    assert write_local_fact(str(target), "gpu_host", facts) is True
    path = target / "gpu_host.fact"
    assert json.loads(path.read_text()) == facts
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    mtime = path.stat().st_mtime_ns
    assert write_local_fact(str(target), "gpu_host", facts) is False
    assert path.stat().st_mtime_ns == mtime
    assert list(target.iterdir()) == [path]  # no temporary file left behind


def test_local_fact_check_mode_reports_and_writes_nothing(tmp_path):
    assert write_local_fact(str(tmp_path / "d"), "x", {"a": 1}, check_mode=True) is True
    assert not (tmp_path / "d").exists()
    (tmp_path / "x.fact").write_text(render({"a": 1}))
    assert write_local_fact(str(tmp_path), "x", {"a": 1}, check_mode=True) is False
    assert write_local_fact(str(tmp_path), "x", {"a": 2}, check_mode=True) is True
    assert json.loads((tmp_path / "x.fact").read_text()) == {"a": 1}


def _args(tmp_path):
    return {"service": "sglang-firewall", "unit_dir": str(tmp_path),
            "ruleset_path": str(tmp_path / "sglang-firewall.nft"), "table": "sglang_firewall_test_absent"}


def test_nothing_installed_is_no_change(tmp_path, run_module):
    out = run_module(sglang_firewall_absent, _args(tmp_path))
    assert out["changed"] is False and out["removed"] == []


def test_check_mode_names_the_unit_and_ruleset_and_removes_nothing(tmp_path, run_module):
    (tmp_path / "sglang-firewall.service").write_text("[Unit]\n")
    (tmp_path / "sglang-firewall.nft").write_text("table inet sglang_firewall {}\n")
    out = run_module(sglang_firewall_absent, _args(tmp_path), check_mode=True)
    assert out["changed"] is True
    assert out["removed"] == ["unit sglang-firewall.service (stopped, disabled)", str(tmp_path / "sglang-firewall.nft")]
    assert (tmp_path / "sglang-firewall.service").exists() and (tmp_path / "sglang-firewall.nft").exists()


def test_a_ruleset_left_without_its_unit_is_removed(tmp_path, run_module):
    (tmp_path / "sglang-firewall.nft").write_text("table inet sglang_firewall {}\n")
    out = run_module(sglang_firewall_absent, _args(tmp_path))
    assert out["changed"] is True and out["removed"] == [str(tmp_path / "sglang-firewall.nft")]
    assert not (tmp_path / "sglang-firewall.nft").exists()


def test_the_server_units_drop_in_goes_with_the_firewall(tmp_path, run_module):
    """Off means the server's start check (docs/firewall.md, Fail closed) goes too: a drop-in left
    behind would keep the server down for a table that is no longer wanted. Check mode names it
    and keeps it; the removal itself (with its daemon-reload) is the Molecule default scenario's
    test_firewall_off_opens_the_port_again."""
    dropin = tmp_path / "sglang.service.d" / "sglang-firewall.conf"
    dropin.parent.mkdir()
    dropin.write_text("[Service]\nExecStartPre=+/bin/true\n")
    args = dict(_args(tmp_path), server_dropin=str(dropin))
    out = run_module(sglang_firewall_absent, args, check_mode=True)
    assert out["changed"] is True and out["removed"] == [str(dropin)] and dropin.exists()


def _watch(tmp_path):
    timer, service = tmp_path / "sglang-firewall-watch.timer", tmp_path / "sglang-firewall-watch.service"
    script = tmp_path / "libexec" / "sglang-firewall-watch"
    return timer, service, script, dict(_args(tmp_path), watch="sglang-firewall-watch", watch_script=str(script))


def test_the_watch_goes_first_check_mode_names_it_and_keeps_it(tmp_path, run_module):
    """The watch's timer would load the table again: it is named (and, for real, stopped and
    disabled) before the firewall's own unit and ruleset."""
    timer, service, script, args = _watch(tmp_path)
    script.parent.mkdir()
    for path in (timer, service, script, tmp_path / "sglang-firewall.service"):
        path.write_text("x\n")
    out = run_module(sglang_firewall_absent, args, check_mode=True)
    assert out["changed"] is True
    assert out["removed"] == ["unit sglang-firewall-watch.timer (stopped, disabled)", str(service), str(script),
                              "unit sglang-firewall.service (stopped, disabled)"]
    assert timer.exists() and service.exists() and script.exists()


def test_a_watch_script_left_alone_is_removed_and_nothing_else_is_touched(tmp_path, run_module):
    _, _, script, args = _watch(tmp_path)
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    out = run_module(sglang_firewall_absent, args)
    assert out["changed"] is True and out["removed"] == [str(script)] and not script.exists()
    assert run_module(sglang_firewall_absent, args)["changed"] is False
