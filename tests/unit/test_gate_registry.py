"""The registry of gates (plugins/module_utils/verify/registry.py, docs/architecture.md "The
registry of gates"): every registered gate has its settings as role options of sglang_verify (a
default, one argument-spec entry, a kind), a row in the docs' table and a test that names it;
its settings are a closed dict; every verdict has the one shape."""

import re
from pathlib import Path

import pytest
import yaml
from ansible_collections.sglang.deploy.plugins.module_utils.verify import registry
from ansible_collections.sglang.deploy.plugins.module_utils.verify import verdict as vd

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "sglang_verify"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
SPECS = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]
KINDS = yaml.safe_load((ROLE / "meta" / "input_kinds.yml").read_text())["options"]
DOC = (ROOT / "docs" / "architecture.md").read_text()
VERIFY_TASKS = (ROLE / "tasks" / "verify.yml").read_text()
GATES = registry.REGISTRY


def _options(gate):
    return ["sglang_verify_" + key for key in gate.settings] + list(gate.options)


def test_the_names_are_unique_and_the_order_lets_gsm8k_decide_the_quality_gate():
    names = [g.name for g in GATES]
    assert len(names) == len(set(names)) and names.index("gsm8k") < names.index("quality")


@pytest.mark.parametrize("gate", GATES, ids=lambda g: g.name)
def test_every_gate_has_settings_a_doc_row_and_a_test(gate):
    options = _options(gate)
    assert options, "%s has neither settings nor options" % gate.name
    for name in options:
        assert name in DEFAULTS, "%s: %s has no default (defaults/main.yml)" % (gate.name, name)
        assert name in SPECS["main"]["options"], "%s: %s is not in the argument spec" % (gate.name, name)
        assert name in KINDS, "%s: %s has no kind (meta/input_kinds.yml)" % (gate.name, name)
    # the settings reach the module under the gate's name, each by its option's own name
    if gate.settings:
        block = VERIFY_TASKS.split("      %s:\n" % gate.name, 1)
        assert len(block) == 2, "tasks/verify.yml passes no settings for %s" % gate.name
        body = re.split(r"\n(?!        )", block[1], maxsplit=1)[0]
        passed = re.findall(r"^        ([a-z0-9_]+): .*sglang_verify_\1\b", body, re.M)
        keys = re.findall(r"^        ([a-z0-9_]+): ", body, re.M)
        assert set(keys) == set(gate.settings) and set(passed) == set(keys), (gate.name, keys, passed)
    assert re.search(r"^\| `%s` \|" % re.escape(gate.name), DOC, re.M), "no row for %s in docs/architecture.md" % gate.name
    test = ROOT / gate.test
    assert test.is_file() and gate.name in test.read_text(), "%s names no test that names it" % gate.name
    assert set(gate.needs) <= {"health", "drift", "probes", "gsm8k", "quality", "single_stream", "sweep"}


def test_settings_are_a_closed_dict_of_closed_dicts():
    s = registry.settings({"throughput_at_load": {"throughput_concurrency": 8}})
    assert set(s) == set(g.name for g in GATES)
    assert s["throughput_at_load"]["throughput_concurrency"] == 8 and s["throughput_at_load"]["baseline_min_samples"] == 3
    with pytest.raises(ValueError, match="no registered gate throughput"):
        registry.settings({"throughput": {}})
    with pytest.raises(ValueError, match=r"gates.speed_regression: no setting min_samples \(settings: baseline_min_samples"):
        registry.settings({"speed_regression": {"min_samples": 3}})


def test_one_verdict_shape_and_the_host_fails_on_degraded_or_failed_only():
    with pytest.raises(ValueError, match="level 'ok'"):
        vd.verdict("x", "ok")
    verdicts = [vd.verdict("a", level, ["why %s" % level], [{"gate": level}]) for level in vd.LEVELS]
    assert all(set(v) == {"gate", "level", "reasons", "figures", "message"} for v in verdicts)
    passed, failures, rows = vd.outcome(verdicts)
    assert not passed and failures == ["why degraded", "why failed"] and len(rows) == len(vd.LEVELS)
    assert vd.outcome([v for v in verdicts if v["level"] not in vd.FAILING])[0]


def test_a_host_of_one_request_at_a_time_gets_verdicts_not_an_exception():
    """max-running-requests 1: the quality check at load and (where the profile serves one
    request at a time) the throughput gate do not apply, each saying why; the host passes."""
    load = {"level": "not_applicable", "reasons": ["the server decodes at most 1 request at a time (...)"]}
    ctx = {"result": {"quality": {"level": "same", "summary": {"tokens": 3, "top1": 1.0, "mean_abs_dlogprob": 0.0}, "load": load},
                      "sweep": {"levels": [{"concurrency": 1, "output_throughput": 90.0}]}},
           "host": "h", "mode": "gate", "baselines": {}, "reset_hint": "R", "sweep": {}, "isolated": False}
    s = registry.settings({"throughput_at_load": {"throughput_concurrency": 1, "throughput_ratio": 0.8}})
    verdicts = registry.evaluate(ctx, s)
    by = dict((v["gate"], v) for v in verdicts)
    assert by["quality_at_load"]["level"] == "not_applicable" and by["quality_at_load"]["reasons"] == load["reasons"]
    assert by["throughput_at_load"]["level"] == "not_applicable"
    assert vd.outcome(verdicts)[0]
    from ansible_collections.sglang.deploy.plugins.module_utils.verify import render
    md = render.render_summary_md({"run_id": "r", "hosts": {"h": {"passed": True, "result": ctx["result"],
                                                                  "verdicts": verdicts}}})
    assert "- quality_at_load not applicable: the server decodes at most 1 request at a time (...)" in md
    assert "- throughput_at_load not applicable: the profile serves one request at a time" in md


ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())


def test_what_a_verification_measures_follows_from_the_gates_that_judge_it():
    every = {g.name: True for g in GATES}
    assert registry.checks("gate", every) == ["health", "drift", "probes", "single_stream", "gsm8k", "quality", "sweep"]
    off = dict(every, quality=False, quality_at_load=False, spec_accept_length=False, gsm8k=False,
               throughput_at_load=False)
    # the quick gate of a host without quality, gsm8k or throughput: only what correctness and
    # speed regression read; the full verification adds the sweep its report shows
    assert registry.checks("gate", off) == ["health", "drift", "probes", "single_stream"]
    assert registry.checks("full", off) == ["health", "drift", "probes", "single_stream", "sweep"]
    # one quality gate left on still needs the quality run; a switch carried as text counts
    assert "quality" in registry.checks("gate", dict(off, spec_accept_length="True"))
    assert "quality" not in registry.checks("gate", dict(off, quality="False"))
    with pytest.raises(ValueError, match="quality_at_lod"):
        registry.checks("gate", {"quality_at_lod": False})
    with pytest.raises(ValueError, match="mode 'quick'"):
        registry.checks("quick", every)


def test_the_role_switches_only_registered_gates_and_both_entry_points_ask_the_registry():
    assert set(ROLE_VARS["_sglang_verify_gates_on"]) <= {g.name for g in GATES}
    for entry in ("gate.yml", "main.yml"):
        text = (ROLE / "tasks" / entry).read_text()
        assert "sglang.deploy.sglang_verify_checks(_sglang_verify_gates_on)" in text, entry
        assert "'single_stream'" not in text, "%s lists checks by hand" % entry
