#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the controller (delegate_to: localhost): expands a tuning sweep into candidates,
# writes the sweep file of the host and says which candidates are still to run.

DOCUMENTATION = r"""
---
module: sglang_sweep_plan
short_description: Expand an SGLang tuning sweep into candidates and say which are still to run
description:
  - Expands the sweep (the host's current flags and environment, overlaid by I(base), the
    cartesian product of I(axes) and the explicit I(candidates)) into concrete candidates, the
    current configuration first as C(baseline), identical candidates once
    (plugins/module_utils/sweep/plan.py).
  - Writes C(<report_dir>/<sweep_name>/<host>/sweep.json) (the plan and the settings with secret
    flags redacted, an abbreviation resolved through I(catalog_options) first, the start of every
    run, this run's deadline), keeping the first run's start and an earlier ranking. Labels show a
    secret flag's value as C(<redacted>) (plugins/module_utils/sweep/redact.py).
  - "A candidate whose record there says it finished (any outcome) is in C(done), not in C(todo):
    a resumed sweep runs only the rest."
  - In check mode the plan is computed and nothing is written.
options:
  host: {description: Inventory name of the canary host., type: str, required: true}
  report_dir: {description: "Controller directory of sweeps (results go to <report_dir>/<sweep_name>/<host>/).", type: path, required: true}
  sweep_name: {description: Name of the sweep (a directory name)., type: str, required: true}
  current_args: {description: "The host's current flags (sglang_server_args: name -> value).", type: dict, required: true}
  current_env: {description: "The host's current environment (NAME -> value; sglang_flags_env, with the PCIe levers).", type: dict, default: {}}
  base: {description: "{args, env}: overrides applied to every candidate but the baseline (null removes).", type: dict, default: {}}
  axes: {description: "Axis -> list of values; a flag (dash form) or an environment variable (capitals), or a mapping value of linked settings.", type: dict, default: {}}
  candidates: {description: "Explicit candidates: list of {name, args, env} (null removes).", type: list, elements: dict, default: []}
  concurrency: {description: Concurrency levels of the throughput measurement (stored in the sweep file)., type: list, elements: int, default: [1, 4]}
  candidate_timeout: {description: Seconds one candidate's start may take., type: int, default: 600}
  time_budget: {description: Seconds the whole run may take; sets this run's deadline., type: int, default: 7200}
  keep_best: {description: Whether the play keeps the winner on the canary (stored in the sweep file)., type: bool, default: false}
  objective: {description: "What the report ranks by (sweep_objective): single_stream (single-stream decode tok/s) or throughput (output tok/s at I(objective_concurrency) within I(latency_target)); stored in the sweep file as settings.objective. An unknown objective is refused.", type: str, default: single_stream}
  objective_concurrency: {description: "The level of I(concurrency) whose figures the objective uses and the report shows (sweep_objective_concurrency); unset: the highest. A level that is not one of I(concurrency) is refused.", type: raw}
  latency_target: {description: "Limits at the objective's concurrency (sweep_latency_target): ttft_p99_ms (p99 TTFT) and itl_median_ms (median ITL), both optional, in ms. Refused with an unknown key, a value that is not a positive number, or an objective other than throughput.", type: dict, default: {}}
  filtered_port: {description: "The port roles/sglang_firewall filters (sglang_firewall_port); unset: the baseline's --port, else 30000 (the firewall's default). A candidate that sets --port to another port, or --host to another address than the baseline's (any spelling, or inside a list value), is refused before any candidate starts.", type: int}
  reveal: {description: "Return the candidates with their secret values (what the play launches): only for a task with no_log (roles/sglang_sweep, tasks/main.yml) and without I(secrets); refused otherwise. Otherwise candidates and todo show secret flags, secret options inside list values and credential variables (HF_TOKEN) as <redacted>, as sweep.json does, so -v shows no key.", type: bool, default: false}
  secrets: {description: "The secret values among the arguments (the sglang_sweep_secrets filter): Ansible masks them in everything the module returns and logs, its arguments (-vvv) included, also when an argument is refused before the module's own code runs. Without it the module masks the values it finds itself once its arguments are accepted.", type: list, elements: str, default: []}
  catalog_options: {description: "The host's flag catalog's option strings (sglang_flags_catalog.options): an abbreviation of a secret flag (api-k) is redacted as the flag it resolves to; empty: any prefix of a secret flag is.", type: list, elements: str, default: []}
author: [sglang_deploy]
"""

EXAMPLES = r"""
- name: Plan the sweep
  sglang.deploy.sglang_sweep_plan:
    host: "{{ inventory_hostname }}"
    report_dir: "{{ sglang_sweep_report_dir }}"
    sweep_name: "{{ sweep_name }}"
    current_args: "{{ sglang_server_args }}"
    current_env: "{{ sglang_flags_env }}"
    base: "{{ sweep_base }}"
    axes: "{{ sweep_axes }}"
    candidates: "{{ sweep_candidates }}"
  delegate_to: localhost
  register: _sglang_sweep_plan
"""

RETURN = r"""
sweep_dir: {description: "The host's results directory, <report_dir>/<sweep_name>/<host>.", returned: always, type: str}
candidates: {description: "Every candidate in order, baseline first: {key, label, args, env, changes, aliases}; secret values redacted unless I(reveal).", returned: always, type: list, elements: dict}
todo: {description: "The candidates not finished yet, in order (same items as candidates).", returned: always, type: list, elements: dict}
done: {description: Keys of the candidates finished in an earlier run., returned: always, type: list, elements: str}
budget: {description: "{time_budget_s, candidate_timeout_s, started (first run), run_started, deadline and deadline_epoch (this run's start + time_budget), worst_case_s (todo x candidate_timeout: before the offline rules prune)}.", returned: always, type: dict}
lines: {description: "Console lines (one per candidate, then the objective).", returned: always, type: list, elements: str}
objective: {description: "The objective as stored: {name, concurrency, latency_target}.", returned: always, type: dict}
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.objective import describe, resolve
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.plan import SweepPlanError, bind_problem, expand
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.redact import (
    plan_secrets,
    redact_candidate,
    redact_settings,
    secret_of,
)
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.store import SWEEP_ARGS, iso, read_sweep, sweep_dir, write_sweep
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.store import done as done_keys


ARGUMENT_SPEC = dict(
    SWEEP_ARGS,
    current_args=dict(type="dict", required=True),
    current_env=dict(type="dict", default={}),
    base=dict(type="dict", default={}),
    axes=dict(type="dict", default={}),
    candidates=dict(type="list", elements="dict", default=[]),
    concurrency=dict(type="list", elements="int", default=[1, 4]),
    candidate_timeout=dict(type="int", default=600),
    time_budget=dict(type="int", default=7200),
    keep_best=dict(type="bool", default=False),
    objective=dict(type="str", default="single_stream"),
    objective_concurrency=dict(type="raw"),
    latency_target=dict(type="dict", default={}),
    catalog_options=dict(type="list", elements="str", default=[]),
    filtered_port=dict(type="int"),
    reveal=dict(type="bool", default=False),
    # only the secret strings are no_log: a no_log dict option would mask each of its values (a
    # port, a path) wherever it occurs in the output (docs/security.md, "Secrets in Ansible's output")
    secrets=dict(type="list", elements="str", default=[], no_log=True),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    if not p["reveal"] or p["secrets"] or not module.no_log:
        module.no_log_values.update(plan_secrets(p["current_args"], p["current_env"], p["base"], p["axes"],
                                                 p["candidates"], p["catalog_options"]))
    if p["reveal"] and (p["secrets"] or not module.no_log):
        module.fail_json(msg="sweep %s: reveal returns the secret values the candidates launch with: only for a "
                             "task with no_log: true and without secrets (whose values Ansible masks in the "
                             "result)" % p["sweep_name"])
    try:
        directory = sweep_dir(p["report_dir"], p["sweep_name"], p["host"])
        try:
            objective = resolve(p["objective"], p["objective_concurrency"], p["latency_target"], p["concurrency"])
        except SweepPlanError as exc:
            raise SweepPlanError("%s (nothing was started)" % exc)
        cands = expand(p["current_args"], p["current_env"], p["base"], p["axes"], p["candidates"],
                       secret_of(p["catalog_options"]))
        problem = bind_problem(cands, p["filtered_port"])
        if problem:
            raise SweepPlanError(problem + " (nothing was started)")
    except SweepPlanError as exc:
        module.fail_json(msg="sweep %s: %s" % (p["sweep_name"], exc))
    done = done_keys(directory, [c["key"] for c in cands])
    todo = [c for c in cands if c["key"] not in done]
    now = time.time()
    previous = read_sweep(directory) or {}
    deadline = now + p["time_budget"]
    worst = len(todo) * p["candidate_timeout"]
    budget = {"time_budget_s": p["time_budget"], "candidate_timeout_s": p["candidate_timeout"],
              "started": previous.get("started") or iso(now), "run_started": iso(now),
              "deadline": iso(deadline), "deadline_epoch": int(deadline), "worst_case_s": worst}
    data = {
        "sweep_name": p["sweep_name"], "host": p["host"],
        "settings": redact_settings({"base": p["base"], "axes": p["axes"], "candidates": p["candidates"],
                                     "concurrency": p["concurrency"], "keep_best": p["keep_best"],
                                     "objective": objective},
                                    p["catalog_options"]),
        "started": budget["started"], "runs": list(previous.get("runs") or []) + [budget["run_started"]],
        "budget": budget,
        "candidates": [redact_candidate(c, p["catalog_options"]) for c in cands],
    }
    if previous.get("summary") is not None:
        data["summary"] = previous["summary"]
    if not module.check_mode:
        write_sweep(directory, data)
    lines = ["sweep %s on %s: %d candidate(s), %d done earlier, %d to run (starts: at most %d s if each one "
             "the rules let through takes its whole timeout); budget %d s, until %s" % (
                 p["sweep_name"], p["host"], len(cands), len(done), len(todo), worst, p["time_budget"],
                 budget["deadline"])]
    for c in cands:
        lines.append("  %-4s %s  %s%s" % ("done" if c["key"] in done else "todo", c["key"], c["label"],
                                          " (= %s)" % ", ".join(c["aliases"]) if c["aliases"] else ""))
    lines.append(describe(objective))
    if not p["reveal"]:  # what -v shows: as sweep.json keeps them
        cands = [redact_candidate(c, p["catalog_options"]) for c in cands]
        todo = [c for c in cands if c["key"] not in done]
    module.exit_json(changed=False, sweep_dir=directory, candidates=cands, todo=todo, done=done,
                     budget=budget, lines=lines, objective=objective)


if __name__ == "__main__":
    main()
