"""The quality check at load (plugins/module_utils/quality/load.py): the generations a
detection probability needs, the batch sizes read from what the server resolved, the batches,
a batched generation against the same prompt alone (near-ties, a divergence, logprob drift),
the verdict per size and the gate's row and failure (plugins/module_utils/quality/compare.py)."""

import math

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.quality import compare as q
from ansible_collections.sglang.deploy.plugins.module_utils.quality import gates as quality_gates
from ansible_collections.sglang.deploy.plugins.module_utils.quality import load
from ansible_collections.sglang.deploy.plugins.module_utils.quality import run as vq
from ansible_collections.sglang.deploy.plugins.module_utils.quality import run
from ansible_collections.sglang.deploy.plugins.module_utils.verify import render

SAME = {"max_abs_dlogprob": 0.001}
TOL = {"max_abs_dlogprob": 0.05, "divergence_margin": 0.05}


def test_generations_for_a_target_probability_and_the_probability_they_give():
    # 1 - 0.95^59 = 0.9515 >= 0.95 > 1 - 0.95^58 = 0.9490
    assert load.generations_for(0.05, 0.95) == 59
    assert load.detect_probability(0.05, 59) == pytest.approx(0.9515, abs=1e-4)
    assert load.detect_probability(0.05, 58) < 0.95
    assert load.generations_for(0.05, 0.99) == 90
    assert load.generations_for(0.5, 0.75) == 2  # exactly 0.75 at n=2: not rounded up to 3
    for p, target in ((0.01, 0.9), (0.2, 0.999), (0.05, 0.5)):
        n = load.generations_for(p, target)
        assert load.detect_probability(p, n) >= target > load.detect_probability(p, n - 1)
    with pytest.raises(ValueError, match="between 0 and 1"):
        load.generations_for(0, 0.95)
    with pytest.raises(ValueError):
        load.generations_for(0.05, 1.0)


def test_batch_sizes_from_the_captured_buckets_of_the_decode_graph():
    # a GPU server: CUDA graphs captured for these decode batch sizes, at most 48 running
    info = {"cuda_graph_max_bs_decode": 48, "cuda_graph_bs_decode": [1, 2, 4, 8, 12, 16, 24, 32, 40, 48],
            "max_running_requests": 48}
    sizes, how = load.batch_sizes(info, cap=64)
    assert sizes == [24, 48] and "cuda_graph_bs_decode" in how and "48" in how
    # capped: the largest bucket within the cap, the bucket nearest half of it
    assert load.batch_sizes(info, cap=20)[0] == [8, 16]
    # the running-request limit is smaller than the graph maximum
    assert load.batch_sizes(dict(info, max_running_requests=16), cap=64)[0] == [8, 16]
    # the names before the -decode forms
    assert load.batch_sizes({"cuda_graph_max_bs": 8, "cuda_graph_bs": [1, 2, 4, 8]})[0] == [4, 8]


def test_batch_sizes_without_graphs_and_as_configured():
    # the CPU server: no CUDA graph, no bucket list; the cap decides
    sizes, how = load.batch_sizes({"cuda_graph_max_bs_decode": None, "cuda_graph_bs_decode": None,
                                   "max_running_requests": 4096}, cap=8)
    assert sizes == [4, 8] and "sglang_verify_quality_load_max_batch" in how
    assert load.batch_sizes({"max_running_requests": 3})[0] == [3]  # half of 3 is 1: the reference itself
    assert load.batch_sizes({}, explicit=[8, 2, 1, "4", 8]) == ([2, 4, 8], "as configured")
    with pytest.raises(ValueError, match="no batch size above 1"):
        load.batch_sizes({}, explicit=[1])
    with pytest.raises(ValueError, match="reports none of"):
        load.batch_sizes({"cuda_graph_max_bs_decode": None})
    with pytest.raises(load.NotApplicable, match="at most 1 request"):
        load.batch_sizes({"max_running_requests": 1}, cap=8)


class NoServer:
    """A client that fails the test if the check asks the server anything."""

    def post_json(self, path, body):
        raise AssertionError("the check at load asked %s of a server that decodes one request at a time" % path)


def test_a_server_of_one_request_at_a_time_is_not_applicable_at_load_never_an_error():
    # max-running-requests 1 rolled on a host: a legitimate single-request profile, not a crash
    out = run.run_load(NoServer(), [{"text": "a"}], [], {"load_max_batch": 8}, {"max_running_requests": 1})
    assert out["level"] == "not_applicable" and out["requests"] == 0
    assert out["reasons"] == ["the server decodes at most 1 request at a time (largest 1 (max_running_requests)): "
                              "nothing to check at load"]
    rows, failures = q.load_gate(out)
    assert failures == [] and rows[0]["value"] == "not_applicable" and rows[0]["ok"]
    assert rows[0]["note"] == out["reasons"][0]
    v = quality_gates.LOAD.evaluate({"result": {"quality": {"level": "same", "load": out}}}, {})
    assert v["gate"] == "quality_at_load" and v["level"] == "not_applicable"
    assert v["reasons"] == out["reasons"] and v["figures"] == rows
    assert render.load_line(out) == "; at load not applicable: " + out["reasons"][0]
    # a configuration that cannot work still raises: it is no verdict on the server
    with pytest.raises(ValueError, match="no batch size above 1"):
        run.run_load(NoServer(), [{"text": "a"}], [], {"load_batch_sizes": [1]}, {})


def test_rounds_use_distinct_prompts_and_take_them_in_turn():
    batches = load.rounds(30, 8, 59)
    assert len(batches) == 8 and all(len(set(b)) == 8 for b in batches)
    assert sum(len(b) for b in batches) == 64 >= 59
    assert batches[0] == list(range(8)) and batches[3][:6] == [24, 25, 26, 27, 28, 29] and batches[3][6] == 0
    # more requests in a batch than prompts: each prompt as often as the others
    big = load.rounds(30, 48, 59)
    assert len(big) == 2 and all(sorted(b).count(0) == 2 for b in big)
    assert load.rounds(0, 8, 59) == []


def gen(ids, lps, alts=None):
    """A generation: each position's top-k is the chosen token, then the alternative ``alts[i]``
    ([logprob, id]) or one 3 nats under it."""
    alts = alts or {}
    top = [[[lp, tok, "t%d" % tok], alts.get(i, [lp - 3.0, 900 + i, "alt%d" % i])] for i, (tok, lp) in
           enumerate(zip(ids, lps))]
    return {"ids": list(ids), "logprobs": list(lps), "top": top}


ALONE = gen([10, 11, 12, 13], [-0.1, -0.5, -0.2, -0.3])


def test_a_batched_generation_equal_to_the_run_alone():
    row = load.compare_generation(ALONE, gen([10, 11, 12, 13], [-0.1, -0.5, -0.2, -0.3]), 0.05)
    assert row["exact"] and row["tokens"] == 4 and row["max_abs"] == 0.0 and load.wrong(row, TOL) is None


def test_a_divergence_at_a_near_tie_alone_is_batch_variance():
    # alone, token 12 (-0.70) beat token 77 (-0.72) by 0.02 at position 2; in the batch 77 won
    alone = gen([10, 11, 12, 13], [-0.1, -0.5, -0.70, -0.3], alts={2: [-0.72, 77, "x"]})
    batched = gen([10, 11, 77, 5], [-0.1, -0.5, -0.69, -0.9])
    row = load.compare_generation(alone, batched, 0.05)
    assert not row["exact"] and row["diverged"]["position"] == 2 and row["diverged"]["explained"]
    assert row["tokens"] == 2 and load.wrong(row, TOL) is None
    # an exact tie alone, with no margin at all, is explained too
    tied = gen([10, 11, 12, 13], [-0.1, -0.5, -0.70, -0.3], alts={2: [-0.70, 77, "x"]})
    assert load.compare_generation(tied, batched, 0.0)["diverged"]["explained"]
    # the same divergence with a margin under the gap: wrong
    row = load.compare_generation(alone, batched, 0.01)
    assert not row["diverged"]["explained"] and load.wrong(row, TOL) == "diverged at token 2"


def test_a_divergence_to_a_token_the_run_alone_ranked_low_or_not_at_all_is_wrong():
    far = gen([10, 11, 900 + 2, 13], [-0.1, -0.5, -0.2, -0.3])  # alone's alternative at position 2, 3 nats under
    row = load.compare_generation(ALONE, far, 0.05)
    assert load.wrong(row, TOL) == "diverged at token 2"
    assert row["diverged"]["alone_logprob_of_batched"] == pytest.approx(-3.2)
    garbage = gen([5, 5, 5, 5], [-0.01] * 4)  # '!!!!' from the first token: in no top-k alone
    row = load.compare_generation(ALONE, garbage, 0.05)
    assert row["diverged"]["position"] == 0 and row["diverged"]["alone_logprob_of_batched"] is None
    text = load.describe(8, dict(row, prompt={"id": "short-01", "text": "import os\n"}), load.wrong(row, TOL))
    assert text.startswith("at batch 8, prompt short-01 ('import os\\n'): diverged at token 0: alone 't10' (id 10")
    assert "in the batch" in text and "no place in the top-k" in text


def test_the_same_tokens_with_logprobs_moved_beyond_the_tolerance_are_wrong():
    moved = gen([10, 11, 12, 13], [-0.1, -0.5, -0.28, -0.3])
    row = load.compare_generation(ALONE, moved, 0.05)
    assert row["exact"] and row["max_abs"] == pytest.approx(0.08)
    assert load.wrong(row, TOL).startswith("|d logprob| 0.08 beyond 0.05")
    assert load.wrong(row, {"max_abs_dlogprob": 0.1}) is None


def test_a_generation_that_stops_early_without_a_different_token_is_wrong():
    short = gen([10, 11], [-0.1, -0.5])
    row = load.compare_generation(ALONE, short, 0.05)
    assert not row["exact"] and load.wrong(row, TOL) == "diverged at token 2"
    assert "4 tokens alone, 2 in the batch" in load.describe(4, dict(row, prompt={}), "x")


def rows_of(*pairs):
    return [dict(load.compare_generation(a, b, TOL["divergence_margin"]), prompt={"id": "p%d" % i, "text": "t"})
            for i, (a, b) in enumerate(pairs)]


def test_levels_and_the_summary_name_the_batch_size_of_the_first_wrong_token():
    equal = rows_of((ALONE, ALONE), (ALONE, ALONE))
    assert load.judge_size(4, equal, SAME, TOL)["level"] == "same"
    drift = rows_of((ALONE, ALONE), (ALONE, gen([10, 11, 12, 13], [-0.1, -0.5, -0.21, -0.3])))
    judged = load.judge_size(4, drift, SAME, TOL)
    assert judged["level"] == "numerics_changed" and judged["max_abs_dlogprob"] == pytest.approx(0.01)
    # one wrong generation of 59 is enough: an intermittent fault is not averaged away
    many = rows_of(*([(ALONE, ALONE)] * 58 + [(ALONE, gen([10, 11, 5, 5], [-0.1, -0.5] + [-0.01] * 2))]))
    many[58]["batch"] = load.first_wrong_size(many[58], load.stagger_sizes([4, 3, 2]))
    assert many[58]["batch"] == 2  # position 2 of lengths 4, 3, 2: decoded with the two longer than 2
    bad = load.judge_size(8, many, SAME, TOL)
    assert bad["level"] == "degraded" and bad["wrong"] == 1 and bad["exact"] == 58 and bad["wrong_sizes"] == [2]
    assert bad["worst"].startswith("at batch 2, prompt p58")
    cover = load.coverage([[3, 3, 2]], 3, 0.05)
    out = load.summarize_staggered(bad, cover, 0.05, 1)
    assert out["level"] == "degraded" and out["sizes"] == [2, 3] and out["sizes_missed"] == []
    assert out["reasons"] == ["1 of 59 generations wrong, the first wrong token decoded at batch 2: " + bad["worst"]]
    # the probability the check had: at its least-seen size (2 generations at batch 2)
    assert out["detect_probability"] == pytest.approx(1 - 0.95 ** 2, abs=1e-4)


def test_the_gate_fails_a_degraded_check_naming_the_size_and_shows_the_probability_otherwise():
    cover = load.coverage(load.staggered(4, 24), 4, 0.05)
    good = load.summarize_staggered(load.judge_size(4, rows_of(*[(ALONE, ALONE)] * 9), SAME, TOL), cover, 0.05, 1)
    rows, failures = q.load_gate(dict(good, requests=1))
    assert failures == [] and [r["gate"] for r in rows] == ["quality at load"]
    assert rows[0]["value"] == "same" and "batch 2-4 in 1 batches: 9/9 generations as alone" in rows[0]["note"]
    assert f"seen) {round(1 - 0.95 ** 2, 4)} at the least-seen size" in rows[0]["note"]
    bad_rows = rows_of((ALONE, gen([10, 5, 5, 5], [-0.1] + [-0.01] * 3)))
    bad_rows[0]["batch"] = 4
    bad = load.summarize_staggered(load.judge_size(4, bad_rows, SAME, TOL), cover, 0.05, 1)
    # the reference comparison alone is `same`, or there is no reference yet: the load check still decides
    for level in ("same", "recorded"):
        v = quality_gates.LOAD.evaluate({"result": {"quality": {"level": level, "load": bad}}}, {})
        assert v["level"] == "degraded" and not v["figures"][0]["ok"] and len(v["reasons"]) == 1
        assert v["reasons"][0].startswith("quality at load degraded: 1 of 1 generations wrong, the first wrong token "
                                          "decoded at batch 4: at batch 4, prompt p0"), v["reasons"]
    assert math.isclose(load.detect_probability(0.05, 0), 0.0)


def test_staggered_batches_pass_through_every_size_from_the_largest_down_to_two():
    for largest, longest in ((64, 24), (8, 24), (48, 24), (2, 24), (30, 5), (64, 2)):
        plans = load.staggered(largest, longest)
        assert all(max(p) <= longest and min(p) >= 2 for p in plans)
        seen = sorted(s for p in plans for s in set(load.stagger_sizes(p)) if s)
        # every size once, in one batch or another, and nothing above the largest
        assert seen == list(range(2, largest + 1)), (largest, longest)
        assert plans[0] and len(plans[0]) == largest
    # 64 with 24-token references: 3 batches (64-42, 41-19, 18-2)
    plans = load.staggered(64, 24)
    assert [len(p) for p in plans] == [64, 41, 18] and sum(map(sum, plans)) == 2202
    assert load.stagger_sizes([4, 3, 2]) == [None, 3, 2, 1]
    assert load.staggered(1, 24) == [] and load.staggered(8, 1) == []
    # one batch of 8 in a 24-token reference: lengths 2..8 and 9, sizes 8..2 at positions 1..7
    assert load.stagger_sizes(load.staggered(8, 24)[0])[1:8] == [8, 7, 6, 5, 4, 3, 2]


def test_prompts_are_assigned_longest_first_neighbours_differ_and_early_ends_are_counted():
    plan = load.assign([9, 9, 8, 7, 3, 2], [24, 3, 24])
    # prompt 1's reference ends after 3 tokens: it gets only generations of 3 tokens or fewer
    assert [i for i, _, _ in plan] == [0, 2, 0, 2, 1, 0]
    assert [e for _, _, e in plan] == [9, 9, 8, 7, 3, 2]
    # the references of the tiny model's chat prompts: most end before 24 tokens; the batches
    # still pass through every size (on a demo server, before this rule, 16 of 63 were skipped)
    available = [24, 24, 24] + [9 + i % 12 for i in range(27)]
    assert load.longest_usable(available) == 24 and load.longest_usable([5]) == 5 and load.longest_usable([]) == 0
    had = [[e for _, _, e in load.assign(p, available)] for p in load.staggered(64, load.longest_usable(available))]
    assert [c["size"] for c in load.coverage(had, 64, 0.05) if not c["generations"]] == []
    # a size a reference that ends early skips is reported as not seen
    sizes = load.stagger_sizes([9, 9, 3, 7])
    assert sizes[1:4] == [4, 4, 3] and sizes[7:] == [2, 2]
    assert [c["size"] for c in load.coverage([[9, 9, 3, 7]], 4, 0.05) if not c["generations"]] == []
    # two references that end early together: batch 3 is never decoded, and that is said
    cover = load.coverage([[9, 9, 3, 3]], 4, 0.05)
    assert [c["size"] for c in cover if not c["generations"]] == [3]
    assert [c["generations"] for c in cover] == [2, 0, 4]
    assert load.assign([3], []) == []


class BandFaultServer:
    """/generate of a server whose decode batches of ``band`` sizes give each row the next
    row's token (tests/faults/batched_decode with SGLANG_TEST_FAULT_BATCH): each prompt's
    answer alone is ``answers[prompt]``; a row's token at position p is decoded with the rows
    still running (those whose max_new_tokens exceed p)."""

    def __init__(self, answers, band):
        self.answers, self.band, self.requests = answers, band, []

    def post_json(self, path, body):
        prompts = [tuple(p) for p in body["input_ids"]]
        params = body["sampling_params"]
        lengths = [min(p["max_new_tokens"], len(self.answers[k])) for p, k in zip(params, prompts)]
        self.requests.append(lengths)
        out = []
        for r, key in enumerate(prompts):
            ids = []
            for pos in range(lengths[r]):
                alive = [j for j in range(len(prompts)) if lengths[j] > pos]
                size = len(alive) if pos > 0 else None
                src = key
                if size and self.band[0] <= size <= self.band[1]:
                    src = prompts[alive[(alive.index(r) - 1) % len(alive)]]
                ids.append(self.answers[src][pos] if pos < len(self.answers[src]) else 0)
            lps = [[-0.1, t, "t%d" % t] for t in ids]
            out.append({"output_ids": ids, "meta_info": {"output_token_logprobs": lps,
                                                         "output_top_logprobs": [[e] for e in lps]}})
        return 200, out


def alone_of(answers):
    return [{"prompt_ids": list(k), "out": {"ids": list(v), "logprobs": [-0.1] * len(v),
                                            "top": [[[-0.1, t, "t%d" % t]] for t in v]}} for k, v in answers.items()]


ANSWERS = dict(((i,), [100 * i + j for j in range(24)]) for i in range(1, 31))
PROMPTS = [{"id": "p%02d" % i, "text": "prompt %d" % i} for i in range(1, 31)]
Q = {"max_tokens": 24, "top_k": 5, "load_max_batch": 64, "load_same": SAME, "load_tolerance": TOL}


@pytest.mark.parametrize("band", [(2, 8), (9, 16), (17, 17), (40, 41), (63, 64)])
def test_a_fault_confined_to_a_band_of_sizes_is_caught_and_named(band):
    server = BandFaultServer(ANSWERS, band)
    out = vq.run_load(server, PROMPTS, alone_of(ANSWERS), Q, {"max_running_requests": 4096})
    assert out["level"] == "degraded", out
    assert out["sizes"] == list(range(2, 65)) and out["requests"] == 3 == len(server.requests)
    # the first wrong token of each wrong generation was decoded inside the band, and the reason names it
    assert out["wrong_sizes"] and all(band[0] <= k <= band[1] for k in out["wrong_sizes"]), out["wrong_sizes"]
    assert "decoded at batch %d" % out["wrong_sizes"][0] in out["reasons"][0]
    rows, failures = q.load_gate(out)
    assert failures and "at batch %d, prompt" % out["wrong_sizes"][0] in failures[0]


def test_an_unchanged_server_passes_through_every_size_at_the_stated_cost():
    server = BandFaultServer(ANSWERS, (0, 0))
    out = vq.run_load(server, PROMPTS, alone_of(ANSWERS), Q, {"max_running_requests": 4096})
    assert out["level"] == "same" and out["reasons"] == [] and out["sizes_missed"] == []
    assert out["requests"] == 3 and out["tokens"] == 2202 and out["generations"] == 64 + 41 + 18
    assert [len(r) for r in server.requests] == [64, 41, 18]
    # the demo's CPU cap of 8: one batch, 59 generations need 8 passes
    out = vq.run_load(BandFaultServer(ANSWERS, (0, 0)), PROMPTS, alone_of(ANSWERS), dict(Q, load_max_batch=8),
                      {"max_running_requests": 4096})
    assert out["sizes"] == list(range(2, 9)) and out["passes"] == 8 and out["requests"] == 8
