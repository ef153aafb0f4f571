#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the controller (delegate_to: localhost): evaluates one host's gates against the
# inventory's limits and the accepted results measured the same way, writes the host's part of
# the run report and, when the host passed, adds this result to its baseline.

DOCUMENTATION = r"""
---
module: sglang_verify_gate
short_description: Evaluate an SGLang host's verification gates on the controller
description:
  - Reads the accepted results of the host measured the same way
    (C(<report_dir>/<host>/baseline-<key>.json); the key is the flag set, the ml_env generation
    and the benchmark protocol), evaluates the gates, writes
    C(<report_dir>/<run_id>/hosts/<host>.json) and, when the host passed, adds the result to the
    baseline.
  - The regression gates apply once C(min_samples) accepted results exist for the key; the
    reference is their median, the tolerance the ratio's share widened by C(spread_k) robust
    standard deviations of them (at most twice the ratio's share).
  - Never fails itself on a finding; it returns C(passed) and C(failures) for the role to act on.
  - In check mode the gates are evaluated and nothing is written.
options:
  host: {description: Inventory name of the verified host., type: str, required: true}
  run_id: {description: Identifier of this run (a timestamp)., type: str, required: true}
  report_dir: {description: Controller directory of reports., type: path, required: true}
  mode: {description: gate (quick) or full., type: str, default: full, choices: [gate, full]}
  result: {description: The sglang_probe module's result., type: dict, required: true}
  failures: {description: The sglang_probe module's failures., type: list, elements: str, default: []}
  expected_args: {description: The inventory flags (hashed into the baseline key)., type: dict, default: {}}
  bench: {description: "The single-stream protocol: prompt, max_tokens, runs, warmup.", type: dict, default: {}}
  isolated: {description: Whether the timed part ran while no other host of the run was measured., type: bool, default: false}
  gates: {description: "min_decode_tps, max_ttft_ms, regression_ratio, ttft_regression_ratio, min_samples, spread_k, fail_on_drift, fail_on_extra_flags.", type: dict, default: {}}
  update_baseline: {description: Add a passing result to the baseline., type: bool, default: true}
  baseline_window: {description: The baseline keeps the last N accepted results of its key., type: int, default: 10}
  task_gates: {description: "gsm8k_min_score, gsm8k_max_drop_se, spec_accept_min_ratio, spec_accept_min_length (docs/quality-gate.md).", type: dict, default: {}}
  quality_accept: {description: "true, or a list of host names: a new model revision whose numerics changed passes the quality gate without a task-accuracy check (docs/quality-gate.md).", type: raw, default: false}
  reset_baseline: {description: "true, or a list of host names: set this host's baseline for the current key aside (renamed, not deleted) before the gates.", type: raw, default: false}
  context: {description: Extra facts stored with the result (versions, profile)., type: dict, default: {}}
author: [sglang_deploy]
"""

EXAMPLES = r"""
- name: Evaluate the gates against the limits and the accepted results
  sglang.deploy.sglang_verify_gate:
    host: "{{ inventory_hostname }}"
    run_id: "{{ _run_id }}"
    report_dir: "{{ sglang_verify_report_dir }}"
    mode: gate
    result: "{{ _probe.result }}"
    failures: "{{ _probe.failures }}"
    expected_args: "{{ sglang_server_args }}"
    gates:
      min_decode_tps: 40
      regression_ratio: 0.9
  delegate_to: localhost
  register: _gate
"""

RETURN = r"""
passed: {description: Whether every gate passed., returned: always, type: bool}
failures: {description: Why the host failed, output quoted., returned: always, type: list, elements: str}
lines: {description: Short console table., returned: always, type: list, elements: str}
baseline: {description: The baseline compared against, if any., returned: always, type: dict}
baseline_key: {description: Key of the baseline (flag set, generation, protocol)., returned: always, type: str}
baseline_updated: {description: Whether this result was added to the baseline., returned: always, type: bool}
baseline_reset: {description: Path the forgotten baseline was renamed to, if any., returned: always, type: str}
host_report: {description: Path of the host's report file., returned: always, type: str}
flag_hash: {description: "The hash of the inventory flags (I(expected_args)), part of the baseline key.", returned: always, type: str}
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.verify.baseline import (
    accept,
    baseline_key,
    baseline_path,
    protocol,
    regression_gates,
    summarize,
    wants_reset,
)
from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import flag_hash, redact_flags
from ansible_collections.sglang.deploy.plugins.module_utils.quality.compare import accept_length_gate, gate as quality_gate
from ansible_collections.sglang.deploy.plugins.module_utils.verify.gsm8k import gsm8k_gate
from ansible_collections.sglang.deploy.plugins.module_utils.verify.gates import evaluate_gates, limit_value
from ansible_collections.sglang.deploy.plugins.module_utils.verify.render import RUN_ARGS, bus_cell, console_lines
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import read_json, write_json

RESET_HINT = "ansible-playbook playbooks/verify.yml -l %s -e sglang_verify_reset_baseline=true"


ARGUMENT_SPEC = dict(
    RUN_ARGS,
    host=dict(type="str", required=True),
    mode=dict(type="str", default="full", choices=["gate", "full"]),
    result=dict(type="dict", required=True),
    failures=dict(type="list", elements="str", default=[]),
    expected_args=dict(type="dict", default={}),
    bench=dict(type="dict", default={}),
    isolated=dict(type="bool", default=False),
    gates=dict(type="dict", default={}),
    update_baseline=dict(type="bool", default=True),
    baseline_window=dict(type="int", default=10),
    reset_baseline=dict(type="raw", default=False),
    quality_accept=dict(type="raw", default=False),
    task_gates=dict(type="dict", default={}),
    context=dict(type="dict", default={}),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    result = dict(p["result"])
    result["failures"] = list(p["failures"])
    fh_ = flag_hash(p["expected_args"])
    proto = protocol(p["mode"], p["bench"], p["isolated"])
    generation = result.get("generation")
    key = baseline_key(fh_, generation, proto)
    base_path = baseline_path(p["report_dir"], p["host"], key)
    baseline = read_json(base_path)
    if baseline is not None and not isinstance(baseline.get("accepted"), list):
        baseline = None  # a file of an older layout: start collecting again
    reset_to = ""
    if baseline is not None and wants_reset(p["reset_baseline"], p["host"]):
        reset_to = "%s.reset-%s" % (base_path, p["run_id"])
        if not module.check_mode:
            os.replace(base_path, reset_to)
        baseline = None
    passed, failures, rows = evaluate_gates(result, p["gates"])
    tg, quality = p["task_gates"], result.get("quality") or {}
    g_row, g_failures, decided = gsm8k_gate(result.get("gsm8k"), quality.get("reference_task"),
                                            limit_value(tg.get("gsm8k_min_score")),
                                            limit_value(tg.get("gsm8k_max_drop_se")))
    q_rows, q_failures = quality_gate(quality, wants_reset(p["quality_accept"], p["host"]), decided)
    a_rows, a_failures = accept_length_gate(quality, limit_value(tg.get("spec_accept_min_ratio")),
                                            limit_value(tg.get("spec_accept_min_length")))
    rows += q_rows + ([g_row] if g_row else []) + a_rows
    failures += q_failures + g_failures + a_failures
    passed = passed and not (q_failures or g_failures or a_failures)
    if result.get("single_stream") is not None:
        reg_rows, reg_failures = regression_gates(result["single_stream"], baseline, p["gates"],
                                                  RESET_HINT % p["host"])
        rows += reg_rows
        failures += reg_failures
        passed = passed and not reg_failures
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    flags = redact_flags(p["expected_args"])
    host_report = {
        "host": p["host"],
        "run_id": p["run_id"],
        "time": now,
        "mode": p["mode"],
        "flag_hash": fh_,
        "generation": generation,
        "protocol": proto,
        "baseline_key": key,
        "flags": flags,
        "context": p["context"],
        "passed": passed,
        "failures": failures,
        "gates": p["gates"],
        "gate_rows": rows,
        "baseline": baseline,
        "baseline_stats": {"decode_tps": summarize(baseline, "decode_tps"), "ttft_ms": summarize(baseline, "ttft_ms")},
        "result": result,
    }
    host_path = os.path.join(p["report_dir"], p["run_id"], "hosts", "%s.json" % p["host"])
    updated = False
    single = result.get("single_stream") or {}
    if not module.check_mode:
        write_json(host_path, host_report)
        if passed and p["update_baseline"] and single.get("decode_tps"):
            write_json(base_path, accept(baseline, {
                "run_id": p["run_id"], "time": now,
                "decode_tps": single.get("decode_tps"), "ttft_ms": single.get("ttft_ms"),
                "itl_ms_p50": single.get("itl_ms_p50"),
                "version": (result.get("server") or {}).get("version"),
            }, p["baseline_window"], {"host": p["host"], "key": key, "flag_hash": fh_, "generation": generation,
                                      "protocol": proto, "flags": flags}))
            updated = True
    lines = console_lines(p["host"], result, {"passed": passed, "failures": failures, "rows": rows})
    stats = host_report["baseline_stats"]["decode_tps"]
    lines.insert(5, "%-28s %s" % ("baseline (same protocol)", (
        "median %s tok/s of %d accepted runs (min %s, max %s)" % (stats["median"], stats["n"], stats["min"], stats["max"])
        if stats else "none yet: collecting (regression gates apply from %s accepted runs)" % (
            p["gates"].get("min_samples") or 3))))
    bus = (p["context"] or {}).get("bus")
    if bus:
        lines.insert(6, "%-28s %s" % ("bus (admission)", bus.get("text") or bus_cell(bus)))
    module.exit_json(changed=False, passed=passed, failures=failures, lines=lines, baseline=baseline or {},
                     baseline_key=key, baseline_updated=updated, baseline_reset=reset_to,
                     host_report=host_path, flag_hash=fh_)


if __name__ == "__main__":
    main()
