# -*- coding: utf-8 -*-
# The requests of the quality check that decode several prompts at once, through SGLang's native
# /generate (0.5.23: input_ids as a list, one sampling_params per prompt, return_logprob,
# top_logprobs_num, return_text_in_logprobs; meta_info.output_token_logprobs and
# output_top_logprobs are [logprob, token id, text] per position). Used on the host by the check at
# load (plugins/module_utils/quality/run.py) and by the serving sentinel of the watchdog
# (roles/sglang_watchdog/files/sglang_watchdog_run.py), which is why it imports nothing but the
# comparison (plugins/module_utils/quality/load.py) and the quoting of verify/output.py: the
# watchdog installs these beside it. ``client``: anything with post_json(path, body) ->
# (status, decoded JSON), as plugins/module_utils/verify/client.py's Client.
"""Batches of greedy generations of staggered lengths, each against its reference."""

from ansible_collections.sglang.deploy.plugins.module_utils.quality import load
from ansible_collections.sglang.deploy.plugins.module_utils.verify.output import quote


class QualityError(Exception):
    """A request the quality check needs did not answer as SGLang's /generate does."""


def generate_one(client, body):
    """The answer of one /generate, or QualityError naming what came instead."""
    status, resp = client.post_json("/generate", body)
    if status != 200 or not isinstance(resp, dict) or "meta_info" not in resp:
        raise QualityError("/generate answered %s: %s" % (status, quote((resp or {}).get("error") or resp, 300)))
    return resp


def output_logprobs(meta, out):
    """{ids, logprobs, top} of a generation's output tokens from its meta_info."""
    lps = meta.get("output_token_logprobs") or []
    tops = meta.get("output_top_logprobs") or []
    return {"ids": [int(x) for x in out], "logprobs": [e[0] for e in lps],
            "top": [[[t[0], int(t[1])] + ([t[2]] if len(t) > 2 else []) for t in (pos or [])] for pos in tops]}


def output_ids(resp):
    """The output token ids of one answer (from its logprobs where output_ids is absent)."""
    out = resp.get("output_ids")
    if out is None:
        out = [int(e[1]) for e in resp["meta_info"].get("output_token_logprobs") or []]
    return out


def generate_batch(client, prompt_ids, max_tokens, top_k):
    """One /generate with several prompts (a list of input_ids): SGLang's scheduler receives
    them together and decodes them in one batch. ``max_tokens``: one for all, or one per prompt
    (a list of sampling_params: generations of staggered lengths). Each generation's {ids,
    logprobs, top}."""
    params = [{"temperature": 0, "max_new_tokens": int(n)} for n in max_tokens] if isinstance(max_tokens, list) \
        else {"temperature": 0, "max_new_tokens": int(max_tokens)}
    status, resp = client.post_json("/generate", {
        "input_ids": [list(p) for p in prompt_ids], "sampling_params": params,
        "return_logprob": True, "top_logprobs_num": int(top_k), "return_text_in_logprobs": True})
    if status != 200 or not isinstance(resp, list) or len(resp) != len(prompt_ids):
        raise QualityError("/generate of a batch of %d answered %s: %s" % (
            len(prompt_ids), status, quote(resp.get("error") if isinstance(resp, dict) else resp, 300)))
    return [output_logprobs(r["meta_info"], output_ids(r)) for r in resp]


def run_staggered(client, refs, lengths, top_k, margin):
    """One batch of generations of staggered lengths (plugins/module_utils/quality/load.py,
    staggered()): ``refs`` per prompt {prompt_ids, out: {ids, logprobs, top}} decoded alone (or
    recorded); ``lengths`` the batch's max_new_tokens. Returns (rows, the lengths the generations
    had as planned): each row compare_generation()'s, with ``index`` (the prompt's) and
    ``batch``, the decode batch size at its first divergence."""
    plan = load.assign(lengths, [len(r["out"]["ids"]) for r in refs])
    got = generate_batch(client, [refs[i]["prompt_ids"] for i, _, _ in plan], [n for _, n, _ in plan], top_k)
    sizes = load.stagger_sizes([e for _, _, e in plan])
    rows = []
    for (i, n, _), gen in zip(plan, got):
        # the reference as far as this generation was asked to go
        ref = dict((key, (refs[i]["out"].get(key) or [])[:n]) for key in ("ids", "logprobs", "top"))
        row = load.compare_generation(ref, gen, margin)
        row.update(index=i, batch=load.first_wrong_size(row, sizes))
        rows.append(row)
    return rows, [e for _, _, e in plan]
