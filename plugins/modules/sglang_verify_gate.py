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
  - The gates are the registry's (plugins/module_utils/verify/registry.py), each with its
    settings under its name in I(gates); every gate returns one verdict shape.
  - The regression gates apply once C(baseline_min_samples) accepted results exist for their key;
    the reference is their median, the tolerance the ratio's share widened by
    C(regression_spread_k) robust standard deviations of them (at most twice the ratio's share).
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
  gates: {description: "Each registered gate's settings, by gate name (plugins/module_utils/verify/registry.py; docs/architecture.md, The registry of gates): a closed dict of closed dicts, an unknown gate or key fails the task. Each key is the role option sglang_verify_<key>.", type: dict, default: {}}
  sweep: {description: "The concurrency sweep's protocol (requests_per_level, input_len, output_len): with the tool that measured, it keys the throughput gate's accepted figures.", type: dict, default: {}}
  update_baseline: {description: Add a passing result to the baseline., type: bool, default: true}
  baseline_window: {description: The baseline keeps the last N accepted results of its key., type: int, default: 10}
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
      correctness: {min_decode_tps: 40}
      speed_regression: {regression_ratio: 0.9}
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
verdicts: {description: "One verdict per gate that judged (level same, numerics_changed, passed, degraded, failed or not_applicable; reasons; figures; message), in registry order.", returned: always, type: list, elements: dict}
baselines: {description: "Per gate with accepted history: its key, whether this result was added, where a reset moved the old one.", returned: always, type: dict}
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.verify import registry
from ansible_collections.sglang.deploy.plugins.module_utils.verify.baseline import (
    accept,
    baseline_key,
    baseline_path,
    summarize,
    wants_reset,
)
from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import flag_hash, redact_flags
from ansible_collections.sglang.deploy.plugins.module_utils.verify.render import RUN_ARGS, bus_cell, console_lines
from ansible_collections.sglang.deploy.plugins.module_utils.verify.verdict import outcome
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
    sweep=dict(type="dict", default={}),
    isolated=dict(type="bool", default=False),
    gates=dict(type="dict", default={}),
    update_baseline=dict(type="bool", default=True),
    baseline_window=dict(type="int", default=10),
    reset_baseline=dict(type="raw", default=False),
    context=dict(type="dict", default={}),
)


def histories(module, ctx, settings, fh_, generation):
    """{gate: {key, path, protocol, baseline, reset}} of the gates that keep accepted figures."""
    p = module.params
    out = {}
    for gate in registry.REGISTRY:
        proto = gate.protocol(ctx, settings[gate.name]) if gate.protocol else None
        if proto is None:
            continue
        key = baseline_key(fh_, generation, proto)
        path = baseline_path(p["report_dir"], p["host"], key)
        base = read_json(path)
        if base is not None and not isinstance(base.get("accepted"), list):
            base = None  # a file of an older layout: start collecting again
        reset_to = ""
        if base is not None and wants_reset(p["reset_baseline"], p["host"]):
            reset_to = "%s.reset-%s" % (path, p["run_id"])
            if not module.check_mode:
                os.replace(path, reset_to)
            base = None
        out[gate.name] = {"key": key, "path": path, "protocol": proto, "baseline": base, "reset": reset_to}
    return out


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    try:
        settings = registry.settings(p["gates"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    result = dict(p["result"])
    result["failures"] = list(p["failures"])
    fh_ = flag_hash(p["expected_args"])
    generation = result.get("generation")
    ctx = {"result": result, "host": p["host"], "mode": p["mode"], "bench": p["bench"], "sweep": p["sweep"],
           "isolated": p["isolated"], "reset_hint": RESET_HINT % p["host"]}
    hist = histories(module, ctx, settings, fh_, generation)
    verdicts = registry.evaluate(dict(ctx, baselines=dict((g, h["baseline"]) for g, h in hist.items())), settings)
    passed, failures, rows = outcome(verdicts)
    speed = hist["speed_regression"]
    baseline = speed["baseline"]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    flags = redact_flags(p["expected_args"])
    host_report = {
        "host": p["host"],
        "run_id": p["run_id"],
        "time": now,
        "mode": p["mode"],
        "flag_hash": fh_,
        "generation": generation,
        "protocol": speed["protocol"],
        "baseline_key": speed["key"],
        "flags": flags,
        "context": p["context"],
        "passed": passed,
        "failures": failures,
        "gates": settings,
        "verdicts": verdicts,
        "gate_rows": rows,
        "baseline": baseline,
        "baseline_stats": {"decode_tps": summarize(baseline, "decode_tps"), "ttft_ms": summarize(baseline, "ttft_ms")},
        "baselines": dict((g, {"key": h["key"], "protocol": h["protocol"]}) for g, h in hist.items()),
        "result": result,
    }
    host_path = os.path.join(p["report_dir"], p["run_id"], "hosts", "%s.json" % p["host"])
    updated = {}
    if not module.check_mode:
        write_json(host_path, host_report)
        for gate in registry.REGISTRY:
            h = hist.get(gate.name)
            rec = gate.record(ctx, settings[gate.name]) if h and passed and p["update_baseline"] else None
            if rec:
                write_json(h["path"], accept(h["baseline"], dict(rec, run_id=p["run_id"], time=now), p["baseline_window"], {
                    "host": p["host"], "key": h["key"], "flag_hash": fh_, "generation": generation,
                    "protocol": h["protocol"], "flags": flags}))
                updated[gate.name] = True
    lines = console_lines(p["host"], result, {"passed": passed, "failures": failures, "rows": rows})
    stats = host_report["baseline_stats"]["decode_tps"]
    need = settings["speed_regression"]["baseline_min_samples"]
    lines.insert(5, "%-28s %s" % ("baseline (same protocol)", (
        "median %s tok/s of %d accepted runs (min %s, max %s)" % (stats["median"], stats["n"], stats["min"], stats["max"])
        if stats else "none yet: collecting (regression gates apply from %s accepted runs)" % (need or 3))))
    bus = (p["context"] or {}).get("bus")
    if bus:
        lines.insert(6, "%-28s %s" % ("bus (admission)", bus.get("text") or bus_cell(bus)))
    module.exit_json(changed=False, passed=passed, failures=failures, lines=lines, baseline=baseline or {},
                     baseline_key=speed["key"], baseline_updated=bool(updated.get("speed_regression")),
                     baseline_reset=speed["reset"], host_report=host_path, flag_hash=fh_, verdicts=verdicts,
                     baselines=dict((g, {"key": h["key"], "updated": bool(updated.get(g)), "reset": h["reset"]})
                                    for g, h in hist.items()))


if __name__ == "__main__":
    main()
