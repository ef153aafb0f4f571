#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the controller (delegate_to: localhost): writes one sweep candidate's record, first
# "running" (before its server is started), then "finished" with its outcome.

DOCUMENTATION = r"""
---
module: sglang_sweep_record
short_description: Record one SGLang sweep candidate (running, then its outcome)
description:
  - "With I(status=running), before the candidate's server is started, writes
    C(<report_dir>/<sweep_name>/<host>/candidate-<key>.json) with C(status: running): a play
    interrupted from here on leaves a record that a resumed sweep runs again."
  - With I(status=finished), classifies the candidate from what the play registered for it
    (plugins/module_utils/sweep/classify.py) and writes the record with its
    outcome (rejected, crashed, hung, wrong or working), the reason, the details (rule, journal
    tail, traceback, quoted output) and, when working, the figures. A finished record is never run
    again by a resumed sweep.
  - Fails when the candidate's key does not match its flags and environment (a candidate changed
    after the plan).
  - In check mode the record is computed and nothing is written.
options:
  host: {description: Inventory name of the canary host., type: str, required: true}
  report_dir: {description: "Controller directory of sweeps, as given to sglang_sweep_plan.", type: path, required: true}
  sweep_name: {description: Name of the sweep., type: str, required: true}
  candidate: {description: "One candidate as sglang_sweep_plan returned it ({key, label, args, env, changes, aliases}).", type: dict, required: true}
  status: {description: running (before the start) or finished (with the outcome inputs)., type: str, default: finished, choices: [running, finished]}
  rules: {description: "Offline findings of the candidate (sglang_flags_check, sglang_flags_inputs); any error -> rejected.", type: list, elements: raw, default: []}
  parser: {description: "SGLang's parser on the host: sglang_flags_verdict ({ok, phase, errors}) or a command result ({rc, stderr}); not ok -> rejected.", type: dict, default: {}}
  wait: {description: "The sglang_server_wait result (failed, msg, journal, outcome): outcome crashed -> crashed, hung or timeout -> hung.", type: dict, default: {}}
  probe: {description: "The registered sglang_probe result (result, failures); empty when the server never started.", type: dict, default: {}}
  journal: {description: Journal lines read after the measurement (crash under load)., type: list, elements: str, default: []}
  gpu_order: {description: "Which GPUs each data-parallel replica got and why, and the warning when no grouping keeps a replica under one socket (gpu_topology_candidate_env's lines and warnings); kept in the record as C(gpu_order) and shown by the report.", type: list, elements: str, default: []}
  catalog_options: {description: "The host's flag catalog's option strings, as given to sglang_sweep_plan: the record's flags and changes show secret flags (abbreviations resolved through it) as <redacted>.", type: list, elements: str, default: []}
  secrets: {description: "The secret values among the arguments (the sglang_sweep_secrets filter, as given to sglang_sweep_plan): Ansible masks them in everything the module returns and logs, its arguments (-vvv) included, also when an argument is refused before the module's own code runs. Without it the module masks the candidate's secret values itself once its arguments are accepted.", type: list, elements: str, default: []}
author: [sglang_deploy]
"""

EXAMPLES = r"""
- name: Record the candidate's outcome
  sglang.deploy.sglang_sweep_record:
    host: "{{ inventory_hostname }}"
    report_dir: "{{ sglang_sweep_report_dir }}"
    sweep_name: "{{ sweep_name }}"
    candidate: "{{ _candidate }}"
    rules: "{{ _rules }}"
    parser: "{{ sglang_flags_verdict | default({}) }}"
    wait: "{{ _wait | default({}) }}"
    probe: "{{ _probe | default({}) }}"
  delegate_to: localhost
"""

RETURN = r"""
record: {description: "The record written: key, label, changes, args (secrets redacted), env, status, attempts, started, finished, duration_s, start_s (the server's start, s), outcome, stage, reason, details, figures.", returned: always, type: dict}
outcome: {description: "rejected, crashed, hung, wrong or working; null while running.", returned: always, type: str}
reason: {description: One line on the outcome (output quoted)., returned: always, type: str}
line: {description: Console line of the candidate., returned: always, type: str}
path: {description: Path of the record., returned: always, type: str}
time_left_s: {description: "Seconds to the run's deadline (sweep.json); null without a sweep file.", returned: always, type: int}
next_fits: {description: Whether another candidate's start still fits before the deadline., returned: always, type: bool}
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import FlagModelError
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_secrets import redact_lines
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.classify import classify
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.plan import SweepPlanError, candidate_key
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.redact import candidate_secrets, redact_candidate, redact_env
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.store import (
    FINISHED,
    RUNNING,
    SWEEP_ARGS,
    iso,
    read_record,
    read_sweep,
    record_path,
    sweep_dir,
    write_record,
)


ARGUMENT_SPEC = dict(
    SWEEP_ARGS,
    candidate=dict(type="dict", required=True),
    status=dict(type="str", default=FINISHED, choices=[RUNNING, FINISHED]),
    rules=dict(type="list", elements="raw", default=[]),
    parser=dict(type="dict", default={}),
    wait=dict(type="dict", default={}),
    probe=dict(type="dict", default={}),
    journal=dict(type="list", elements="str", default=[]),
    gpu_order=dict(type="list", elements="str", default=[]),
    catalog_options=dict(type="list", elements="str", default=[]),
    # the secret strings alone, as sglang_sweep_plan takes them (why: a comment there)
    secrets=dict(type="list", elements="str", default=[], no_log=True),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    cand = p["candidate"]
    module.no_log_values.update(candidate_secrets(cand, p["catalog_options"]))  # -vvv shows the arguments
    try:
        directory = sweep_dir(p["report_dir"], p["sweep_name"], p["host"])
        key = candidate_key(cand.get("args") or {}, cand.get("env") or {})
    except (SweepPlanError, FlagModelError) as exc:
        module.fail_json(msg="sweep %s: %s" % (p["sweep_name"], exc))
    if key != cand.get("key"):
        module.fail_json(msg="candidate %r has the key %r but its flags and environment give %r: pass the "
                             "candidate as sglang_sweep_plan returned it" % (cand.get("label"), cand.get("key"), key))
    now = time.time()
    previous = read_record(directory, key) or {}
    shown = redact_candidate(cand, p["catalog_options"])
    record = {
        "key": key, "label": cand.get("label"), "aliases": cand.get("aliases") or [],
        "changes": shown["changes"], "args": shown["args"],
        "env": redact_env(cand.get("env") or {}), "status": p["status"], "gpu_order": p["gpu_order"],
    }
    if p["status"] == RUNNING:
        record.update(attempts=int(previous.get("attempts") or 0) + 1, started=iso(now), started_epoch=now,
                      outcome=None, reason="running")
    else:
        started = previous.get("started_epoch") if previous.get("status") == RUNNING else None
        # the journal read after the measurement: secret flags redacted (the wait's own journal is)
        verdict = classify(p["rules"], p["parser"], p["wait"], p["probe"], redact_lines(p["journal"]))
        record.update(verdict)
        record.update(attempts=int(previous.get("attempts") or 1), started=iso(started or now),
                      started_epoch=started or now, finished=iso(now),
                      duration_s=round(now - started, 1) if started else None,
                      # the server's own start (restart to its first generation), when it started
                      start_s=(p["wait"] or {}).get("elapsed"))
    if not module.check_mode:
        write_record(directory, key, record)
    budget = (read_sweep(directory) or {}).get("budget") or {}
    left = int(budget["deadline_epoch"] - now) if budget.get("deadline_epoch") else None
    line = "%s [%s] %s: %s" % (cand.get("label"), key, record.get("outcome") or RUNNING, record["reason"])
    module.exit_json(changed=False, record=record, outcome=record.get("outcome"), reason=record["reason"],
                     line=line, path=record_path(directory, key), time_left_s=left,
                     next_fits=left is None or left >= int(budget.get("candidate_timeout_s") or 0))


if __name__ == "__main__":
    main()
