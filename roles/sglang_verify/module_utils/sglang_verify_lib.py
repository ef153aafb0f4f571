# -*- coding: utf-8 -*-
# What this file held is split by job: sglang_verify_stream (SSE, stream figures),
# sglang_verify_stats (percentiles, summaries, bench_serving output), sglang_verify_output
# (garbage, matching), sglang_verify_drift, sglang_verify_gates, sglang_verify_render, and the
# flag model (module_utils/sglang_flags_model.py at the repository's root: secret flags, the
# flag hash). Only the names that code outside this role still imports from here remain.
"""Former home of the sglang_verify helpers; see the modules named above."""

from __future__ import absolute_import, division, print_function

from ansible.module_utils.sglang_flags_model import SECRET_FLAGS, flag_hash  # noqa: F401

__metaclass__ = type
