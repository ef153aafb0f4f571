#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the controller (delegate_to: localhost): evaluates one host's gates against the
# inventory's limits and the last accepted result, writes the host's part of the run report
# and, when the host passed, makes this result the new baseline for its flag set.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_verify_gate
short_description: Evaluate an SGLang host's verification gates on the controller
description:
  - Reads the last accepted result of the host for the same flag set
    (C(<report_dir>/<host>/baseline-<flaghash>.json)), evaluates the gates, writes
    C(<report_dir>/<run_id>/hosts/<host>.json) and, when the host passed, the new baseline.
  - Never fails itself on a finding; it returns C(passed) and C(failures) for the role to act on.
  - In check mode the gates are evaluated and nothing is written.
options:
  host: {description: Inventory name of the verified host., type: str, required: true}
  run_id: {description: Identifier of this run (a timestamp)., type: str, required: true}
  report_dir: {description: Controller directory of reports., type: path, required: true}
  mode: {description: gate (quick) or full., type: str, default: full}
  result: {description: The sglang_probe module's result., type: dict, required: true}
  failures: {description: The sglang_probe module's failures., type: list, elements: str, default: []}
  expected_args: {description: The inventory flags (hashed to key the baseline)., type: dict, default: {}}
  gates: {description: "min_decode_tps, max_ttft_ms, regression_ratio, ttft_regression_ratio, fail_on_drift, fail_on_extra_flags.", type: dict, default: {}}
  update_baseline: {description: Make a passing result the new baseline., type: bool, default: true}
  baseline_window: {description: "The baseline figure is the median of the last N accepted results (1 = the last one only).", type: int, default: 3}
  context: {description: Extra facts stored with the result (versions, profile)., type: dict, default: {}}
author: [sglang_deploy]
"""

RETURN = r"""
passed: {description: Whether every gate passed., returned: always, type: bool}
failures: {description: Why the host failed, output quoted., returned: always, type: list, elements: str}
lines: {description: Short console table., returned: always, type: list, elements: str}
baseline: {description: The baseline compared against, if any., returned: always, type: dict}
baseline_updated: {description: Whether this result became the baseline., returned: always, type: bool}
host_report: {description: Path of the host's report file., returned: always, type: str}
"""

import datetime
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.sglang_verify_lib import (
    SECRET_FLAGS,
    console_lines,
    evaluate_gates,
    flag_hash,
    next_baseline,
)


def _write_json(path, data):
    d = os.path.dirname(path)
    if not os.path.isdir(d):
        os.makedirs(d)
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True, default=str)
        fh.write("\n")
    os.replace(tmp, path)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str", required=True),
            run_id=dict(type="str", required=True),
            report_dir=dict(type="path", required=True),
            mode=dict(type="str", default="full", choices=["gate", "full"]),
            result=dict(type="dict", required=True),
            failures=dict(type="list", elements="str", default=[]),
            expected_args=dict(type="dict", default={}),
            gates=dict(type="dict", default={}),
            update_baseline=dict(type="bool", default=True),
            baseline_window=dict(type="int", default=3),
            context=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    fh_ = flag_hash(p["expected_args"])
    base_path = os.path.join(p["report_dir"], p["host"], "baseline-%s.json" % fh_)
    baseline = None
    if os.path.exists(base_path):
        try:
            with open(base_path) as fh:
                baseline = json.load(fh)
        except ValueError:
            baseline = None
    result = dict(p["result"])
    result["failures"] = list(p["failures"])
    passed, failures, rows = evaluate_gates(result, p["gates"], baseline)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    flags = dict((k, "<redacted>" if k in SECRET_FLAGS else v) for k, v in p["expected_args"].items())
    host_report = {
        "host": p["host"],
        "run_id": p["run_id"],
        "time": now,
        "mode": p["mode"],
        "flag_hash": fh_,
        "flags": flags,
        "context": p["context"],
        "passed": passed,
        "failures": failures,
        "gates": p["gates"],
        "gate_rows": rows,
        "baseline": baseline,
        "result": result,
    }
    host_path = os.path.join(p["report_dir"], p["run_id"], "hosts", "%s.json" % p["host"])
    updated = False
    single = result.get("single_stream") or {}
    if not module.check_mode:
        _write_json(host_path, host_report)
        if passed and p["update_baseline"] and single.get("decode_tps"):
            _write_json(base_path, next_baseline(baseline, {
                "run_id": p["run_id"], "time": now, "mode": p["mode"],
                "decode_tps": single.get("decode_tps"), "ttft_ms": single.get("ttft_ms"),
                "itl_ms_p50": single.get("itl_ms_p50"),
                "version": (result.get("server") or {}).get("version"),
            }, p["baseline_window"], {"host": p["host"], "flag_hash": fh_, "flags": flags}))
            updated = True
    lines = console_lines(p["host"], result, {"passed": passed, "failures": failures, "rows": rows})
    if baseline:
        lines.insert(5, "%-28s %s tok/s, %s ms (run %s)" % (
            "last accepted", baseline.get("decode_tps"), baseline.get("ttft_ms"), baseline.get("run_id")))
    module.exit_json(changed=False, passed=passed, failures=failures, lines=lines, baseline=baseline or {},
                     baseline_updated=updated, host_report=host_path, flag_hash=fh_)


if __name__ == "__main__":
    main()
