# -*- coding: utf-8 -*-
# The quality check of the sglang_probe module, on the host: asks the server through SGLang's
# native /generate (0.5.23: text or input_ids, sampling_params, return_logprob,
# logprob_start_len, top_logprobs_num, return_text_in_logprobs; meta_info.input_token_logprobs
# and input_top_logprobs are [logprob, token id, text] per position), compares with the
# reference the host's last-known-good release keeps (plugins/module_utils/release/state.py) and
# writes this server's own reference as a candidate that sglang_release attaches to the next
# release it records. The comparison itself is plugins/module_utils/quality/compare.py.
"""Greedy continuations and teacher-forced logprobs of a prompt set, against a reference."""

import json
import os
import time

from ansible_collections.sglang.deploy.plugins.module_utils.quality import load
from ansible_collections.sglang.deploy.plugins.module_utils.quality.batch import (  # noqa: F401 (QualityError: sglang_probe's)
    QualityError, generate_one, output_ids, output_logprobs, generate_batch, run_staggered)
from ansible_collections.sglang.deploy.plugins.module_utils.quality.compare import compare_prompt, describe_worst, judge, prompt_set_hash, summarize
from ansible_collections.sglang.deploy.plugins.module_utils.release.state import current_quality
from ansible_collections.sglang.deploy.plugins.module_utils.verify.output import quote
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import read_json, write_text

FORMAT = 1
MODEL_STAMP = ".sglang-deploy-model.json"


def free_run(client, text, max_tokens, spec=None, top_k=0):
    """(prompt token ids, greedy continuation ids, the continuation's logprobs and top-k) of one
    prompt alone. With speculative decoding the server's meta_info counts verify steps
    (spec_verify_ct): added to ``spec`` [tokens, steps]."""
    resp = generate_one(client, {
        "text": text, "sampling_params": {"temperature": 0, "max_new_tokens": int(max_tokens)},
        "return_logprob": True, "logprob_start_len": 0, "top_logprobs_num": int(top_k),
        "return_text_in_logprobs": True})
    meta = resp["meta_info"]
    prompt_ids = [int(e[1]) for e in meta.get("input_token_logprobs") or []]
    out = output_ids(resp)
    if not prompt_ids:
        raise QualityError("/generate returned no input token ids for %s" % quote(text, 80))
    if spec is not None and meta.get("spec_verify_ct"):
        spec[0] += int(meta.get("completion_tokens") or len(out))
        spec[1] += int(meta["spec_verify_ct"])
    return prompt_ids, [int(x) for x in out], output_logprobs(meta, out)


def run_load(client, prompts, alone, q, server_info):
    """The load part of the quality result (plugins/module_utils/quality/load.py): the
    prompts decoded again in batches of staggered lengths that pass through every batch size from
    the largest down to 2, each generation against its run alone (``alone``: per prompt,
    prompt_ids and the {ids, logprobs, top} of its greedy run); repeated until the largest size
    has seen the generations the detection probability needs."""
    t0 = time.time()
    n_tok, k = int(q.get("max_tokens") or 24), int(q.get("top_k") or 5)
    fault_rate = float(q.get("load_fault_rate") or 0.05)
    generations = load.generations_for(fault_rate, float(q.get("load_detect_probability") or 0.95))
    try:
        sizes, how = load.batch_sizes(server_info, q.get("load_batch_sizes"), q.get("load_max_batch"))
    except load.NotApplicable as exc:
        return dict(load.not_applicable(exc), seconds=round(time.time() - t0, 2))
    largest = max(sizes)
    passes = max(1, -(-generations // largest))
    margin = (q.get("load_tolerance") or {}).get("divergence_margin", 0.0)
    rows, had, requests, tokens = [], [], 0, 0
    for _ in range(passes):
        for lengths in load.staggered(largest, load.longest_usable([len(a["out"]["ids"]) for a in alone])):
            got, lens = run_staggered(client, alone, lengths, k, margin)
            requests += 1
            tokens += sum(lens)
            had.append(lens)
            for row in got:
                i = row["index"]
                row["prompt"] = {"id": prompts[i].get("id") or "p%02d" % i, "text": prompts[i]["text"]}
            rows += got
    judged = load.judge_size(largest, rows, q.get("load_same"), q.get("load_tolerance"))
    out = load.summarize_staggered(judged, load.coverage(had, largest, fault_rate), fault_rate, passes)
    out.update(largest=largest, sizes_from=how, requests=requests, tokens=tokens, seconds=round(time.time() - t0, 2))
    return out


def score(client, prompt_ids, ids, top_k):
    """Teacher forcing: the logprob of each of ``ids`` after ``prompt_ids`` and the top-k there."""
    if not ids:
        return {"logprobs": [], "top": [], "texts": []}
    resp = generate_one(client, {
        "input_ids": list(prompt_ids) + list(ids), "sampling_params": {"temperature": 0, "max_new_tokens": 0},
        "return_logprob": True, "logprob_start_len": len(prompt_ids), "top_logprobs_num": int(top_k),
        "return_text_in_logprobs": True})
    meta = resp["meta_info"]
    lps = (meta.get("input_token_logprobs") or [])[-len(ids):]
    tops = (meta.get("input_top_logprobs") or [])[-len(ids):]
    if len(lps) != len(ids) or [int(e[1]) for e in lps] != [int(x) for x in ids]:
        raise QualityError("/generate scored %d input tokens, not the %d given (logprob_start_len %d)" % (
            len(lps), len(ids), len(prompt_ids)))
    return {"logprobs": [e[0] for e in lps], "texts": [e[2] if len(e) > 2 else None for e in lps],
            "top": [[[t[0], int(t[1])] + ([t[2]] if len(t) > 2 else []) for t in (pos or [])] for pos in tops]}


def model_identity(model_path):
    """The model the server loads: its path and, where model_files stamped it, the revision."""
    stamp = read_json(os.path.join(model_path, MODEL_STAMP)) if model_path else None
    return {"path": model_path or "", "revision": (stamp or {}).get("revision") or ""}


def _same_model(a, b):
    if a.get("revision") and b.get("revision"):
        return a["revision"] == b["revision"]
    return a.get("path") == b.get("path")


def reference(q):
    """(reference, what it is the reference of): the current release's (the deployed hosts), or,
    with ``reference_path``, the one kept in that file (an endpoint verified by its URL,
    playbooks/verify_endpoint.yml), named by when it was recorded. None where there is none yet."""
    if not q.get("reference_path"):
        return current_quality(q["release_dir"], q["release_fact"])
    data = read_json(q["reference_path"])
    if not isinstance(data, dict):
        return None, None
    return data, data.get("kept_since") or data.get("recorded_at") or os.path.basename(q["reference_path"])


def run_quality(client, q, model_path, server, check_mode=False, task=None, server_info=None):
    """The ``quality`` part of the probe's result. ``q``: prompts, max_tokens, top_k, same,
    tolerance, reset, release_dir, release_fact (or reference_path), candidate_path. ``task``: this run's task
    accuracy ({"gsm8k": {...}}), kept with the candidate; the reference's comes back as
    ``reference_task``, and the speculative accept length of the greedy runs beside the
    reference's."""
    prompts = [p if isinstance(p, dict) else {"text": str(p)} for p in q.get("prompts") or []]
    n_tok, k = int(q.get("max_tokens") or 24), int(q.get("top_k") or 5)
    pset = prompt_set_hash(prompts, n_tok, k)
    t0 = time.time()
    ref, ref_of = (None, None) if q.get("reset") else reference(q)
    model = model_identity(model_path)
    out = {"prompt_set": pset, "prompts": len(prompts), "max_tokens": n_tok, "top_k": k, "model": model,
           "reference_of": ref_of, "requests": 0}
    if ref is not None and ref.get("prompt_set") != pset:
        out.update(level="incomparable", note="the reference of release %s was recorded with another prompt set, "
                   "length or k (%s, now %s)" % (ref_of, ref.get("prompt_set"), pset))
        ref = None
        compare = False
    else:
        compare = ref is not None
    own, per_prompt, spec, alone = [], [], [0, 0], []
    for i, prompt in enumerate(prompts):
        prompt_ids, free_ids, free_out = free_run(client, prompt["text"], n_tok, spec, k)
        alone.append({"prompt_ids": prompt_ids, "out": free_out})
        out["requests"] += 1
        entry = (ref.get("entries") or [])[i] if compare and i < len(ref.get("entries") or []) else None
        scored = None
        if entry is not None:
            scored = score(client, entry["prompt_ids"], entry["ids"], k)
            out["requests"] += 1
            per_prompt.append(compare_prompt(entry, scored, free_ids if prompt_ids == entry["prompt_ids"] else None))
        if scored is None or free_ids != entry["ids"] or prompt_ids != entry["prompt_ids"]:
            scored = score(client, prompt_ids, free_ids, k)
            out["requests"] += 1
        own.append(dict(scored, id=prompt.get("id") or "p%02d" % i, prompt_ids=prompt_ids, ids=free_ids))
    if compare:
        summary, changed = summarize(per_prompt), not _same_model(model, ref.get("model") or {})
        level, reasons = judge(summary, q.get("same"), q.get("tolerance"), changed)
        out.update(level=level, reasons=reasons, summary=summary, model_changed=changed,
                   per_prompt=[dict((kk, v) for kk, v in r.items() if kk != "_sums") for r in per_prompt],
                   worst=describe_worst(per_prompt, prompts))
    elif "level" not in out:
        out.update(level="recorded", note="no reference yet%s: this server's answers become the reference of the "
                   "release it is recorded with" % (" (reset on purpose)" if q.get("reset") else ""))
    if q.get("load"):
        out["load"] = run_load(client, prompts, alone, q, server_info)
        out["requests"] += out["load"]["requests"]
    out["spec_accept_length"] = round(spec[0] / float(spec[1]), 3) if spec[1] else None
    if ref is not None:
        out["reference_spec_accept_length"] = ref.get("spec_accept_length")
        out["reference_task"] = ref.get("task") or {}
    # the candidate: an unchanged server keeps the reference it matched (no walk away from it
    # through many small steps); anything else is recorded from this server's own answers
    if out["level"] == "same":
        candidate = dict(ref, kept_since=ref.get("kept_since") or ref.get("recorded_at"))
    else:
        candidate = {"format": FORMAT, "prompt_set": pset, "max_tokens": n_tok, "top_k": k, "model": model,
                     "server": server, "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     "spec_accept_length": out["spec_accept_length"], "entries": own}
    if task:
        candidate["task"] = dict(candidate.get("task") or {}, **task)
    out["seconds"] = round(time.time() - t0, 2)
    if q.get("candidate_path") and not check_mode:
        write_text(q["candidate_path"], json.dumps(candidate, sort_keys=True, separators=(",", ":")) + "\n", 0o600)
        out["candidate"] = q["candidate_path"]
    return out
