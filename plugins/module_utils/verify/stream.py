# -*- coding: utf-8 -*-
# Server-sent events of the sglang_verify role: the incremental SSE parser, one stream's
# figures (TTFT, per-token inter-token latency, decode rate) and the replay of recorded streams.
# Standard library only (runs on the GPU host with the probe module).
"""One streamed chat completion, parsed and measured."""

import json

from ansible_collections.sglang.deploy.plugins.module_utils.verify.output import quote


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
