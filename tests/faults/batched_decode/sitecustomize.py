# -*- coding: utf-8 -*-
"""A fault for the tests, never for a real host: decode batches of several requests get each
other's logits, while a batch of one, and every prefill, is left as it is.

It stands for the kernels that are wrong only at some batch shapes (docs/quality-gate.md,
Quality at load): the server starts, answers every question asked alone right, and answers
wrong as soon as requests share a decode step. Put on the server's PYTHONPATH
(molecule/default/tests/test_quality_at_load.py copies this directory onto the host and sets
PYTHONPATH in sglang_server_env); Python imports sitecustomize at start-up in every process of
the server, and this one wraps SGLang 0.5.23's LogitsProcessor.forward
(sglang/srt/layers/logits_processor.py) once that module is imported: in a decode batch of more
than one request, row i gets row i-1's logits (a batch-indexing bug).

Which batches, from the server's environment (sglang_server_env):
- SGLANG_TEST_FAULT_BATCH="lo-hi": only decode batches of lo to hi requests (one band of buckets,
  as a tactic tuned per problem size is); unset: every decode batch of more than one;
- SGLANG_TEST_FAULT_FILE=<path>[:<path>...]: on only while one of those files exists, read at
  every decode step (the fault switched on and off at run time, no restart:
  molecule/rollout/tests/test_sentinel.py, whose first path lies in the unit's PrivateTmp=, which
  a restart clears, and whose second survives restarts); a band written in the first file found
  ("lo-hi") wins over the environment's. Unset: always on.
"""

import importlib.abc
import importlib.util
import os
import sys

TARGET = "sglang.srt.layers.logits_processor"


def band(text, default=(2, 1 << 30)):
    """(lo, hi) of "lo-hi" (or one number), the default where the text names none."""
    text = (text or "").strip()
    if not text:
        return default
    lo, _, hi = text.partition("-")
    try:
        return max(2, int(lo)), int(hi or lo)
    except ValueError:
        return default


def active(size, env=os.environ):
    """The band this decode batch of ``size`` requests is wrong in, or None."""
    lo, hi = band(env.get("SGLANG_TEST_FAULT_BATCH"))
    paths = env.get("SGLANG_TEST_FAULT_FILE")
    if paths:
        for path in paths.split(os.pathsep):
            try:
                with open(path) as src:
                    lo, hi = band(src.read(), (lo, hi))
                break
            except OSError:
                continue
        else:
            return None
    return (lo, hi) if lo <= size <= hi else None


def _patch(module):
    cls = module.LogitsProcessor
    original = cls.forward

    def forward(self, input_ids, hidden_states, lm_head, logits_metadata, *args, **kwargs):
        out = original(self, input_ids, hidden_states, lm_head, logits_metadata, *args, **kwargs)
        mode = getattr(logits_metadata, "forward_mode", None)
        logits = getattr(out, "next_token_logits", None)
        if mode is not None and mode.is_decode() and logits is not None and logits.shape[0] > 1 \
                and active(int(logits.shape[0])):
            out.next_token_logits = logits.roll(1, dims=0)
        return out

    cls.forward = forward


class _Finder(importlib.abc.MetaPathFinder):
    """Finds TARGET as the other finders do, and patches it once its code ran."""

    def find_spec(self, name, path, target=None):
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Finder())
