#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the controller (delegate_to: localhost): ranks a host's sweep candidates and writes
# the sweep's Markdown, JSON summary and the winner's group_vars snippet.

DOCUMENTATION = r"""
---
module: sglang_sweep_report
short_description: Ranking, report and winner's snippet of one host's SGLang sweep
description:
  - Ranks the working candidates of C(<report_dir>/<sweep_name>/<host>/sweep.json) by the
    objective the plan stored there (C(settings.objective), else C(single_stream)), their
    records' single-stream decode tok/s, or under C(throughput) their output tok/s at the
    objective's concurrency among those within its latency target; groups those within noise of
    each other as ties (plugins/module_utils/sweep/rank.py, sweep/objective.py).
  - Ranks the same records by the other objective too (C(other_objective)), what the choice not
    declared would pick; the winner (and what a kept sweep rolls) is the declared objective's.
  - Writes C(sweep.md), C(sweep-summary.json) and C(winner.yml) (a group_vars snippet with only
    the keys that differ from the current profile) there, and the ranking into C(sweep.json)
    (C(summary); C(files/plot_sweep.py) plots C(sweep.png) and C(sweep-objective.png) from either JSON file).
  - Candidates without a finished record are listed as C(not run) or C(interrupted).
  - In check mode everything is computed and nothing is written.
options:
  host: {description: Inventory name of the canary host., type: str, required: true}
  report_dir: {description: "Controller directory of sweeps, as given to sglang_sweep_plan.", type: path, required: true}
  sweep_name: {description: Name of the sweep., type: str, required: true}
  tie_k: {description: "Robust standard deviations (1.4826 x MAD) on each side of a median.", type: float, default: 3.0}
  noise_floor: {description: "Minimum relative half-width of a median's interval (0.05 = 5%).", type: float, default: 0.05}
author: [sglang_deploy]
"""

EXAMPLES = r"""
- name: Rank the candidates, write sweep.md, sweep-summary.json and winner.yml
  sglang.deploy.sglang_sweep_report:
    host: "{{ inventory_hostname }}"
    report_dir: "{{ sglang_sweep_report_dir }}"
    sweep_name: "{{ sweep_name }}"
  delegate_to: localhost
  register: sglang_sweep_result
"""

RETURN = r"""
lines: {description: Console lines (fixed-width ranked table of every candidate and the winner)., returned: always, type: list, elements: str}
winner: {description: "The winner's row (key, label, outcome, rank, tie, ties, figures, at_objective, changes, vs_baseline_pct, beats_baseline, is_baseline, args, env), or null when no candidate worked.", returned: always, type: dict}
ties: {description: "Groups of several candidates within noise of each other: [{rank, keys, labels}].", returned: always, type: list, elements: dict}
snippet: {description: The winner's group_vars YAML (comments list the differences)., returned: always, type: str}
counts: {description: Candidates per outcome (working, wrong, hung, crashed, rejected, interrupted, not run)., returned: always, type: dict}
complete: {description: Whether every candidate of the plan has finished., returned: always, type: bool}
missing: {description: Keys of the candidates without a finished record., returned: always, type: list, elements: str}
paths: {description: "{markdown, summary, snippet, sweep_json, plot, objective_plot}: the files (plot, objective_plot: where plot_sweep.py should write).", returned: always, type: dict}
objective: {description: "The objective ranked by: {name, concurrency, latency_target, met, missed}.", returned: always, type: dict}
other_objective: {description: "The same records ranked by the objective not declared (single_stream for a throughput sweep; throughput at the level shown, no latency target, for a single-stream one): {objective, winner: {key, label} or null, ranking: [{key, label, rank, tie, value}]}; null when no concurrency level was measured. The winner kept is always the declared objective's.", returned: always, type: dict}
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.objective import other, resolve
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.plan import SweepPlanError
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.rank import rank
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.render import console_lines, markdown, snippet, summary
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.store import (
    SWEEP_ARGS,
    finished,
    iso,
    read_sweep,
    records,
    sweep_dir,
    write_sweep,
)
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import write_json, write_text


ARGUMENT_SPEC = dict(
    SWEEP_ARGS,
    tie_k=dict(type="float", default=3.0),
    noise_floor=dict(type="float", default=0.05),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    try:
        directory = sweep_dir(p["report_dir"], p["sweep_name"], p["host"])
    except SweepPlanError as exc:
        module.fail_json(msg=str(exc))
    data = read_sweep(directory)
    if not data or not data.get("candidates"):
        module.fail_json(msg="no sweep file in %s: run sglang_sweep_plan first" % directory)
    cands = data["candidates"]
    recs = records(directory, [c["key"] for c in cands])
    missing = [c["key"] for c in cands if not finished(recs.get(c["key"]))]
    settings = data.get("settings") or {}
    try:
        # a sweep.json planned before the objective existed ranks single_stream
        objective = settings.get("objective") or resolve(levels=settings.get("concurrency"))
    except SweepPlanError as exc:
        module.fail_json(msg="sweep.json in %s: %s" % (directory, exc))
    ranked = rank(cands, recs, p["tie_k"], p["noise_floor"], objective)
    # the same records ranked by the objective not declared: what the other choice would pick
    alternate = other(ranked["objective"])
    other_ranked = rank(cands, recs, p["tie_k"], p["noise_floor"], alternate) if alternate else None
    generated = iso(time.time())
    summ = summary(ranked, p["sweep_name"], p["host"], generated, missing, other_ranked)
    text = snippet(ranked, p["sweep_name"], p["host"])
    paths = dict((name, os.path.join(directory, f)) for name, f in (
        ("markdown", "sweep.md"), ("summary", "sweep-summary.json"), ("snippet", "winner.yml"),
        ("sweep_json", "sweep.json"), ("plot", "sweep.png"), ("objective_plot", "sweep-objective.png")))
    if not module.check_mode:
        write_text(paths["markdown"], markdown(ranked, p["sweep_name"], p["host"], generated, other_ranked))
        write_json(paths["summary"], summ)
        write_text(paths["snippet"], text)
        write_sweep(directory, dict(data, summary=summ))
    winner = None
    if ranked["winner"] is not None:
        winner = dict(summ["winner"], args=ranked["winner"]["args"], env=ranked["winner"]["env"])
    ties = [{"rank": i + 1, "keys": keys, "labels": [r["label"] for r in summ["ranking"] if r["key"] in keys]}
            for i, keys in enumerate(ranked["groups"]) if len(keys) > 1]
    module.exit_json(changed=False, lines=console_lines(ranked, p["sweep_name"], p["host"], other_ranked), winner=winner,
                     ties=ties, snippet=text, counts=ranked["counts"], complete=not missing, missing=missing,
                     paths=paths, objective=summ["objective"], other_objective=summ["other_objective"])


if __name__ == "__main__":
    main()
