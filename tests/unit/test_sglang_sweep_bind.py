"""A sweep candidate stays on the bind the firewall filters: one that sets --port to
another port than roles/sglang_firewall filters, or --host to another address than the canary's,
by any spelling or inside a list value, is refused by the plan before any candidate starts
(plugins/module_utils/sweep/plan.py, bind_problem; plugins/modules/sglang_sweep_plan.py)."""

import os

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.sweep import plan
from ansible_collections.sglang.deploy.plugins.modules import sglang_sweep_plan

CURRENT = {"model-path": "/data/models/tiny-qwen2", "host": "10.0.0.5", "port": 30000}


def problem(candidate=None, base=None, axes=None, filtered=None, current=None):
    cands = plan.expand(current or CURRENT, {}, base=base, axes=axes,
                        candidates=[candidate] if candidate else None)
    return plan.bind_problem(cands, filtered)


@pytest.mark.parametrize("args", [{"port": 31000}, {"--port": "31000"}, {"por": 31000}, {"port": None}])
def test_a_candidate_on_another_port_is_refused_naming_it_the_flag_the_port_and_the_fix(args):
    text = problem({"name": "moved", "args": args}, filtered=30001 if args == {"port": None} else None)
    assert "candidate 'moved' sets --port" in text
    assert "the firewall (roles/sglang_firewall) filters port 3000" in text and "sglang_firewall_port" in text
    assert "Fix: remove port from the candidate" in text


def test_the_filtered_port_is_the_firewalls_own_when_the_inventory_sets_it():
    assert "filters port 31000" in problem({"name": "x", "args": {"port": 30002}}, filtered=31000)
    assert problem({"name": "x", "args": {"port": 31000}}, filtered=31000) == ""
    assert problem({"name": "x", "args": {"port": "30000"}}) == ""  # the same port, another spelling


def test_the_default_port_is_sglangs_when_the_canary_sets_none():
    current = {"model-path": "/m"}
    assert problem({"name": "x", "args": {"port": 30000}}, current=current) == ""
    assert "filters port 30000" in problem({"name": "x", "args": {"port": 30001}}, current=current)


def test_base_and_axes_are_judged_too():
    assert "candidate 'baseline" not in problem(base={"args": {"port": 31000}}, axes={"OMP_NUM_THREADS": ["2"]})
    assert "sets --port 31000" in problem(base={"args": {"port": 31000}}, axes={"OMP_NUM_THREADS": ["2"]})
    assert "candidate 'port=31001' sets --port 31001" in problem(axes={"port": [31001]})


@pytest.mark.parametrize("args", [{"host": "0.0.0.0"}, {"hos": "::"}, {"host": None}])
def test_a_candidate_on_another_address_is_refused(args):
    text = problem({"name": "open", "args": args})
    assert "candidate 'open' sets --host" in text and "the canary binds 10.0.0.5" in text
    assert "Fix: remove host from the candidate" in text


def test_the_same_address_is_no_change():
    assert problem({"name": "same", "args": {"host": "10.0.0.5", "max-running-requests": 4}}) == ""
    # SGLang's default bind, spelt out
    assert problem({"name": "same", "args": {"host": "127.0.0.1"}}, current={"model-path": "/m"}) == ""
    assert "the canary binds 127.0.0.1" in problem({"name": "x", "args": {"host": "::"}}, current={"model-path": "/m"})


@pytest.mark.parametrize("value", [["x", "--port", "31000"], ["x", "--po=31000"], ["--host", "0.0.0.0"]])
def test_a_bind_option_inside_a_list_value_is_refused(value):
    text = problem({"name": "smuggled", "args": {"lora-paths": value}})
    assert "candidate 'smuggled': the value of --lora-paths carries --" in text


def test_the_module_refuses_before_anything_is_written(run_module, tmp_path):
    out = run_module(sglang_sweep_plan, dict(
        host="h", report_dir=str(tmp_path), sweep_name="s", current_args=CURRENT, filtered_port=30000,
        candidates=[{"name": "moved", "args": {"port": 31000}}]))
    assert out["failed"] is True
    assert "candidate 'moved' sets --port 31000" in out["msg"] and "(nothing was started)" in out["msg"]
    assert not os.path.exists(tmp_path / "s")
    ok = run_module(sglang_sweep_plan, dict(host="h", report_dir=str(tmp_path), sweep_name="s",
                                            current_args=CURRENT, axes={"max-running-requests": [4]}))
    assert ok.get("failed") is not True, ok


def test_the_role_passes_the_firewalls_port():
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(root, "roles", "sglang_sweep", "tasks", "main.yml"), encoding="utf-8") as fh:
        assert 'filtered_port: "{{ sglang_firewall_port | default(omit) }}"' in fh.read()
