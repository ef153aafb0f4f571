"""The quality comparison (plugins/module_utils/quality/compare.py): agreement, |d logprob|, KL, the
levels and the gate's verdicts, prompt-set hashing; and the reference following its release
(plugins/module_utils/release/state.py: record attaches it, a restore makes it current again)."""

import json
import math
import os

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.quality import compare as q
from ansible_collections.sglang.deploy.plugins.module_utils.release import state as rs

SAME = {"mean_abs_dlogprob": 0.003, "max_abs_dlogprob": 0.03, "min_top1": 1.0}
TOL = {"mean_abs_dlogprob": 0.02, "max_abs_dlogprob": 0.15, "min_top1": 0.97}


def ref_entry(ids=(10, 11, 12, 13), lps=(-0.1, -0.2, -0.3, -0.05)):
    # top-k per position: the reference token first, then two alternatives
    top = [[[lp, tok, "t%d" % tok], [lp - 2.0, 900 + i, "alt"], [lp - 3.0, 950 + i, "alt2"]]
           for i, (tok, lp) in enumerate(zip(ids, lps))]
    return {"ids": list(ids), "logprobs": list(lps), "top": top, "texts": ["t%d" % t for t in ids],
            "prompt_ids": [1, 2, 3]}


def scored_like(ref, shift=0.0, flip_at=None):
    """The new server's teacher-forced scoring: every logprob moved by `shift`; at `flip_at` an
    alternative becomes the argmax."""
    lps = [lp + shift for lp in ref["logprobs"]]
    top = []
    for i, pos in enumerate(ref["top"]):
        pos = [[e[0] + shift, e[1], e[2]] for e in pos]
        if i == flip_at:
            pos[1][0] = pos[0][0] + 0.5
        top.append(pos)
    return {"logprobs": lps, "top": top, "texts": ref["texts"]}


def test_identical_scoring_is_same_with_full_agreement():
    ref = ref_entry()
    row = q.compare_prompt(ref, scored_like(ref), free_ids=ref["ids"])
    assert row["top1"] == 1.0 and row["mean_abs_dlogprob"] == 0.0 and row["max_abs_dlogprob"] == 0.0
    assert row["kl_topk"] == pytest.approx(0.0, abs=1e-9) and row["kl_k3"] == pytest.approx(0.0, abs=1e-12)
    assert row["free_exact"] is True and row["free_prefix"] == 4
    summary = q.summarize([row])
    assert q.judge(summary, SAME, TOL) == ("same", [])


def test_mean_and_max_delta_and_the_k3_estimate():
    ref = ref_entry()
    scored = scored_like(ref)
    scored["logprobs"][2] -= 0.4  # one token much less likely
    row = q.compare_prompt(ref, scored)
    assert row["max_abs_dlogprob"] == pytest.approx(0.4)
    assert row["mean_abs_dlogprob"] == pytest.approx(0.1)
    assert row["kl_k3"] == pytest.approx(((math.exp(-0.4) - 1) + 0.4) / 4)
    assert row["worst"]["position"] == 2 and row["worst"]["new_logprob"] == pytest.approx(-0.7)
    assert "free_exact" not in row  # no free run given


def test_top1_disagreement_is_counted_and_quoted_first():
    ref = ref_entry()
    row = q.compare_prompt(ref, scored_like(ref, flip_at=1), free_ids=[10, 900, 5, 6])
    assert row["top1"] == 0.75
    assert row["worst"]["position"] == 1 and row["worst"]["new_id"] == 901
    assert row["free_exact"] is False and row["free_prefix"] == 1
    text = q.describe_worst([row], [{"id": "code-01", "text": "def read_file(path):"}])
    assert "code-01" in text and "continuation token 1" in text and "'t11'" in text and "901" in text


def tied_at(ref, position, other_first, delta=0.0):
    """The new scoring of ``ref`` where another token's logprob at ``position`` is the reference
    token's + ``delta`` (0: an exact tie), listed first when ``other_first``."""
    scored = scored_like(ref)
    pos = scored["top"][position]
    lp = pos[0][0]
    other = [lp + delta, 581 if pos[0][1] != 581 else 624, "mport"]
    scored["top"][position] = ([other, pos[0]] if other_first else [pos[0], other]) + pos[1:2]
    return scored


def test_an_exact_tie_at_the_top_agrees_whichever_token_comes_first():
    # a CI failure seen on a fresh machine: short-01, continuation token 4, 'code' (581) and 'mport' (624)
    # both at -1.4092; top_logprobs listed the other one first
    ref = ref_entry(ids=(10, 11, 12, 13, 581), lps=(-0.1, -0.2, -0.3, -0.05, -1.4092))
    for first in (True, False):
        row = q.compare_prompt(ref, tied_at(ref, 4, first), free_ids=ref["ids"])
        assert row["top1"] == 1.0, first
        assert q.judge(q.summarize([row]), SAME, TOL) == ("same", [])
        assert "still the top token" in q.describe_worst([row], [{"id": "short-01", "text": "import os\n"}])


def test_a_tie_below_the_top_changes_nothing():
    ref = ref_entry()
    scored = scored_like(ref)
    scored["top"][2][2][0] = scored["top"][2][1][0]  # the 2nd and 3rd alternatives tied
    row = q.compare_prompt(ref, scored)
    assert row["top1"] == 1.0 and row["max_abs_dlogprob"] == 0.0 and "new_id" in row["worst"]


def test_a_near_tie_that_moved_beyond_the_epsilon_disagrees():
    ref = ref_entry(ids=(10, 11, 12, 13, 581), lps=(-0.1, -0.2, -0.3, -0.05, -1.4092))
    beyond = q.TIE_EPSILON * 3
    row = q.compare_prompt(ref, tied_at(ref, 4, False, delta=beyond))
    assert row["top1"] == 0.8 and row["worst"]["position"] == 4 and row["worst"]["new_id"] == 624
    assert q.judge(q.summarize([row]), SAME, TOL)[0] == "degraded"
    # within the epsilon: a tie
    assert q.compare_prompt(ref, tied_at(ref, 4, True, delta=q.TIE_EPSILON / 2))["top1"] == 1.0
    # a stated epsilon decides instead
    assert q.compare_prompt(ref, tied_at(ref, 4, True, delta=beyond), tie_epsilon=beyond * 2)["top1"] == 1.0


def test_kl_topk_is_zero_for_equal_and_grows_with_the_change():
    ref = ref_entry()["top"][0]
    assert q.kl_topk(ref, ref) == pytest.approx(0.0, abs=1e-12)
    moved = [[e[0] - 0.5 if i == 0 else e[0] + 0.2, e[1], e[2]] for i, e in enumerate(ref)]
    more = [[e[0] - 1.0 if i == 0 else e[0] + 0.4, e[1], e[2]] for i, e in enumerate(ref)]
    assert 0 < q.kl_topk(ref, moved) < q.kl_topk(ref, more)
    # a reference token missing from the new top-k is given the new k-th logprob (errs low)
    missing = [[-0.1, 10, "t10"], [-5.0, 7, "x"]]
    assert q.kl_topk([[-0.1, 10], [-2.0, 900]], missing) > 0


def test_levels_from_the_limits():
    base = {"tokens": 720, "top1": 1.0, "mean_abs_dlogprob": 0.0007, "max_abs_dlogprob": 0.006, "kl_topk": 0.0}
    assert q.judge(base, SAME, TOL)[0] == "same"
    bf16 = dict(base, mean_abs_dlogprob=0.0077, max_abs_dlogprob=0.03, top1=0.99)
    level, reasons = q.judge(bf16, SAME, TOL)
    assert level == "numerics_changed" and any("noise" in r for r in reasons)
    eps = dict(base, mean_abs_dlogprob=0.046, max_abs_dlogprob=0.24, top1=0.93)
    level, reasons = q.judge(eps, SAME, TOL)
    assert level == "degraded" and len(reasons) == 3
    # a new model revision is never `same`
    assert q.judge(base, SAME, TOL, model_changed=True)[0] == "numerics_changed"
    assert q.judge({"tokens": 0}, SAME, TOL)[0] == "degraded"


def test_summary_is_token_weighted():
    ref_a, ref_b = ref_entry(), ref_entry(ids=(20, 21), lps=(-0.1, -0.1))
    scored_b = scored_like(ref_b, shift=-0.3)
    rows = [q.compare_prompt(ref_a, scored_like(ref_a)), q.compare_prompt(ref_b, scored_b)]
    s = q.summarize(rows)
    assert s["tokens"] == 6 and s["mean_abs_dlogprob"] == pytest.approx(0.6 / 6)
    assert s["max_abs_dlogprob"] == pytest.approx(0.3)


def test_prompt_set_hash_changes_with_text_length_and_k_only():
    prompts = [{"id": "a", "text": "def "}, {"id": "b", "text": "class "}]
    h = q.prompt_set_hash(prompts, 24, 5)
    assert h == q.prompt_set_hash([{"id": "renamed", "text": "def "}, {"text": "class "}], 24, 5)
    assert h != q.prompt_set_hash(prompts[:1], 24, 5)
    assert h != q.prompt_set_hash(prompts, 16, 5)
    assert h != q.prompt_set_hash(prompts, 24, 3)
    assert h != q.prompt_set_hash(list(reversed(prompts)), 24, 5)


def quality(level, **kw):
    return dict({"level": level, "summary": {"tokens": 10, "top1": 1.0}, "reasons": ["r"], "worst": "prompt x",
                 "reference_of": "abc"}, **kw)


def test_gate_verdicts():
    assert q.gate(None) == ([], [])
    for level in ("same", "recorded", "numerics_changed"):
        rows, failures = q.gate(quality(level))
        assert rows[0]["ok"] and not failures, level
    rows, failures = q.gate(quality("degraded"))
    assert not rows[0]["ok"] and "prompt x" in failures[0] and q.RESET_HINT in failures[0]
    rows, failures = q.gate(quality("numerics_changed", model_changed=True))
    assert failures and q.ACCEPT_HINT in failures[0]
    assert q.gate(quality("numerics_changed", model_changed=True), accept=True)[1] == []
    assert q.gate(quality("numerics_changed", model_changed=True), task_decided=True)[1] == []
    # accepting never lets degraded through
    assert q.gate(quality("degraded", model_changed=True), accept=True)[1]
    assert q.gate(quality("incomparable", note="other set"))[1]
    assert q.gate({"level": "error", "error": "/generate answered 500"})[1]


@pytest.fixture(name="host")
def fixture_host(tmp_path):
    rd, fact = tmp_path / "releases", tmp_path / "facts.d" / "sglang_release.fact"
    etc = tmp_path / "etc"
    etc.mkdir()
    return rd, fact, etc


def _release(host, flags, reference=None):
    rd, fact, etc = host
    (etc / "sglang.service").write_text("[Service]\nExecStart=sglang %s\n" % flags)
    (etc / "sglang.env").write_text('SGLANG_DEPLOY_ML_ENV="gen1"\n')
    cand = ""
    if reference is not None:
        cand = str(etc / "candidate.json")
        with open(cand, "w") as fh:
            json.dump(reference, fh)
    return rs.record(str(rd), str(fact), str(etc / "sglang.service"), str(etc / "sglang.env"), "", {}, 5,
                     quality=cand)[1]


def test_reference_follows_its_release(host):
    rd, fact, _etc = host
    assert rs.current_quality(str(rd), str(fact)) == (None, None)
    first = _release(host, "--a", {"prompt_set": "p1", "who": "first"})
    assert rs.current_quality(str(rd), str(fact)) == ({"prompt_set": "p1", "who": "first"}, first)
    assert not os.path.exists(os.path.join(str(host[2]), "candidate.json"))  # moved into the release
    second = _release(host, "--b", {"prompt_set": "p1", "who": "second"})
    assert rs.current_quality(str(rd), str(fact))[0]["who"] == "second"
    # a restore makes the first release current again, with its own reference
    rs.mark_current(str(rd), str(fact), first)
    assert rs.current_quality(str(rd), str(fact)) == ({"prompt_set": "p1", "who": "first"}, first)
    # a release recorded without a reference keeps none; one recorded again keeps its own
    third = _release(host, "--c")
    assert rs.current_quality(str(rd), str(fact)) == (None, third)
    assert _release(host, "--b") == second
    assert rs.current_quality(str(rd), str(fact))[0]["who"] == "second"


def test_accept_length_gate_against_the_reference_and_a_floor():
    assert q.accept_length_gate({"spec_accept_length": None}, 0.9, 1.5) == ([], [])
    assert q.accept_length_gate({"spec_accept_length": 1.8, "reference_spec_accept_length": None}, 0.9) == ([], [])
    rows, failures = q.accept_length_gate({"spec_accept_length": 1.8, "reference_spec_accept_length": 1.9}, 0.9)
    assert rows[0]["ok"] and rows[0]["limit"] == 1.71 and not failures
    rows, failures = q.accept_length_gate({"spec_accept_length": 1.5, "reference_spec_accept_length": 1.9}, 0.9)
    assert not rows[0]["ok"] and "0.9 x the last-known-good 1.9" in failures[0]
    # the absolute floor applies without a reference
    assert q.accept_length_gate({"spec_accept_length": 1.2}, 0.9, 1.4)[1]


def test_the_production_floor_fails_a_draft_that_never_hits_on_a_first_deploy():
    import yaml
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    verify = yaml.safe_load((root / "inventories/production/group_vars/blackwell/verify.yml").read_text())
    flags = yaml.safe_load((root / "inventories/production/group_vars/blackwell/sglang.yml").read_text())
    floor, steps = verify["sglang_verify_spec_accept_min_length"], flags["sglang_server_args"]["speculative-num-steps"]
    # within what the draft settings can reach: more than a draft never accepted, less than all
    assert 1.0 < floor < 1.0 + steps
    ratio = verify.get("sglang_verify_spec_accept_min_ratio", 0.9)
    # no last-known-good release yet: the floor alone judges
    rows, failures = q.accept_length_gate({"spec_accept_length": 1.0}, ratio, floor)
    assert not rows[0]["ok"] and failures and "the floor" in failures[0]
    assert q.accept_length_gate({"spec_accept_length": 1.7}, ratio, floor)[1] == []


def test_gsm8k_floors_absolute_and_relative_to_the_reference():
    from ansible_collections.sglang.deploy.plugins.module_utils.verify.gsm8k import gsm8k_gate, standard_error
    assert standard_error(0.95, 200) == pytest.approx(0.0154, abs=1e-4)  # ~1.5 points at 200 questions
    assert gsm8k_gate(None, {}) == (None, [], None)
    row, failures, decided = gsm8k_gate({"score": 0.955, "examples": 200, "shots": 5}, {}, 0.95)
    assert row["ok"] and decided and not failures
    row, failures, decided = gsm8k_gate({"score": 0.93, "examples": 200, "shots": 5}, {}, 0.95)
    assert not decided and "under the floor 0.95" in failures[0]
    ref = {"gsm8k": {"score": 0.97, "examples": 200}}
    # within two standard errors of the difference (about 0.031 here): noise
    assert gsm8k_gate({"score": 0.95, "examples": 200, "shots": 5}, ref, None, 2.0)[2] is True
    row, failures, decided = gsm8k_gate({"score": 0.925, "examples": 200, "shots": 5}, ref, None, 2.0)
    assert decided is False and "last-known-good release scored 0.970" in failures[0]
    assert gsm8k_gate({"error": "no data"}, ref, 0.9)[1] == ["gsm8k: no data"]


def test_gsm8k_runs_the_evaluator_with_the_key_in_its_environment(tmp_path, monkeypatch):
    """run_gsm8k's plumbing: argv, the key through OPENAI_API_KEY (never argv), the score parsed.
    The evaluator here is a stand-in module of the same name that prints what SGLang's does;
    the real one runs against a real server in Molecule (molecule/default)."""
    from ansible_collections.sglang.deploy.plugins.module_utils.verify.gsm8k import run_gsm8k
    pkg = tmp_path / "fake" / "sglang" / "test"
    pkg.mkdir(parents=True)
    (tmp_path / "fake" / "sglang" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "run_eval.py").write_text(
        "import os, sys\n"
        "ok = os.environ['OPENAI_API_KEY'] == 's3cret' and 's3cret' not in ' '.join(sys.argv)\n"
        "ok = ok and sys.argv[sys.argv.index('--num-shots') + 1] == '5' and '--gsm8k-data-path' in sys.argv\n"
        "print('Score: 0.750' if ok else 'key or arguments wrong')\n")
    data = tmp_path / "gsm8k.jsonl"
    data.write_text("".join('{"question": "q%d", "answer": "#### %d"}\n' % (i, i) for i in range(7)))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fake"))
    import sys
    out = run_gsm8k({"python": sys.executable, "data_path": str(data), "examples": 200, "shots": 5},
                    "http://127.0.0.1:30000", "s3cret")
    assert out["score"] == 0.75 and out["examples"] == 2 and out["shots"] == 5
    assert run_gsm8k({"python": sys.executable, "data_path": str(tmp_path / "missing")}, "u", "")["error"].startswith(
        "the gsm8k data file")
    assert "sglang_verify_bench_python" in run_gsm8k({"data_path": str(data)}, "u", "")["error"]


def test_registry_verdicts_of_quality_gsm8k_and_spec_accept_length():
    """The quality, gsm8k and spec_accept_length entries of the registry (plugins/module_utils/
    verify/registry.py): one verdict shape; a new model revision that changed the numerics is
    decided by a gsm8k verdict that passed, and fails without one."""
    from ansible_collections.sglang.deploy.plugins.module_utils.quality import gates as qg
    from ansible_collections.sglang.deploy.plugins.module_utils.verify import registry
    changed = {"level": "numerics_changed", "model_changed": True, "reasons": ["mean |d logprob| 0.02"],
               "summary": {"tokens": 10, "top1": 0.99}, "spec_accept_length": 1.2,
               "reference_spec_accept_length": 1.9, "reference_task": {"gsm8k": {"score": 0.96, "examples": 200}}}
    s = registry.settings({"spec_accept_length": {"spec_accept_min_ratio": 0.9}})
    ctx = {"result": {"quality": changed}, "host": "h1", "mode": "gate", "baselines": {}, "reset_hint": "R"}
    by = dict((v["gate"], v) for v in registry.evaluate(ctx, s))
    assert by["quality"]["level"] == "failed" and "task-accuracy check" in by["quality"]["reasons"][0]
    assert by["spec_accept_length"]["level"] == "failed" and "1.71" in by["spec_accept_length"]["reasons"][0]
    assert "gsm8k" not in by  # not run: no verdict
    ctx["result"]["gsm8k"] = {"score": 0.955, "examples": 200, "shots": 5}
    by = dict((v["gate"], v) for v in registry.evaluate(ctx, s))
    assert by["gsm8k"]["level"] == "passed" and by["quality"]["level"] == "numerics_changed"
    assert by["quality"]["reasons"] == [] and "task-accuracy check decided" in by["quality"]["figures"][0]["note"]
    # the operator accepts it for this host only
    s["quality"]["quality_accept"] = ["h1"]
    ctx["result"].pop("gsm8k")
    assert qg.QUALITY.evaluate(dict(ctx, verdicts={}), s["quality"])["level"] == "numerics_changed"
    assert qg.QUALITY.evaluate(dict(ctx, host="h2", verdicts={}), s["quality"])["level"] == "failed"
    # a degraded reference comparison is `degraded`, not merely failed
    bad = dict(changed, level="degraded", reasons=["top-1 agreement 0.5 beyond the tolerance 0.95"])
    assert qg.QUALITY.evaluate({"result": {"quality": bad}, "host": "h1", "verdicts": {}},
                               {"quality_accept": False})["level"] == "degraded"
