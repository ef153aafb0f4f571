#!/usr/bin/python
# -*- coding: utf-8 -*-
# Runs on the controller once per play batch: gathers the host reports of a run into
# report.json and summary.md, and appends them to the history (once each).

DOCUMENTATION = r"""
---
module: sglang_verify_report
short_description: Write a verification run's report.json, summary.md and history on the controller
description:
  - Reads C(<report_dir>/<run_id>/hosts/*.json) (written by sglang_verify_gate), writes
    C(<report_dir>/<run_id>/report.json) and C(summary.md), copies the summary to
    C(<report_dir>/latest.md), and appends each host's figures to C(<report_dir>/history.jsonl)
    unless that run and host are already there (a rolling deploy calls this once per batch).
  - "The summary ends with the sandbox weakenings each host's inventory accepted by name
    (C(context.sandbox_weakenings) of the host record: roles/sglang_server's
    C(sglang_server_allow_weaker_sandbox)), when there are any."
  - In check mode nothing is written.
options:
  run_id: {description: Identifier of the run., type: str, required: true}
  report_dir: {description: Controller directory of reports., type: path, required: true}
  prometheus_url: {description: "Base URL of a Prometheus that scrapes the hosts; the summary links its graphs for the run's time window (empty: no links).", type: str, default: ""}
  gateways:
    description:
      - "What the gateways list: the C(workers) of roles/sglang_gateway's C(sglang_gateway_listing) (each with C(url),
        C(healthy) and C(gateways), each gateway's status of it); the summary gets a section of them and report.json
        keeps them. Empty: no section."
    type: list
    elements: dict
    default: []
author: [sglang_deploy]
"""

EXAMPLES = r"""
- name: Write report.json, summary.md and the history on the controller
  sglang.deploy.sglang_verify_report:
    run_id: "{{ _run_id }}"
    report_dir: "{{ sglang_verify_report_dir }}"
    prometheus_url: http://prometheus.example:9090
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
report: {description: Path of report.json., returned: always, type: str}
summary: {description: Path of summary.md., returned: always, type: str}
history: {description: Path of history.jsonl., returned: always, type: str}
hosts: {description: Hosts in the run so far., returned: always, type: list, elements: str}
prometheus_links: {description: "[label, URL] of the Prometheus graphs of the run's window (empty without prometheus_url).", returned: always, type: list, elements: list}
appended: {description: History records appended by this call., returned: always, type: int}
"""

import datetime
import glob
import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.verify.render import RUN_ARGS, history_record, prometheus_links, render_summary_md
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import read_json, write_json, write_text


def weakenings_md(hosts):
    """The sandbox weakenings the hosts run with (their records' context), as a Markdown
    section; "" when there are none."""
    rows = []
    for host in sorted(hosts):
        for weak in ((hosts[host].get("context") or {}).get("sandbox_weakenings") or []):
            rows.append("| %s | `%s` | `%s` | %s | %s |" % (
                host, weak.get("setting"), weak.get("value"), weak.get("why"), weak.get("reason")))
    if not rows:
        return ""
    return "\n".join(["", "## Sandbox weakenings (sglang_server_allow_weaker_sandbox)", "",
                      "| host | setting | value | what it allows | why (the inventory's reason) |",
                      "| --- | --- | --- | --- | --- |"] + rows) + "\n"


def gateways_md(workers):
    """The gateways' listing as a Markdown section: one row per worker, its status in each
    gateway and whether every gateway routes to it; "" without a gateway."""
    if not workers:
        return ""
    gateways = sorted({gw for w in workers for gw in (w.get("gateways") or {})})
    rows = ["| %s | %s | %s |" % (w.get("url"), " | ".join((w.get("gateways") or {}).get(gw, "absent") for gw in gateways)
                                  if gateways else w.get("status") or "?", "yes" if w.get("healthy") else "**no**")
            for w in workers]
    healthy = sum(1 for w in workers if w.get("healthy"))
    header = ["", "## Gateways", "",
              "%d of %d worker(s) healthy and ready in every gateway (roles/sglang_gateway, `sglang_gateway_urls`)." % (
                  healthy, len(workers)), "",
              "| worker | %s | routed to |" % (" | ".join(gateways) if gateways else "status"),
              "| --- | %s | --- |" % " | ".join("---" for _ in (gateways or ["status"]))]
    return "\n".join(header + rows) + "\n"


ARGUMENT_SPEC = dict(
    RUN_ARGS,
    prometheus_url=dict(type="str", default=""),
    gateways=dict(type="list", elements="dict", default=[]),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    run_dir = os.path.join(p["report_dir"], p["run_id"])
    hosts = {}
    for path in sorted(glob.glob(os.path.join(run_dir, "hosts", "*.json"))):
        rec = read_json(path)
        if rec is not None:
            hosts[rec["host"]] = rec
    report = {
        "run_id": p["run_id"],
        "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "passed": all(h.get("passed") for h in hosts.values()) if hosts else None,
        "hosts": hosts,
        "prometheus_links": prometheus_links(p["prometheus_url"], hosts),
        "gateways": p["gateways"],
    }
    paths = {
        "report": os.path.join(run_dir, "report.json"),
        "summary": os.path.join(run_dir, "summary.md"),
        "history": os.path.join(p["report_dir"], "history.jsonl"),
    }
    appended = 0
    if not module.check_mode and hosts:
        write_json(paths["report"], report)
        md = render_summary_md(report) + gateways_md(p["gateways"]) + weakenings_md(hosts)
        for target in (paths["summary"], os.path.join(p["report_dir"], "latest.md")):
            write_text(target, md)
        seen = set()
        if os.path.exists(paths["history"]):
            with open(paths["history"]) as fh:
                for line in fh:
                    try:
                        r = json.loads(line)
                    except ValueError:
                        continue
                    seen.add((r.get("run_id"), r.get("host")))
        with open(paths["history"], "a") as fh:
            for host in sorted(hosts):
                if (p["run_id"], host) in seen:
                    continue
                fh.write(json.dumps(history_record(p["run_id"], host, hosts[host]), sort_keys=True) + "\n")
                appended += 1
    module.exit_json(changed=False, hosts=sorted(hosts), appended=appended,
                     prometheus_links=report["prometheus_links"], **paths)


if __name__ == "__main__":
    main()
