# -*- coding: utf-8 -*-
# Client of the sglang_verify role: plain and streamed chat completions against an SGLang
# server, timed per received chunk, over the project's one HTTP client
# (plugins/module_utils/sglang_http.py). Standard library only; used by the sglang_probe module on the
# host and by scripts/bench-compare.py.
"""SGLang's OpenAI-compatible endpoints, as the verification asks them."""

import json
import time
from urllib.error import HTTPError, URLError

from ansible_collections.sglang.deploy.plugins.module_utils.sglang_http import JSON_HEADERS, open_url, request
from ansible_collections.sglang.deploy.plugins.module_utils.verify.output import quote
from ansible_collections.sglang.deploy.plugins.module_utils.verify.stats import summarize_single_stream
from ansible_collections.sglang.deploy.plugins.module_utils.verify.stream import SSEParser, StreamAccumulator


class Client:
    def __init__(self, base_url, api_key, timeout):
        self.base = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    def _headers(self):
        headers = dict(JSON_HEADERS)
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        return headers

    def get(self, path, timeout=None):
        """(status, body text); status 0 with the error text when the connection failed."""
        return request(self.base + path, headers=self._headers(), timeout=timeout or self.timeout)

    def post_json(self, path, body):
        """(status, decoded JSON answer); {"error": text} when the answer is an HTTP error, no
        answer (status 0) or not JSON (status 0)."""
        status, text = request(self.base + path, body, headers=self._headers(), timeout=self.timeout)
        if not 200 <= status < 300:
            return status, {"error": text}
        try:
            return status, json.loads(text)
        except ValueError as e:
            return 0, {"error": str(e)}

    def stream_chat(self, body):
        """One streamed chat completion; returns stream_metrics() of verify/stream.py figures."""
        body = dict(body, stream=True)
        opts = dict(body.get("stream_options") or {})
        opts.update({"include_usage": True, "continuous_usage_stats": True})
        body["stream_options"] = opts
        parser = SSEParser()
        t0 = time.perf_counter()
        acc = StreamAccumulator(t0)
        err = None
        try:
            resp = open_url(self.base + "/v1/chat/completions", body, headers=self._headers(), timeout=self.timeout)
            while True:
                line = resp.readline()
                if not line:
                    break
                now = time.perf_counter()
                for payload in parser.feed(line):
                    acc.add(now, payload)
                if acc.done:
                    break
            for payload in parser.close():
                acc.add(time.perf_counter(), payload)
        except HTTPError as e:
            err = "HTTP %s: %s" % (e.code, quote(e.read().decode("utf-8", errors="replace"), 300))
        except (URLError, OSError) as e:
            err = "connection error: %s" % e
        return acc.finish(time.perf_counter(), error=err)


def chat_body(model, prompt, max_tokens, extra, **kw):
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0,
    }
    body.update(extra or {})
    body.update(kw)
    return body


def single_stream(client, model, prompt, max_tokens, runs, warmup, extra=None):
    """The project's single-stream measurement: `warmup` short requests (excluded), then `runs`
    streamed requests of exactly `max_tokens` tokens (ignore_eos, temperature 0).
    Returns (summary, per-run figures)."""
    body = chat_body(model, prompt, max_tokens, extra, ignore_eos=True)
    for _ in range(warmup):
        client.stream_chat(dict(body, max_tokens=min(16, max_tokens)))
    measured = [client.stream_chat(body) for _ in range(runs)]
    return summarize_single_stream(measured), measured
