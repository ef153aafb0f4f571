# -*- coding: utf-8 -*-
# Controller side only (the sglang_sweep_record module): the outcome of one sweep candidate,
# from the plain results the play registered for it. The figures' statistics are
# plugins/module_utils/verify/stats.py (robust_stats: median and MAD); the output checks are the
# garbage detector and quoting of plugins/module_utils/verify/output.py.
"""Classify one candidate: rejected, crashed, hung, wrong, degraded or working.

Inputs, each optional, judged in this order (the first that fails decides):

* ``rules``: the offline findings (``sglang_flags_check`` / ``sglang_flags_inputs``); any with
  severity ``error`` (or a plain string) -> **rejected** naming the rule;
* ``parser``: SGLang's own parser on the host: the verdict of roles/sglang_flags'
  host_validate (``sglang_flags_verdict``: ``ok``, ``phase``, ``errors``) or a command result
  (``rc``, ``stderr``); not ok / rc != 0 -> **rejected** with SGLang's message;
* ``wait``: the result of sglang_server_wait (roles/sglang_server; the failed task's result, or
  registered with ``failed_when: false``). Its ``outcome`` decides: ``crashed`` (the unit exited
  or entered auto-restart) -> **crashed**, with the last journal lines and the tail of the last
  Python traceback; ``hung`` or ``timeout`` (no generation within its timeout) -> **hung**. A
  result without ``outcome`` (a task timeout, another task of the start) is read by its message:
  "exited while starting" -> **crashed**, "did not generate within" or a task timeout -> **hung**,
  anything else -> **crashed**;
* ``probe``: the registered result of sglang_probe (roles/sglang_verify): ``result`` and
  ``failures``. The module itself failed, or health failed after the start -> **crashed** (the
  server stopped answering); a probe answered wrong or garbage (quoted) -> **wrong**; requests
  that failed under load -> **crashed** when ``journal`` shows a traceback, else **wrong**;
  the quality check (``result.quality``, plugins/module_utils/quality/compare.py) against the canary's
  last-known-good reference found its answers ``degraded``, or its check at load found answers
  decoded in a batch that differ from the same prompts alone -> **degraded** (it starts and
  passes the probes, but diverges beyond the tolerance; never ranked, never a winner);
  no failure -> **working** with its figures.
"""

import re

from ansible_collections.sglang.deploy.plugins.module_utils.verify.stats import MAD_TO_SIGMA, robust_stats
from ansible_collections.sglang.deploy.plugins.module_utils.verify.output import detect_garbage, quote

OUTCOMES = ("working", "degraded", "wrong", "hung", "crashed", "rejected")
JOURNAL_TAIL = 20
TRACEBACK_TAIL = 12
# journalctl -o short-iso: "2026-03-01T10:00:00+0000 host python3[1234]: text"
_JOURNAL_PREFIX = re.compile(r"^\d{4}-\d\d-\d\dT\S+\s+\S+\s+[^\s:]+(?:\[\d+\])?:\s?")
_EXCEPTION = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Fault))(?::\s*(.*))?$")
_HUNG = ("did not generate within", "expected time frame", "timed out", "timeout")


def _text(line):
    return _JOURNAL_PREFIX.sub("", str(line)).rstrip()


def journal_summary(lines, tail=JOURNAL_TAIL):
    """``{journal_tail, traceback, error}``: the last ``tail`` lines, the last Python traceback
    (its last TRACEBACK_TAIL lines, timestamps stripped) and the last exception line."""
    lines = [str(x) for x in (lines or [])]
    texts = [_text(x) for x in lines]
    start = max((i for i, t in enumerate(texts) if "Traceback (most recent call last)" in t), default=None)
    error = next((t.strip() for t in reversed(texts) if _EXCEPTION.match(t)), None)
    traceback = []
    if start is not None:
        end = next((i for i in range(start + 1, len(texts)) if _EXCEPTION.match(texts[i])), len(texts) - 1)
        traceback = texts[start:end + 1][-TRACEBACK_TAIL:]
    return {"journal_tail": lines[-tail:], "traceback": traceback, "error": error}


def _result(outcome, stage, reason, details=None, figures=None):
    return {"outcome": outcome, "stage": stage, "reason": reason, "details": details or {}, "figures": figures}


def _rules(findings):
    errors = [f for f in findings or [] if not isinstance(f, dict) or f.get("severity", "error") == "error"]
    if not errors:
        return None
    first = errors[0]
    if not isinstance(first, dict):
        return _result("rejected", "rules", str(first), {"violations": [str(f) for f in errors]})
    flag = first.get("flag")
    reason = "[%s] %s%s" % (first.get("rule"), ("--%s: " % flag) if flag and flag != "-" else "",
                            " ".join(str(first.get("message") or "").split()))
    return _result("rejected", "rules", reason, {
        "rule": first.get("rule"), "violations": errors,
        "fix": first.get("fix"), "source": first.get("source")})


def _parser(parser):
    if not parser:
        return None
    rc = parser.get("rc")
    if parser.get("ok", rc in (None, 0)):
        return None
    errors = parser.get("errors") or []
    stderr = str(parser.get("stderr") or parser.get("msg") or "")
    tail = [x for x in stderr.splitlines() if x.strip()][-15:]
    if errors:
        first = errors[0]
        reason = "SGLang refuses the flags (%s): [%s] %s" % (parser.get("phase") or "parse", first.get("rule"),
                                                           " ".join(str(first.get("message") or "").split()))
        rule = first.get("rule")
    else:
        reason = "SGLang refuses the flags (rc %s): %s" % (rc, tail[-1] if tail else "no output")
        rule = "parser"
    return _result("rejected", "parser", reason, {"rule": rule, "errors": errors, "rc": rc, "stderr_tail": tail})


def _wait(wait):
    # registered with failed_when: false, a failure still has its journal and no elapsed time
    failed = wait and (wait.get("failed") or wait.get("timedout") or wait.get("journal")
                       or (wait.get("msg") and "elapsed" not in wait))
    if not failed:
        return None
    msg = str(wait.get("msg") or "")
    journal = journal_summary(wait.get("journal") or wait.get("stdout_lines") or [])
    details = dict(journal, message=msg)
    outcome = wait.get("outcome")
    if outcome == "crashed" or (outcome is None and ("exited while starting" in msg or "is not loaded" in msg)):
        return _result("crashed", "start", "exited while starting: %s" % (journal["error"] or msg), details)
    if outcome in ("hung", "timeout") or (outcome is None and (wait.get("timedout")
                                                               or any(word in msg.lower() for word in _HUNG))):
        return _result("hung", "start", "no generation within the timeout: %s" % msg.split(";")[0], details)
    return _result("crashed", "start", "the start failed: %s" % (journal["error"] or msg), details)


def _wrong_probe(result):
    for rec in result.get("probes") or []:
        if not rec.get("ok", True):
            problems = rec.get("problems") or []
            kind = "garbage" if any(str(p).startswith("garbage") for p in problems) else "wrong answer"
            return _result("wrong", "probe", "%s: probe %s answered %s (%s)" % (
                kind, quote(rec.get("name")), quote(rec.get("output")), "; ".join(problems)), {
                "probe": rec.get("name"), "prompt": rec.get("prompt"), "expect": rec.get("expect"),
                "output": quote(rec.get("output"), 500), "problems": problems, "kind": kind})
    sample = (result.get("single_stream") or {}).get("sample_output")
    garbage = detect_garbage(sample) if sample is not None else None
    if garbage:
        return _result("wrong", "probe", "garbage: the benchmark's output %s (%s)" % (quote(sample), garbage), {
            "probe": "single_stream", "output": quote(sample, 500), "problems": [garbage], "kind": "garbage"})
    return None


def _probe(probe, journal):
    if not probe:
        return _result("crashed", "measure", "no measurement was recorded for a started server")
    result = probe.get("result") or {}
    failures = [str(f) for f in probe.get("failures") or []]
    summary = journal_summary(journal)
    if probe.get("failed") and not result:
        return _result("crashed", "measure", "the measurement failed: %s" % probe.get("msg"), summary)
    health = result.get("health") or {}
    if health and not health.get("ok"):
        return _result("crashed", "measure", "stopped answering after the start: %s" % health.get("error"),
                        dict(summary, failures=failures))
    wrong = _wrong_probe(result)
    if wrong:
        wrong["details"]["failures"] = failures
        return wrong
    # before the other failures: the measurement's gate lists the quality gate's verdict among them
    quality = result.get("quality") or {}
    if quality.get("level") == "degraded":
        return _result("degraded", "quality", "answers diverge from the last-known-good reference: %s; %s" % (
            "; ".join(quality.get("reasons") or []), quality.get("worst") or ""), {
            "summary": quality.get("summary"), "worst": quality.get("worst"), "reference_of": quality.get("reference_of"),
            "failures": failures}, figures(result))
    load = quality.get("load") or {}
    if load.get("level") == "degraded":
        return _result("degraded", "quality", "answers at load diverge from the same prompts alone: %s" % (
            "; ".join(load.get("reasons") or []),), {
            "load": dict((k, load.get(k)) for k in ("sizes", "detect_probability", "fault_rate")),
            "per_size": load.get("per_size"), "failures": failures}, figures(result))
    if failures:
        outcome = "crashed" if summary["traceback"] else "wrong"
        return _result(outcome, "measure", "requests failed: %s" % failures[0], dict(summary, failures=failures))
    return None


def _stats(values):
    stats = robust_stats(values)
    if stats:
        stats["mad"] = round(stats["sigma"] / MAD_TO_SIGMA, 3)
    return stats


def figures(result):
    """The figures of a working candidate from sglang_probe's result."""
    single = result.get("single_stream") or {}
    server = result.get("server") or {}
    runs = single.get("decode_tps_runs") or ([single["decode_tps"]] if single.get("decode_tps") is not None else [])
    sweep = result.get("sweep") or {}
    return {
        "decode_tps": _stats(runs),
        "decode_tps_runs": runs,
        "ttft_ms": single.get("ttft_ms"),
        "ttft_ms_range": _stats(single.get("ttft_ms_runs") or []),
        "itl_ms": {"p50": single.get("itl_ms_p50"), "p90": single.get("itl_ms_p90"), "p99": single.get("itl_ms_p99")},
        "e2e_tps": single.get("e2e_tps"),
        "speculative_algorithm": server.get("speculative_algorithm"),
        "spec_accept_length": server.get("spec_accept_length"),
        "throughput": [{"concurrency": lv.get("concurrency"), "output_throughput": lv.get("output_throughput"),
                        "median_ttft_ms": lv.get("median_ttft_ms"), "p99_ttft_ms": lv.get("p99_ttft_ms"),
                        "median_itl_ms": lv.get("median_itl_ms"), "errors": lv.get("errors")}
                       for lv in sweep.get("levels") or []],
        "throughput_tool": sweep.get("tool"),
        "version": server.get("version"),
    }


def classify(rules=None, parser=None, wait=None, probe=None, journal=None):
    """``{outcome, stage, reason, details, figures}`` of one candidate (see the module doc)."""
    for verdict in (_rules(rules), _parser(parser), _wait(wait), _probe(probe, journal)):
        if verdict:
            return verdict
    fig = figures(probe.get("result") or {})
    tps = fig["decode_tps"]
    reason = ("%s tok/s single stream (min %s, max %s, %d runs)" % (tps["median"], tps["min"], tps["max"], tps["n"])
              if tps else "answers correctly (no single-stream figure measured)")
    return _result("working", "measure", reason, {}, fig)
