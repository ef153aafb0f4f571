# -*- coding: utf-8 -*-
# Pure logic of the sglang_verify role: SSE parsing, per-token latency math, percentiles,
# the garbage detector, probe matching, drift comparison, gate evaluation and report rendering.
#
# Standard library only: the probe module that imports it runs with the GPU host's
# /usr/bin/python3, and the gate/report modules with the controller's Python.
# Importable by pytest: tests put roles/sglang_verify/module_utils on sys.path.
"""Pure, side-effect-free helpers of the sglang_verify role."""

from __future__ import absolute_import, division, print_function

import hashlib
import json
import math
import re

__metaclass__ = type

SECRET_FLAGS = ("api-key", "admin-api-key", "ssl-keyfile-password", "watermark-config", "watermark-key")

# Flag name (as written on the command line, no dashes) -> /server_info field, where the
# field is not simply the flag with dashes turned into underscores (sglang 0.5.23).
FLAG_FIELD_ALIASES = {
    "tp": "tp_size",
    "tensor-parallel-size": "tp_size",
    "dp": "dp_size",
    "data-parallel-size": "dp_size",
    "pp": "pp_size",
    "pipeline-parallel-size": "pp_size",
    "ep": "ep_size",
    "expert-parallel-size": "ep_size",
    "fp4-gemm-backend": "fp4_gemm_runner_backend",
    "fp8-gemm-backend": "fp8_gemm_runner_backend",
}

# Values SGLang rewrites on purpose at resolution: (field, asked) -> resolved.
RESOLVED_ALIASES = {
    ("speculative_algorithm", "NEXTN"): "EAGLE",
}


# --------------------------------------------------------------------------------------------
# Server-sent events
# --------------------------------------------------------------------------------------------
class SSEParser:
    """Incremental parser of a text/event-stream, fed one line at a time.

    Follows the WHATWG rules that matter here: `data:` fields (with or without the space),
    several `data:` lines joined by a newline, an empty line ends an event, lines starting
    with `:` are comments, other fields are ignored. SGLang sends one `data:` line per event
    followed by an empty line; a line that arrives without the blank separator is still
    dispatched when the next `data:` line or the end of the stream shows up.
    """

    def __init__(self):
        self._data = []

    def feed(self, line):
        """Feed one line (bytes or str, with or without its newline). Returns a list of
        payload strings completed by this line (usually zero or one)."""
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        line = line.rstrip("\r\n")
        out = []
        if line == "":
            if self._data:
                out.append("\n".join(self._data))
                self._data = []
            return out
        if line.startswith(":"):
            return out
        if ":" in line:
            field, value = line.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            field, value = line, ""
        if field != "data":
            return out
        # A new data line while a complete JSON payload is pending: the server left out the
        # blank separator. Dispatch the pending one first.
        if self._data and _is_complete_payload("\n".join(self._data)):
            out.append("\n".join(self._data))
            self._data = []
        self._data.append(value)
        return out

    def close(self):
        """End of stream: return what is pending (a payload not followed by a blank line)."""
        out = []
        if self._data:
            out.append("\n".join(self._data))
            self._data = []
        return out


def _is_complete_payload(text):
    if text.strip() == "[DONE]":
        return True
    try:
        json.loads(text)
        return True
    except ValueError:
        return False


class StreamAccumulator:
    """Builds one chat-completion stream's figures from (arrival time, payload) pairs.

    Times are seconds on any monotonic clock; `t0` is when the request was sent.
    Token counts per chunk come from the server when it sends usage on every chunk
    (`stream_options.continuous_usage_stats`, which SGLang honours); then a chunk that carries
    several tokens (speculative decoding) counts as several tokens, and its gap is split
    evenly between them for the inter-token latency.
    """

    def __init__(self, t0):
        self.t0 = t0
        self.content = []
        self.reasoning = []
        self.chunk_times = []  # arrival time of each chunk that carried generated text
        self.chunk_tokens = []  # tokens in that chunk, from cumulative usage (None if unknown)
        self.usage = None
        self.finish_reason = None
        self.done = False
        self.error = None
        self.events = 0
        self._last_completion_tokens = 0

    def add(self, t, payload):
        """Add one SSE payload (the text after `data:`) that arrived at time t."""
        self.events += 1
        if payload.strip() == "[DONE]":
            self.done = True
            return
        try:
            ev = json.loads(payload)
        except ValueError:
            self.error = "malformed event: %s" % quote(payload, 120)
            return
        if not isinstance(ev, dict):
            return
        if ev.get("error"):
            err = ev["error"]
            self.error = "server error in stream: %s" % quote(
                err.get("message") if isinstance(err, dict) else err, 200
            )
            return
        usage = ev.get("usage")
        cum = None
        if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
            self.usage = usage
            cum = int(usage["completion_tokens"])
        text_here = ""
        for choice in ev.get("choices") or []:
            delta = choice.get("delta") or {}
            piece = delta.get("content") or ""
            rpiece = delta.get("reasoning_content") or ""
            if piece:
                self.content.append(piece)
            if rpiece:
                self.reasoning.append(rpiece)
            text_here += piece + rpiece
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        if text_here:
            self.chunk_times.append(t)
            if cum is not None:
                self.chunk_tokens.append(max(cum - self._last_completion_tokens, 1))
            else:
                self.chunk_tokens.append(None)
        if cum is not None:
            self._last_completion_tokens = cum

    @property
    def text(self):
        return "".join(self.content)

    @property
    def reasoning_text(self):
        return "".join(self.reasoning)

    def finish(self, t_end, error=None):
        """Close the stream at t_end (when the connection ended or failed) and return figures."""
        if error and not self.error:
            self.error = error
        if not self.done and not self.error:
            self.error = "stream ended before [DONE] after %d chunk(s)" % len(self.chunk_times)
        return stream_metrics(self, t_end)


def stream_metrics(acc, t_end):
    """Figures of one stream. Per-token ITL; decode rate measured after the first token."""
    n_chunks = len(acc.chunk_times)
    server_tokens = acc.usage.get("completion_tokens") if acc.usage else None
    known = n_chunks > 0 and all(k is not None for k in acc.chunk_tokens)
    # A `stop` finish adds the end token to the server's count; it is never sent as text.
    slack = 1 if acc.finish_reason == "stop" else 0
    if known:
        tokens = list(acc.chunk_tokens)
        method = "server-usage-per-chunk"
    elif n_chunks > 1 and server_tokens and server_tokens - slack > n_chunks:
        # No per-chunk usage, but the server generated more tokens than chunks arrived:
        # chunks carry several tokens. Spread the decode tokens evenly over the chunks.
        per = (server_tokens - slack - 1.0) / (n_chunks - 1)
        tokens = [1.0] + [per] * (n_chunks - 1)
        method = "uniform-estimate"
    else:
        tokens = [1] * n_chunks
        method = "one-per-chunk"
    stream_tokens = sum(tokens) if tokens else 0
    itl = []
    for i in range(1, n_chunks):
        gap = acc.chunk_times[i] - acc.chunk_times[i - 1]
        k = tokens[i]
        whole = int(round(k))
        whole = max(whole, 1)
        itl.extend([gap / k] * whole)
    ttft = (acc.chunk_times[0] - acc.t0) if n_chunks else None
    decode_time = (acc.chunk_times[-1] - acc.chunk_times[0]) if n_chunks > 1 else None
    decode_tokens = stream_tokens - tokens[0] if n_chunks else 0
    decode_tps = (decode_tokens / decode_time) if decode_time and decode_time > 0 else None
    e2e = t_end - acc.t0
    # cross-check: the server's count against what the stream showed.
    mismatch = None
    if server_tokens is not None and n_chunks:
        diff = server_tokens - int(round(stream_tokens))
        if diff < 0 or diff > slack:
            mismatch = diff
    return {
        "ok": acc.error is None,
        "error": acc.error,
        "text": acc.text,
        "reasoning_text": acc.reasoning_text,
        "finish_reason": acc.finish_reason,
        "chunks": n_chunks,
        "completion_tokens": server_tokens,
        "stream_tokens": int(round(stream_tokens)),
        "token_count_method": method,
        "token_count_mismatch": mismatch,
        "ttft_s": ttft,
        "decode_time_s": decode_time,
        "decode_tokens": int(round(decode_tokens)) if n_chunks else 0,
        "decode_tps": decode_tps,
        "e2e_s": e2e,
        "itl_s": itl,
    }


def replay_recorded(records):
    """Replay a recorded stream: records are dicts {"t": seconds since send, "line": text} or
    {"t": .., "eof": true} / {"t": .., "error": "..."}. Returns stream_metrics()."""
    parser = SSEParser()
    acc = StreamAccumulator(0.0)
    t_end = 0.0
    error = None
    for rec in records:
        t_end = rec["t"]
        if rec.get("error"):
            error = rec["error"]
            break
        if rec.get("eof"):
            break
        for payload in parser.feed(rec["line"]):
            acc.add(rec["t"], payload)
    if error is None:
        # a clean end of stream: a last event without its blank line still counts; after a
        # connection error a partial line is dropped (as the live client does)
        for payload in parser.close():
            acc.add(t_end, payload)
    return acc.finish(t_end, error=error)


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------
def percentile(values, q):
    """Percentile with linear interpolation between closest ranks (numpy's default)."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    if len(vals) == 1:
        return float(vals[0])
    pos = (len(vals) - 1) * (q / 100.0)
    lo = int(math.floor(pos))
    hi = int(math.ceil(pos))
    if lo == hi:
        return float(vals[lo])
    return vals[lo] + (vals[hi] - vals[lo]) * (pos - lo)


def median(values):
    return percentile(values, 50)


def summarize_single_stream(runs):
    """Aggregate measured single-stream runs (warm-ups already excluded)."""
    good = [r for r in runs if r["ok"]]
    itl = []
    for r in good:
        itl.extend(r["itl_s"])
    ms = 1000.0

    def _ms(v):
        return None if v is None else round(v * ms, 3)

    tps = [r["decode_tps"] for r in good if r["decode_tps"]]
    return {
        "runs": len(runs),
        "errors": len(runs) - len(good),
        "error_messages": [r["error"] for r in runs if not r["ok"]][:5],
        "decode_tps": _round(median(tps), 2),
        "decode_tps_runs": [_round(v, 2) for v in tps],
        "ttft_ms": _ms(median([r["ttft_s"] for r in good])),
        "ttft_ms_runs": [_ms(r["ttft_s"]) for r in good],
        "itl_ms_p50": _ms(percentile(itl, 50)),
        "itl_ms_p90": _ms(percentile(itl, 90)),
        "itl_ms_p99": _ms(percentile(itl, 99)),
        "itl_samples": len(itl),
        "e2e_tps": _round(median([r["completion_tokens"] / r["e2e_s"] for r in good
                                  if r["completion_tokens"] and r["e2e_s"]]), 2),
        "completion_tokens": [r["completion_tokens"] for r in good],
        "stream_tokens": [r["stream_tokens"] for r in good],
        "token_count_method": sorted(set(r["token_count_method"] for r in good)),
        "token_count_mismatches": [r["token_count_mismatch"] for r in good
                                   if r["token_count_mismatch"] is not None],
    }


def _round(v, nd):
    return None if v is None else round(v, nd)


# --------------------------------------------------------------------------------------------
# Output checks
# --------------------------------------------------------------------------------------------
def quote(text, limit=160):
    """A bounded, unambiguous rendering of model output for messages."""
    if text is None:
        return "<none>"
    s = str(text)
    if len(s) > limit:
        s = s[:limit] + "...(%d chars)" % len(s)
    return json.dumps(s, ensure_ascii=False)


def detect_garbage(text, min_run=8, dominance=0.5):
    """Return a reason string when `text` looks like broken decoding, else None.

    - empty (or whitespace-only) output;
    - U+FFFD replacement characters (invalid bytes decoded);
    - one short unit (1-4 characters with something other than whitespace, e.g. "!" or
      "ab") repeated at least `min_run` times in a row and covering at least `dominance`
      of the output, e.g. "!!!!!!!!!!" or "the the the the ...";
    - one word repeated at least `min_run` times in a row, making up `dominance` of the words.
    """
    if text is None or not text.strip():
        return "empty output"
    if u"\ufffd" in text:
        return "replacement character U+FFFD in output"
    stripped = text.strip()
    total = len(stripped)
    best = None
    for width in (1, 2, 3, 4):
        pat = re.compile(r"((.{%d}))\2{%d,}" % (width, min_run - 1), re.S)
        for m in pat.finditer(stripped):
            unit = m.group(2)
            if not unit.strip():
                continue
            span = len(m.group(0))
            if best is None or span > best[1]:
                best = (unit, span)
    if best and best[1] >= dominance * total:
        return "the unit %s repeated %d times (%d%% of the output)" % (
            quote(best[0]), best[1] // len(best[0]), 100 * best[1] // total)
    words = stripped.split()
    run, best_run, best_word = 1, 1, None
    for i in range(1, len(words)):
        run = run + 1 if words[i] == words[i - 1] else 1
        if run > best_run:
            best_run, best_word = run, words[i]
    if best_run >= min_run and best_run >= dominance * len(words):
        return "the word %s repeated %d times in a row (%d of %d words)" % (
            quote(best_word), best_run, best_run, len(words))
    return None


def match_answer(output, expect, match="contains"):
    """Does the model's answer satisfy the probe? exact compares stripped text,
    contains is case-insensitive, regex uses re.search."""
    if output is None:
        return False
    if match == "exact":
        return output.strip() == str(expect).strip()
    if match == "contains":
        return str(expect).lower() in output.lower()
    if match == "regex":
        return re.search(str(expect), output) is not None
    raise ValueError("unknown match mode %r" % match)


# --------------------------------------------------------------------------------------------
# Drift: inventory flags against /server_info
# --------------------------------------------------------------------------------------------
def parse_launch_command(cmd):
    """`launch_command` is the server's argv joined by spaces (no quoting). Returns
    {flag-without-dashes: value}; a bare flag maps to True; a value with spaces (JSON) is
    re-joined. The program part before the first --flag is dropped."""
    if not cmd:
        return {}
    flags = {}
    current = None
    for tok in cmd.split():
        if tok.startswith("--") and len(tok) > 2:
            name = tok[2:]
            if "=" in name:
                name, val = name.split("=", 1)
                flags[name] = val
                current = None
                continue
            flags[name] = True
            current = name
        elif current is not None:
            prev = flags[current]
            flags[current] = tok if prev is True else "%s %s" % (prev, tok)
    return flags


def redact_launch_command(cmd):
    if not cmd:
        return cmd
    out = []
    redact = False
    for tok in cmd.split():
        if redact:
            out.append("<redacted>")
            redact = False
            continue
        name = tok[2:].split("=", 1)[0] if tok.startswith("--") else None
        if name in SECRET_FLAGS:
            if "=" in tok:
                out.append("--%s=<redacted>" % name)
            else:
                out.append(tok)
                redact = True
            continue
        out.append(tok)
    return " ".join(out)


def _norm_value(v):
    """Normalise a flag value for comparison: True = bare flag; lists joined by spaces;
    dicts and JSON text compared as canonical JSON; numbers compared numerically."""
    if v is True:
        return True
    if isinstance(v, (list, tuple)):
        return " ".join(str(_norm_value(x)) for x in v)
    if isinstance(v, dict):
        return json.dumps(v, sort_keys=True, separators=(",", ":"))
    s = str(v).strip()
    if s[:1] in ("{", "["):
        try:
            return json.dumps(json.loads(s), sort_keys=True, separators=(",", ":"))
        except ValueError:
            pass
    try:
        f = float(s)
        if f == int(f) and "e" not in s.lower():
            return str(int(f))
        return repr(f)
    except (ValueError, OverflowError):
        return s


def field_for_flag(flag):
    return FLAG_FIELD_ALIASES.get(flag, flag.replace("-", "_"))


def compare_args(expected, server_info, ignore=()):
    """Compare the inventory's flags with the running server.

    The flags the server was launched with (`launch_command`) are compared first: a value
    that differs or a flag that is missing is drift. The resolved value (`/server_info`
    field) is looked at too: when SGLang replaced what was asked for, that is listed as a
    warning (`resolved`), since SGLang does this on purpose for some flags.
    Returns a dict: ok, mismatches[], extra[], resolved[], unverifiable[], checked.
    """
    expected = expected or {}
    ignore = set(ignore or ())
    launch = parse_launch_command(server_info.get("launch_command"))
    have_launch = bool(launch)
    mismatches, resolved, unverifiable = [], [], []
    checked = 0
    for flag in sorted(expected):
        if flag in ignore:
            continue
        want = expected[flag]
        if want is False or want is None:
            if have_launch and flag in launch:
                mismatches.append({"flag": flag, "expected": "(absent)",
                                   "actual": _display(flag, launch[flag])})
            continue
        checked += 1
        field = field_for_flag(flag)
        actual_field = server_info.get(field, _MISSING)
        if have_launch:
            if flag not in launch:
                mismatches.append({"flag": flag, "expected": _display(flag, want), "actual": "(not on its command line)"})
                continue
            if _norm_value(launch[flag]) != _norm_value(want):
                mismatches.append({"flag": flag, "expected": _display(flag, want),
                                   "actual": _display(flag, launch[flag])})
                continue
            if actual_field is not _MISSING and flag not in SECRET_FLAGS:
                if not _resolved_matches(field, want, actual_field):
                    resolved.append({"flag": flag, "asked": _display(flag, want),
                                     "resolved": _display(flag, actual_field)})
        else:
            if actual_field is _MISSING:
                unverifiable.append(flag)
                continue
            if flag in SECRET_FLAGS:
                continue
            if not _resolved_matches(field, want, actual_field):
                mismatches.append({"flag": flag, "expected": _display(flag, want),
                                   "actual": _display(flag, actual_field)})
    extra = []
    if have_launch:
        for flag in sorted(launch):
            if flag in ignore:
                continue
            if flag not in expected:
                extra.append({"flag": flag, "value": _display(flag, launch[flag])})
    return {
        "ok": not mismatches,
        "source": "launch_command" if have_launch else "server_info fields",
        "checked": checked,
        "mismatches": mismatches,
        "extra": extra,
        "resolved": resolved,
        "unverifiable": unverifiable,
    }


_MISSING = object()


def _display(flag, v):
    if flag in SECRET_FLAGS:
        return "<redacted>"
    return v


def _resolved_matches(field, want, actual):
    if want is True:
        return actual is True or (actual not in (False, None, 0, ""))
    if actual is None:
        return False
    a = _norm_value(actual)
    w = _norm_value(want)
    if a == w:
        return True
    alias = RESOLVED_ALIASES.get((field, str(want)))
    if alias is not None and _norm_value(alias) == a:
        return True
    return str(a).lower() == str(w).lower()


def flag_hash(expected):
    """Short, stable hash of the flag set: a baseline is only comparable with the same flags."""
    canon = json.dumps({k: v for k, v in sorted((expected or {}).items()) if k not in SECRET_FLAGS},
                       sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:12]


# --------------------------------------------------------------------------------------------
# sglang.benchmark.serving output
# --------------------------------------------------------------------------------------------
BENCH_SERVING_KEYS = (
    "completed", "duration", "total_output_tokens", "output_throughput", "request_throughput",
    "mean_ttft_ms", "median_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
    "mean_tpot_ms", "median_tpot_ms", "median_itl_ms", "p90_itl_ms", "p99_itl_ms",
    "median_e2e_latency_ms", "accept_length", "max_concurrency",
)


def parse_bench_serving_jsonl(text):
    """The last JSON record of a bench_serving --output-file (it appends one per run),
    reduced to the figures the report uses."""
    rec = None
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
    if rec is None:
        raise ValueError("no JSON record in bench_serving output")
    out = dict((k, rec.get(k)) for k in BENCH_SERVING_KEYS)
    tpot = rec.get("median_tpot_ms")
    out["decode_tps_from_tpot"] = round(1000.0 / tpot, 2) if tpot else None
    return out


def parse_prometheus_value(text, name):
    """First sample of metric `name` (any labels) in a Prometheus text exposition."""
    for line in (text or "").splitlines():
        if line.startswith("#"):
            continue
        if line.startswith(name + "{") or line.startswith(name + " "):
            try:
                return float(line.rsplit(None, 1)[1])
            except (ValueError, IndexError):
                return None
    return None


# --------------------------------------------------------------------------------------------
# Gates
# --------------------------------------------------------------------------------------------
def evaluate_gates(result, gates):
    """Decide whether a host passes on correctness and on the absolute floors.

    result: the probe module's `result`. gates: dict with min_decode_tps, max_ttft_ms,
    fail_on_drift, fail_on_extra_flags (other keys are ignored here; the regression gates
    against accepted results are sglang_verify_baseline's).
    Returns (passed, failures[list of str], rows[list of dicts for the table]).
    """
    failures = list(result.get("failures") or [])
    rows = []
    gates = dict((k, _num(v) if k.endswith(("_tps", "_ms", "_ratio", "_samples", "_k")) else _bool(v))
                 for k, v in (gates or {}).items())
    single = result.get("single_stream") or {}
    tps = single.get("decode_tps")
    ttft = single.get("ttft_ms")

    def row(name, value, limit, ok, unit=""):
        rows.append({"gate": name, "value": value, "limit": limit, "ok": ok, "unit": unit})

    drift = result.get("drift")
    if drift is not None:
        if not drift.get("ok", True) and gates.get("fail_on_drift", True):
            failures.append("drift: " + "; ".join(
                "%s expected %s, running %s" % (m["flag"], m["expected"], m["actual"])
                for m in drift["mismatches"]))
        if drift.get("extra") and gates.get("fail_on_extra_flags", False):
            failures.append("drift: flags not in the inventory: " + ", ".join(
                "--%s" % e["flag"] for e in drift["extra"]))

    if result.get("single_stream") is not None:
        if tps is None:
            failures.append("single-stream benchmark produced no decode figure (%s)" % (
                "; ".join(single.get("error_messages") or ["no successful run"])))
        mn = gates.get("min_decode_tps")
        if mn is not None:
            ok = tps is not None and tps >= float(mn)
            row("decode tok/s >= min", tps, float(mn), ok, "tok/s")
            if not ok:
                failures.append("single-stream decode %s tok/s is under the gate of %s tok/s" % (tps, mn))
        mx = gates.get("max_ttft_ms")
        if mx is not None:
            ok = ttft is not None and ttft <= float(mx)
            row("TTFT <= max", ttft, float(mx), ok, "ms")
            if not ok:
                failures.append("median TTFT %s ms is over the gate of %s ms" % (ttft, mx))
    return (not failures), failures, rows


def _bool(v):
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


def _num(v):
    """A gate limit from the inventory: None, "", "None" and "null" mean no gate."""
    if v is None or (isinstance(v, str) and v.strip().lower() in ("", "none", "null")):
        return None
    return float(v)


# --------------------------------------------------------------------------------------------
# Report rendering
# --------------------------------------------------------------------------------------------
def _fmt(v, nd=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return ("%." + str(nd) + "f") % v
    return str(v)


def console_lines(host, result, gate):
    """The short table shown on the console for one host."""
    s = result.get("single_stream") or {}
    lines = [
        "%-28s %s" % ("host", host),
        "%-28s %s" % ("verdict", "PASS" if gate["passed"] else "FAIL"),
        "%-28s %s" % ("sglang", (result.get("server") or {}).get("version")),
        "%-28s %s" % ("probes", _probe_line(result)),
    ]
    for pr in result.get("probes") or []:
        lines.append("%-28s %r -> %r%s" % ("  answer", _clip(pr.get("prompt"), 40), _clip(pr.get("output"), 60),
                                           "" if pr.get("ok") else "  (FAIL)"))
    lines += [
        "%-28s %s tok/s, median of %s runs (min %s, max %s; runs %s)" % (
            "single-stream decode", _fmt(s.get("decode_tps")), len(s.get("decode_tps_runs") or []),
            _fmt(_spread(s.get("decode_tps_runs"), min)), _fmt(_spread(s.get("decode_tps_runs"), max)),
            s.get("decode_tps_runs")),
        "%-28s %s ms (min %s, max %s)" % ("median TTFT", _fmt(s.get("ttft_ms")),
                                          _fmt(_spread(s.get("ttft_ms_runs"), min)),
                                          _fmt(_spread(s.get("ttft_ms_runs"), max))),
        "%-28s %s / %s / %s ms" % ("ITL p50/p90/p99 (per token)", _fmt(s.get("itl_ms_p50"), 2),
                                   _fmt(s.get("itl_ms_p90"), 2), _fmt(s.get("itl_ms_p99"), 2)),
    ]
    sweep = result.get("sweep") or {}
    for lvl in sweep.get("levels") or []:
        lines.append("%-28s %s tok/s, errors %s" % (
            "concurrency %s output" % lvl.get("concurrency"), _fmt(lvl.get("output_throughput")),
            lvl.get("errors")))
    if sweep.get("tool"):
        lines.append("%-28s %s" % ("sweep measured by", sweep["tool"]))
    if sweep.get("note"):
        lines.append("%-28s %s" % ("sweep note", sweep["note"][:300]))
    spec = (result.get("server") or {}).get("spec_accept_length")
    if spec:
        lines.append("%-28s %s" % ("spec accept length", _fmt(spec, 2)))
    for r in gate.get("rows") or []:
        lines.append("%-28s %s %s (limit %s) %s%s" % (
            "gate " + r["gate"], _fmt(r["value"]), r["unit"], _fmt(r["limit"]), "ok" if r["ok"] else "FAIL",
            "; " + r["note"] if r.get("note") else ""))
    for f in gate.get("failures") or []:
        lines.append("FAIL: " + f)
    return lines


def _spread(values, pick):
    vals = [v for v in values or [] if v is not None]
    return pick(vals) if vals else None


def _clip(text, n):
    text = "" if text is None else str(text)
    return text if len(text) <= n else text[: n - 3] + "..."


def _probe_line(result):
    probes = result.get("probes")
    if probes is None:
        return "not run"
    n = len(probes)
    bad = sum(1 for p in probes if not p.get("ok"))
    return "%d/%d passed" % (n - bad, n)


def render_summary_md(report):
    """Markdown summary of one run (all hosts verified so far in it)."""
    out = ["# SGLang verification %s" % report.get("run_id"), ""]
    out.append("| host | verdict | sglang | flags | probes | decode tok/s (min-max) | TTFT ms | ITL p50/p90/p99 ms "
               "| sweep tok/s (concurrency) | spec accept | baseline tok/s (n) |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for host in sorted(report.get("hosts") or {}):
        h = report["hosts"][host]
        res = h.get("result") or {}
        s = res.get("single_stream") or {}
        sweep = res.get("sweep") or {}
        sw = ", ".join("%s (%s)" % (_fmt(lv.get("output_throughput")), lv.get("concurrency"))
                       for lv in sweep.get("levels") or []) or "-"
        bstats = (h.get("baseline_stats") or {}).get("decode_tps") or {}
        base = "%s (%s)" % (_fmt(bstats.get("median")), bstats.get("n")) if bstats else "collecting"
        tps = "%s (%s-%s)" % (_fmt(s.get("decode_tps")), _fmt(_spread(s.get("decode_tps_runs"), min)),
                              _fmt(_spread(s.get("decode_tps_runs"), max)))
        out.append("| %s | %s | %s | `%s` | %s | %s | %s | %s / %s / %s | %s | %s | %s |" % (
            host, "PASS" if h.get("passed") else "**FAIL**", (res.get("server") or {}).get("version"),
            h.get("flag_hash"), _probe_line(res), tps, _fmt(s.get("ttft_ms")),
            _fmt(s.get("itl_ms_p50"), 2), _fmt(s.get("itl_ms_p90"), 2), _fmt(s.get("itl_ms_p99"), 2),
            sw, _fmt((res.get("server") or {}).get("spec_accept_length"), 2), base))
    out.append("")
    for host in sorted(report.get("hosts") or {}):
        h = report["hosts"][host]
        res = h.get("result") or {}
        fails = h.get("failures") or []
        drift = res.get("drift") or {}
        sweep = res.get("sweep") or {}
        if not (fails or drift.get("extra") or drift.get("resolved") or sweep.get("note")):
            continue
        out.append("## %s" % host)
        out.append("")
        for f in fails:
            out.append("- FAIL: %s" % f.replace("|", "\\|"))
        for e in drift.get("extra") or []:
            out.append("- flag on the server, not in the inventory: `--%s %s`" % (e["flag"], e["value"]))
        for r in drift.get("resolved") or []:
            out.append("- `--%s %s` resolved by SGLang to `%s`" % (r["flag"], r["asked"], r["resolved"]))
        if sweep.get("note"):
            out.append("- sweep: %s" % sweep["note"])
        out.append("")
    return "\n".join(out) + "\n"


def history_record(run_id, host, host_report):
    res = host_report.get("result") or {}
    s = res.get("single_stream") or {}
    sweep = res.get("sweep") or {}
    return {
        "run_id": run_id,
        "time": host_report.get("time"),
        "host": host,
        "passed": host_report.get("passed"),
        "mode": host_report.get("mode"),
        "flag_hash": host_report.get("flag_hash"),
        "version": (res.get("server") or {}).get("version"),
        "decode_tps": s.get("decode_tps"),
        "ttft_ms": s.get("ttft_ms"),
        "itl_ms_p50": s.get("itl_ms_p50"),
        "itl_ms_p99": s.get("itl_ms_p99"),
        "sweep": dict((str(lv.get("concurrency")), lv.get("output_throughput"))
                      for lv in sweep.get("levels") or []),
        "spec_accept_length": (res.get("server") or {}).get("spec_accept_length"),
    }
