# -*- coding: utf-8 -*-
# HTTP client of the sglang_verify role: plain and streamed chat completions against an SGLang
# server, timed per received chunk. Standard library only (urllib); used by the sglang_probe
# module on the host and by scripts/bench-compare.py.
"""Stdlib HTTP client for SGLang's OpenAI-compatible endpoints."""

from __future__ import absolute_import, division, print_function

import json
import time
import urllib.request as urlrequest
from urllib.error import HTTPError, URLError

try:
    from ansible.module_utils.sglang_verify_lib import SSEParser, StreamAccumulator, quote, summarize_single_stream
except ImportError:  # outside Ansible: module_utils/ is on sys.path
    from sglang_verify_lib import SSEParser, StreamAccumulator, quote, summarize_single_stream

__metaclass__ = type


class Client:
    def __init__(self, base_url, api_key, timeout):
        self.base = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    def _req(self, path, body=None):
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        data = json.dumps(body).encode("utf-8") if body is not None else None
        return urlrequest.Request(self.base + path, data=data, headers=headers)

    def get(self, path, timeout=None):
        """(status, body text); status 0 with the error text when the connection failed."""
        try:
            resp = urlrequest.urlopen(self._req(path), timeout=timeout or self.timeout)
            return resp.getcode(), resp.read().decode("utf-8", errors="replace")
        except HTTPError as e:
            return e.code, e.read().decode("utf-8", errors="replace")
        except (URLError, OSError) as e:
            return 0, str(e)

    def post_json(self, path, body):
        try:
            resp = urlrequest.urlopen(self._req(path, body), timeout=self.timeout)
            return resp.getcode(), json.loads(resp.read().decode("utf-8", errors="replace"))
        except HTTPError as e:
            return e.code, {"error": e.read().decode("utf-8", errors="replace")}
        except (URLError, OSError, ValueError) as e:
            return 0, {"error": str(e)}

    def stream_chat(self, body):
        """One streamed chat completion; returns lib.stream_metrics() figures."""
        body = dict(body, stream=True)
        opts = dict(body.get("stream_options") or {})
        opts.update({"include_usage": True, "continuous_usage_stats": True})
        body["stream_options"] = opts
        parser = SSEParser()
        t0 = time.perf_counter()
        acc = StreamAccumulator(t0)
        err = None
        try:
            resp = urlrequest.urlopen(self._req("/v1/chat/completions", body), timeout=self.timeout)
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
