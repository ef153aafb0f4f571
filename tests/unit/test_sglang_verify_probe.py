"""The sglang_probe module's request logic (health, probes, single stream, own sweep) against a
fake SGLang server on a local socket (standard library http.server), so that the live client's
timing, a connection that dies midway and a server that answers garbage are exercised without
a real model."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

# the module imports its helpers by name, from the collection's plugins/module_utils
from ansible_collections.sglang.deploy.plugins.modules import sglang_probe as probe
from ansible_collections.sglang.deploy.plugins.module_utils.verify import client as sglang_verify_client
from ansible_collections.sglang.deploy.plugins.module_utils.verify import concurrency as sweep_mod

ANSWERS = {"What is 2+2?": "4", "Say hello.": "hello"}


class Fake(BaseHTTPRequestHandler):
    mode = "good"  # good | garbage | die | stream-differs
    bodies = []  # every POST body received
    token_delay = 0.002

    def log_message(self, *a):
        pass

    def _json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health_generate":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/v1/models":
            self._json(200, {"data": [{"id": "fake"}]})
        elif self.path == "/server_info":
            self._json(200, {"version": "0.0-fake", "launch_command": "--model-path /m --tp 1",
                             "model_path": "/m", "tp_size": 1, "internal_states": [{}]})
        else:
            self._json(404, {"error": "no"})

    def _tokens(self, body):
        prompt = body["messages"][0]["content"]
        n = body.get("max_tokens", 16)
        if self.mode == "garbage":
            return ["!"] * n, "length"
        if prompt in ANSWERS and not body.get("ignore_eos"):
            return [ANSWERS[prompt]], "stop"
        return (["w%d " % i for i in range(n)]), "length"

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Fake.bodies.append(body)
        toks, finish = self._tokens(body)
        used = len(toks) + (1 if finish == "stop" else 0)
        if not body.get("stream"):
            self._json(200, {"choices": [{"message": {"content": "".join(toks)}, "finish_reason": finish}],
                             "usage": {"completion_tokens": used}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        if self.mode == "stream-differs":
            toks = ["5"]
        # two tokens per chunk after the first, like speculative decoding
        chunks = [toks[:1]] + [toks[i:i + 2] for i in range(1, len(toks), 2)]
        cum = 0
        for i, c in enumerate(chunks):
            if self.mode == "die" and i == 3:
                self.wfile.flush()
                self.connection.shutdown(2)
                return
            cum += len(c)
            ev = {"choices": [{"delta": {"content": "".join(c)}, "finish_reason": None}],
                  "usage": {"completion_tokens": cum}}
            self.wfile.write(("data: %s\n\n" % json.dumps(ev)).encode())
            self.wfile.flush()
            time.sleep(self.token_delay * len(c))
        ev = {"choices": [{"delta": {}, "finish_reason": finish}]}
        self.wfile.write(("data: %s\n\n" % json.dumps(ev)).encode())
        self.wfile.write(("data: %s\n\n" % json.dumps({"choices": [], "usage": {"completion_tokens": used}})).encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


@pytest.fixture()
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Fake)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    Fake.mode = "good"
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def params(**kw):
    p = {"request_extra_body": {}, "probe_max_tokens": 16, "probe_stream_agreement": True,
         "garbage_min_run": 8, "max_tokens_probe": {"prompt": "Tell me a story.", "max_tokens": 7},
         "probes": [{"prompt": "What is 2+2?", "expect": "4", "match": "exact"},
                    {"prompt": "Say hello.", "expect": "hello", "match": "exact"}],
         "bench": {"max_tokens": 40, "runs": 2, "warmup": 1}, "sweep": {"concurrency": [1, 3], "tool": "own"}}
    p.update(kw)
    return p


def test_health_and_good_probes(server):
    c = sglang_verify_client.Client(server, None, 10)
    h = probe.check_health(c, "fake", 5)
    assert h["ok"] and h["models"] == ["fake"]
    assert not probe.check_health(c, "other-name", 1)["ok"]
    res, fails = probe.run_probes(c, "fake", params())
    assert fails == [], fails
    assert [r["ok"] for r in res] == [True, True, True]
    assert res[-1]["stream_tokens"] == 7


def test_a_probe_sends_its_own_extra_body_and_only_it(server):
    c = sglang_verify_client.Client(server, None, 10)
    fmt = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}
    probes = [{"prompt": "What is 2+2?", "expect": "4", "match": "exact"},
              {"prompt": "Say hello.", "expect": "hello", "match": "exact", "request_extra_body": {"response_format": fmt}}]
    Fake.bodies = []
    res, fails = probe.run_probes(c, "fake", params(probes=probes, request_extra_body={"top_k": 1}))
    assert fails == [], fails
    by_prompt = {}
    for body in Fake.bodies:
        by_prompt.setdefault(body["messages"][0]["content"], []).append(body)
    assert all(b.get("response_format") == fmt and b["top_k"] == 1 for b in by_prompt["Say hello."])
    assert all("response_format" not in b and b["top_k"] == 1 for b in by_prompt["What is 2+2?"])


def test_garbage_server_fails_probes_quoting_output(server):
    Fake.mode = "garbage"
    c = sglang_verify_client.Client(server, None, 10)
    res, fails = probe.run_probes(c, "fake", params())
    assert len(fails) == 2
    assert fails[0].startswith('probe "What is 2+2?" answered "!!!!!!!!!!!!!!!!"')
    assert "garbage" in fails[0] and 'expected "4" (exact)' in fails[0]
    summary, sf = probe.run_single_stream(c, "fake", params())
    # every run's answer is judged, one quoted: a benchmark of garbage fails whatever its speed
    assert any(f.startswith("single-stream benchmark: 2 of 2 answers are garbage") and '"!!!!' in f for f in sf), sf
    sweep, swf = probe.run_sweep(c, "fake", params(), server, None)
    assert [f.split(" (")[0] for f in swf] == ["concurrency sweep at 1: 2 of 2 answers are garbage",
                                               "concurrency sweep at 3: 6 of 6 answers are garbage"], swf
    assert sweep["levels"][1]["output_throughput"] > 0  # measured, and still failed


def test_stream_and_non_stream_disagreement_is_a_failure(server):
    Fake.mode = "stream-differs"
    c = sglang_verify_client.Client(server, None, 10)
    res, fails = probe.run_probes(c, "fake", params(max_tokens_probe={}))
    assert 'streamed answer "5" differs from non-streamed "4"' in fails[0]


def test_single_stream_counts_two_token_chunks(server):
    c = sglang_verify_client.Client(server, None, 10)
    s, fails = probe.run_single_stream(c, "fake", params())
    assert fails == []
    assert s["runs"] == 2 and s["errors"] == 0
    assert s["completion_tokens"] == [40, 40] and s["stream_tokens"] == [40, 40]
    assert s["itl_samples"] == 2 * 39
    assert s["token_count_method"] == ["server-usage-per-chunk"]
    # two tokens per chunk with 4 ms between chunks: about 2 ms per token (loose: timing)
    assert 0.5 < s["itl_ms_p50"] < 20


def test_stream_dying_midway_is_counted_as_an_error(server):
    Fake.mode = "die"
    c = sglang_verify_client.Client(server, None, 10)
    s, fails = probe.run_single_stream(c, "fake", params())
    assert s["errors"] == 2 and s["decode_tps"] is None
    assert "before [DONE]" in s["error_messages"][0] or "connection" in s["error_messages"][0]
    assert fails and "2 of 2 requests failed" in fails[0]


def test_own_sweep(server):
    c = sglang_verify_client.Client(server, None, 10)
    sweep, fails = probe.run_sweep(c, "fake", params(), server, None)
    assert fails == []
    assert sweep["tool"] == "own (sglang_probe)"
    assert [lv["concurrency"] for lv in sweep["levels"]] == [1, 3]
    assert sweep["levels"][1]["completed"] == 6 and sweep["levels"][1]["total_output_tokens"] == 6 * 128


class FixedStreams:
    """A client whose streams are given figures (no timing): each call takes the next one."""

    def __init__(self, streams):
        self.streams = iter(streams)
        self.lock = threading.Lock()

    def stream_chat(self, body):
        with self.lock:
            ttft, itl = next(self.streams)
        text = " ".join("w%d" % i for i in range(len(itl) + 1))
        return {"ok": True, "completion_tokens": len(itl) + 1, "stream_tokens": len(itl) + 1, "text": text,
                "reasoning_text": "", "finish_reason": "length", "ttft_s": ttft, "itl_s": itl}


def test_own_sweep_level_records_p99_ttft_and_the_median_of_every_gap():
    """The level's latency the sweep's target judges: TTFT at the 99th percentile of the
    requests (linear interpolation, sglang_verify_stats.percentile) and the median of every
    inter-token gap of every request pooled, in ms; a failed request counts in neither."""
    streams = [(0.010, [0.004, 0.004, 0.004]), (0.020, [0.004, 0.004, 0.004]), (0.030, [0.006, 0.006, 0.006]),
               (0.040, [0.006, 0.006, 0.006]), (1.000, [0.050, 0.050, 0.050])]
    level = sweep_mod.own_sweep_level(FixedStreams(streams), "fake", params(), 5, 5, 4)
    assert level["completed"] == 5 and level["errors"] == 0 and level["answer_problems"] == []
    assert level["median_ttft_ms"] == 30.0
    assert level["p99_ttft_ms"] == pytest.approx(40.0 + (1000.0 - 40.0) * 0.96)  # 961.6, the slow request
    assert level["median_itl_ms"] == 6.0  # 15 gaps: 6 of 4 ms, 6 of 6 ms, 3 of 50 ms


def test_own_sweep_level_without_a_good_request_has_no_latency():
    class Failing:
        def stream_chat(self, body):
            return {"ok": False, "error": "connection error: refused", "ttft_s": None, "itl_s": []}
    level = sweep_mod.own_sweep_level(Failing(), "fake", params(), 2, 2, 4)
    assert level["errors"] == 2 and level["output_throughput"] == 0
    assert (level["median_ttft_ms"], level["p99_ttft_ms"], level["median_itl_ms"]) == (None, None, None)


def test_auto_sweep_falls_back_and_says_why(server):
    c = sglang_verify_client.Client(server, None, 10)
    p = params(sweep={"concurrency": [1], "tool": "auto", "python": "/nonexistent/python", "tokenizer": "/m"})
    sweep, fails = probe.run_sweep(c, "fake", p, server, None)
    assert sweep["tool"] == "own (sglang_probe)"
    assert "/nonexistent/python not found" in sweep["note"]
    p["sweep"]["tool"] = "bench_serving"
    sweep, fails = probe.run_sweep(c, "fake", p, server, None)
    assert fails and "not found" in fails[0]


def test_unreachable_server_health_reports_the_error():
    c = sglang_verify_client.Client("http://127.0.0.1:9", None, 2)
    h = probe.check_health(c, "x", 0)
    assert not h["ok"] and "/health_generate answered 0" in h["error"]
