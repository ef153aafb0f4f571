"""SSE parsing and stream metric math of roles/sglang_verify, on recorded streams.

Fixtures (tests/fixtures/sse/*.jsonl) are one record per received line: {"t": seconds since the
request was sent, "line": text}, ended by {"eof": true} or {"error": "..."}. The sglang-0.5.23-*
files were recorded from a real SGLang 0.5.23 server (tiny model, CPU); the others are built to
pin down one behaviour each (speculative multi-token chunks, a stream dying midway, wire quirks).
"""

import json
import os

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.verify import output
from ansible_collections.sglang.deploy.plugins.module_utils.verify import stats
from ansible_collections.sglang.deploy.plugins.module_utils.verify import stream

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FIX = os.path.join(ROOT, "tests", "fixtures", "sse")


def load(name):
    with open(os.path.join(FIX, name)) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def replay(name):
    return stream.replay_recorded(load(name))


# ---------------------------------------------------------------- parser
def test_parser_joins_multiline_data_and_skips_comments_and_other_fields():
    p = stream.SSEParser()
    got = []
    for line in [": comment", "event: message", "id: 7", "data: {\"a\":", "data: 1}", "", "data: [DONE]", ""]:
        got.extend(p.feed(line))
    assert got == ['{"a":\n1}', "[DONE]"]


def test_parser_accepts_bytes_crlf_and_no_space_after_colon():
    p = stream.SSEParser()
    got = p.feed(b"data:{\"x\": 1}\r\n") + p.feed(b"\r\n")
    assert got == ['{"x": 1}']


def test_parser_dispatches_pending_event_when_blank_separator_missing():
    p = stream.SSEParser()
    assert p.feed('data: {"n": 1}') == []
    assert p.feed('data: {"n": 2}') == ['{"n": 1}']
    assert p.close() == ['{"n": 2}']


def test_parser_does_not_split_an_incomplete_json_payload():
    p = stream.SSEParser()
    assert p.feed('data: {"n":') == []
    assert p.feed("data: 1}") == []
    assert p.feed("") == ['{"n":\n1}']


# ---------------------------------------------------------------- recorded SGLang streams
def test_real_probe_stream_text_finish_and_usage_crosscheck():
    m = replay("sglang-0.5.23-probe-2plus2.jsonl")
    assert m["ok"], m["error"]
    assert m["text"] == "4"
    assert m["finish_reason"] == "stop"
    # the server counts the end token (2), the stream shows one text token: allowed for `stop`
    assert m["completion_tokens"] == 2
    assert m["stream_tokens"] == 1
    assert m["token_count_mismatch"] is None
    assert m["token_count_method"] == "server-usage-per-chunk"


def test_real_ignore_eos_stream_counts_and_decode_rate():
    recs = load("sglang-0.5.23-ignore-eos-32.jsonl")
    m = stream.replay_recorded(recs)
    assert m["ok"]
    assert m["completion_tokens"] == 32 == m["stream_tokens"]
    assert m["finish_reason"] == "length"
    # independent recomputation from the raw records: an event is complete at the blank line
    # after its data line, so a chunk's time is that of the next record
    times = []
    for r, nxt in zip(recs, recs[1:]):
        line = r.get("line", "")
        if line.startswith("data: {"):
            ev = json.loads(line[6:])
            if any((c.get("delta") or {}).get("content") for c in ev.get("choices") or []):
                assert nxt["line"] == ""
                times.append(nxt["t"])
    # 32 tokens in 31 chunks: SGLang's detokenizer held one token back and sent it with the
    # next (" ars is" = 2 tokens): a multi-token chunk without speculative decoding
    assert len(times) == 31
    assert m["chunks"] == 31
    assert m["ttft_s"] == pytest.approx(times[0])
    assert m["decode_tps"] == pytest.approx(31 / (times[-1] - times[0]))
    assert len(m["itl_s"]) == 31  # one latency per token after the first
    assert sum(m["itl_s"]) == pytest.approx(times[-1] - times[0])


def test_real_stream_without_per_chunk_usage_uses_the_final_usage():
    m = stream.replay_recorded(load("sglang-0.5.23-ignore-eos-32-final-usage-only.jsonl"))
    assert m["ok"]
    # 31 text chunks, 32 tokens by the final usage, finish `length`: one chunk had 2 tokens,
    # which only the final usage shows, so the decode tokens are spread over the chunks
    assert m["chunks"] == 31
    assert m["token_count_method"] == "uniform-estimate"
    assert m["completion_tokens"] == 32 == m["stream_tokens"]
    assert m["token_count_mismatch"] is None
    assert len(m["itl_s"]) == 30


# ---------------------------------------------------------------- speculative decoding
def test_multi_token_chunks_are_split_per_token():
    m = replay("spec-multi-token-continuous-usage.jsonl")
    assert m["ok"]
    assert m["text"] == "The cat sat on the mat. It purred"
    assert m["completion_tokens"] == 9 == m["stream_tokens"]
    assert m["token_count_method"] == "server-usage-per-chunk"
    assert m["ttft_s"] == pytest.approx(0.100)
    # chunks after the first carry 2, 3, 1, 2 tokens, 30 ms apart
    expected = [0.015, 0.015, 0.010, 0.010, 0.010, 0.030, 0.015, 0.015]
    assert m["itl_s"] == pytest.approx(expected)
    # 8 tokens after the first one, over 120 ms
    assert m["decode_tps"] == pytest.approx(8 / 0.120)


def test_per_chunk_itl_would_have_been_wrong():
    """The naive per-chunk ITL (what a client without token counts reports) differs: the test
    above can only pass because the tokens in each chunk are counted."""
    m = replay("spec-multi-token-continuous-usage.jsonl")
    naive = [0.030] * 4
    assert stats.percentile(m["itl_s"], 50) != pytest.approx(stats.percentile(naive, 50))


def test_multi_token_chunks_without_per_chunk_usage_use_the_final_usage():
    m = replay("spec-multi-token-final-usage-only.jsonl")
    assert m["ok"]
    assert m["token_count_method"] == "uniform-estimate"
    assert m["completion_tokens"] == 9
    assert m["stream_tokens"] == 9
    assert m["decode_tps"] == pytest.approx(8 / 0.120)
    assert m["token_count_mismatch"] is None


# ---------------------------------------------------------------- broken streams
def test_stream_that_dies_midway_is_an_error_with_partial_figures():
    m = replay("died-midway-connection-reset.jsonl")
    assert not m["ok"]
    assert "Connection reset" in m["error"]
    assert m["text"] == "Once upon a time"
    assert m["chunks"] == 4
    assert m["completion_tokens"] == 4
    assert m["finish_reason"] is None


def test_stream_closed_without_done_is_an_error():
    m = replay("died-midway-eof.jsonl")
    assert not m["ok"]
    assert "before [DONE]" in m["error"]
    assert m["text"] == "Once upon"


def test_error_event_inside_a_200_stream_is_reported_with_its_message():
    m = replay("error-event.jsonl")
    assert not m["ok"]
    assert "illegal memory access" in m["error"]


def test_wire_quirks():
    m = replay("wire-quirks-no-blank-lines.jsonl")
    assert m["ok"], m["error"]
    assert m["text"] == "Hi there"
    assert m["finish_reason"] == "stop"


def test_garbage_stream_is_flagged_by_the_detector():
    m = replay("garbage-exclamation.jsonl")
    assert m["ok"]
    reason = output.detect_garbage(m["text"])
    assert reason is not None and '"!"' in reason


# ---------------------------------------------------------------- aggregation
def test_summary_excludes_failed_runs_and_takes_medians():
    good = replay("spec-multi-token-continuous-usage.jsonl")
    dead = replay("died-midway-eof.jsonl")
    s = stats.summarize_single_stream([good, dead, good])
    assert s["runs"] == 3 and s["errors"] == 1
    assert s["decode_tps"] == pytest.approx(round(8 / 0.120, 2))
    assert s["ttft_ms"] == pytest.approx(100.0)
    assert s["itl_samples"] == 16
    assert s["itl_ms_p50"] == pytest.approx(15.0)
    assert "before [DONE]" in s["error_messages"][0]
