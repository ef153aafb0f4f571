# -*- coding: utf-8 -*-
# The task-accuracy check of the sglang_probe module, on the host: gsm8k with SGLang's own
# evaluator from the host's ML environment (sglang 0.5.23: `python -m sglang.test.run_eval
# --eval-name gsm8k --num-examples N --num-shots K --base-url URL --gsm8k-data-path FILE`, which
# prints `Score: 0.955`), against a data file the operator provides (JSON lines with `question`
# and `answer`, the answer ending in `#### <number>`, as gsm8k's own files). The API key goes
# through the environment (OPENAI_API_KEY, which the evaluator's client sends), never argv.
"""gsm8k accuracy of a running server, and its floors."""

import math
import os
import re
import subprocess
import tempfile
import time

from ansible_collections.sglang.deploy.plugins.module_utils.verify.verdict import Gate, limit_value, verdict

_SCORE = re.compile(r"^Score: ([0-9.]+)\s*$", re.MULTILINE)


def run_gsm8k(g, base_url, api_key):
    """{score, examples, shots, seconds} or {error, output_tail}. ``g``: python, data_path,
    examples, shots, max_tokens, timeout."""
    data = g.get("data_path") or ""
    if not g.get("python"):
        return {"error": "no python to run the gsm8k evaluator with (sglang_verify_bench_python)"}
    if not os.path.isfile(data):
        return {"error": "the gsm8k data file %s is not on the host (sglang_verify_gsm8k_data)" % data}
    with open(data, encoding="utf-8") as handle:
        lines = sum(1 for line in handle if line.strip())
    shots, examples = int(g.get("shots") or 0), int(g.get("examples") or 200)
    argv = [g["python"], "-m", "sglang.test.run_eval", "--eval-name", "gsm8k",
            "--num-examples", str(examples), "--num-shots", str(shots), "--base-url", base_url,
            "--gsm8k-data-path", data, "--max-tokens", str(int(g.get("max_tokens") or 1024))]
    env = dict(os.environ, OPENAI_API_KEY=api_key or "EMPTY")
    t0 = time.time()
    work = tempfile.mkdtemp(prefix="sglang-gsm8k-")
    try:
        proc = subprocess.run(argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=int(g.get("timeout") or 1800), check=False)
        text = proc.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return {"error": "gsm8k did not finish within %s s" % g.get("timeout")}
    finally:
        for name in os.listdir(work):
            os.unlink(os.path.join(work, name))
        os.rmdir(work)
    match = _SCORE.search(text)
    if proc.returncode != 0 or not match:
        return {"error": "sglang.test.run_eval exited %s without a score" % proc.returncode,
                "output_tail": text.splitlines()[-15:]}
    return {"score": float(match.group(1)), "examples": min(examples, max(lines - shots, 0)), "shots": shots,
            "seconds": round(time.time() - t0, 1)}


def standard_error(score, n):
    """Binomial standard error of an accuracy measured on n questions."""
    return math.sqrt(max(score * (1.0 - score), 0.0) / n) if n else 0.0


def gsm8k_gate(result, reference, min_score=None, max_drop_se=2.0):
    """(row, failures, decided): the absolute floor, and the floor relative to the reference's
    score: a drop beyond ``max_drop_se`` standard errors of the difference of two such runs.
    ``decided`` is True when the check ran and passed (it may then decide a changed model)."""
    if not result:
        return None, [], None
    if result.get("error"):
        return ({"gate": "gsm8k", "value": None, "limit": min_score, "unit": "", "ok": False,
                 "note": result["error"]}, ["gsm8k: %s" % result["error"]], False)
    score, n = result["score"], result.get("examples") or 0
    failures, notes = [], ["%s questions, %s-shot" % (n, result.get("shots"))]
    if min_score is not None and score < float(min_score):
        failures.append("gsm8k accuracy %.3f on %d questions is under the floor %s" % (score, n, min_score))
    ref = (reference or {}).get("gsm8k") or {}
    if ref.get("score") is not None and max_drop_se is not None:
        se = math.sqrt(standard_error(ref["score"], ref.get("examples") or n) ** 2 + standard_error(score, n) ** 2)
        floor = ref["score"] - float(max_drop_se) * se
        notes.append("last-known-good %.3f, floor %.3f (%s standard errors, %.3f)" % (ref["score"], floor,
                                                                                      max_drop_se, se))
        if score < floor:
            failures.append("gsm8k accuracy %.3f dropped below %.3f: the last-known-good release scored %.3f on %d "
                            "questions, and a drop beyond %s standard errors (%.3f) is not noise" % (
                                score, floor, ref["score"], ref.get("examples") or n, max_drop_se, se))
    row = {"gate": "gsm8k accuracy", "value": score, "limit": min_score, "unit": "", "ok": not failures,
           "note": "; ".join(notes)}
    return row, failures, not failures


def evaluate(ctx, settings):
    """The registry's verdict of the task-accuracy gate (registry.py)."""
    result = ctx["result"]
    row, failures, _decided = gsm8k_gate(result.get("gsm8k"), (result.get("quality") or {}).get("reference_task"),
                                         limit_value(settings["gsm8k_min_score"]),
                                         limit_value(settings["gsm8k_max_drop_se"]))
    if row is None:
        return None
    return verdict(GATE.name, "failed" if failures else "passed", failures, [row],
                   failures[0] if failures else "gsm8k %s (%s)" % (row["value"], row["note"]))


GATE = Gate(
    name="gsm8k",
    settings={"gsm8k_min_score": None, "gsm8k_max_drop_se": None},
    needs=("gsm8k",),
    evaluate=evaluate,
    test="tests/unit/test_sglang_quality.py",
    options=("sglang_verify_gsm8k_data", "sglang_verify_gsm8k_examples", "sglang_verify_gsm8k_shots"),
)
