#!/usr/bin/python
"""Wait until an SGLang unit serves a real generation, or fail fast with its journal."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: sglang_server_wait
short_description: Wait until an SGLang systemd unit answers a real generation
description:
  - Polls the unit's state with C(systemctl show) and the readiness URL (by default
    C(/health_generate), which runs a one-token generation) until the URL answers 200.
  - Fails at once when the unit exits or enters auto-restart (a bad flag, a missing model),
    and after I(timeout) seconds otherwise; both failures carry the unit's journal since its
    current start, so the operator sees what the server said.
options:
  unit:
    description: systemd unit name, e.g. C(sglang.service).
    type: str
    required: true
  url:
    description: Readiness URL; 200 means ready.
    type: str
    required: true
  timeout:
    description: Seconds to wait in all.
    type: int
    default: 900
  interval:
    description: Seconds between polls.
    type: float
    default: 2.0
  request_timeout:
    description: Seconds one readiness request may take.
    type: float
    default: 30.0
  journal_lines:
    description: Journal lines returned on failure (secret flag values redacted).
    type: int
    default: 60
  api_key:
    description: Bearer token sent with the readiness request (SGLang's C(--api-key)).
    type: str
  start:
    description:
      - Start the unit first when it is not active (reports a change); a running unit is left
        alone. In check mode a unit that is not active is reported as a change, and nothing is
        started or waited for.
    type: bool
    default: false
  restarted:
    description: The caller restarted the unit just before this call (its start is recorded).
    type: bool
    default: false
  generation:
    description: The ml_env generation the server runs from (recorded with the start).
    type: str
    default: ""
  report_every:
    description:
      - Seconds after which a call that is still waiting returns (C(ready=false)) with a
        C(progress_line) (elapsed time and the server's newest journal line), for a task that
        repeats it with C(until) and C(retries); 0 waits the whole I(timeout) in one call.
      - "The calls of one wait share I(wait_id): the start, the restart count and the clock carry
        over."
    type: int
    default: 0
  wait_id:
    description: Identifies one wait across its calls (I(report_every)); a new id starts a new wait.
    type: str
    default: ""
  state_dir:
    description: Where a wait's calls keep what carries over (I(report_every)); cleared at boot.
    type: path
    default: /run/sglang-deploy
  start_log:
    description:
      - "JSON-lines file on the host where each start this call saw (I(restarted), or started
        here) is appended: time, seconds to the first answer, the generation, and C(cold) (no
        earlier start of this generation in the log: its caches were empty) or C(warm) (they
        hold what the earlier starts compiled); C(unknown) without a generation. The newest 50
        are kept."
    type: path
author: sglang-deploy
"""

EXAMPLES = r"""
- name: Wait until the server generates
  sglang.deploy.sglang_server_wait:
    unit: sglang.service
    url: http://127.0.0.1:30000/health_generate
    timeout: 1800
"""

RETURN = r"""
ready:
  description: The server answered (false only for a call that returned to report, I(report_every)).
  type: bool
  returned: success
progress_line:
  description: How long the server has been starting and its newest journal line (I(report_every)).
  type: str
  returned: when not ready
elapsed:
  description: Seconds this wait (all its calls) waited until the server answered.
  type: float
  returned: success
start_seconds:
  description:
    - "Seconds from the start of the unit's main process (systemd's ExecMainStartTimestamp) to the
      first answer of the readiness URL: the server's start time when this call saw it start
      (after a restart, or started here); for a server that was serving already, its age."
  type: float
  returned: success
started:
  description: Whether this call started the unit (I(start)).
  type: bool
  returned: always
outcome:
  description:
    - C(started) (the server generates), C(crashed) (the unit is not loaded, exited or entered auto-restart), C(hung) (the time ran
      out while the server listened but did not generate (a request timed out or answered an
      error)), C(timeout) (the time ran out before the server even listened). The three failures
      fail the task with this result (playbooks/sweep.yml's candidates read it from
      C(ansible_failed_result)). A call that returned to report (I(report_every)) says
      C(starting); the task repeats it until it is one of the four.
  type: str
  returned: always
start:
  description: The start record appended to I(start_log) (when this call saw a start).
  type: dict
  returned: success
main_pid:
  description: Main PID of the unit when it became ready.
  type: int
  returned: always
journal:
  description: Journal lines of the current start (on failure).
  type: list
  returned: failure
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_http import request
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_secrets import redact_lines
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_start_log import append as record_start
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import read_json, write_json


def unit_state(module, unit):
    rc, out, err = module.run_command(
        ["systemctl", "show", unit, "-p",
         "ActiveState,SubState,NRestarts,MainPID,InvocationID,LoadState,Result,"
         "ExecMainStartTimestampMonotonic"]
    )
    if rc != 0:
        module.fail_json(msg=f"systemctl show {unit} failed: {err.strip()}")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def journal(module, unit, invocation, lines):
    cmd = ["journalctl", "--no-pager", "-o", "short-iso", "-n", str(lines)]
    cmd += [f"_SYSTEMD_INVOCATION_ID={invocation}"] if invocation else ["-u", unit]
    rc, out, err = module.run_command(cmd)
    if rc != 0 or not out.strip() or "-- No entries --" in out:
        rc, out, err = module.run_command(
            ["journalctl", "--no-pager", "-o", "short-iso", "-n", str(lines), "-u", unit]
        )
    # secret flag values (an API key in SGLang's server_args line) never leave the host
    return redact_lines(out.splitlines()[-lines:])


def newest_line(module, unit, invocation):
    """The unit's newest journal line of this start, secrets redacted, clipped."""
    cmd = ["journalctl", "--no-pager", "-o", "cat", "-n", "1"]
    cmd += [f"_SYSTEMD_INVOCATION_ID={invocation}"] if invocation else ["-u", unit]
    rc, out, _err = module.run_command(cmd)
    lines = [line for line in out.splitlines() if line.strip() and "-- No entries --" not in line] if rc == 0 else []
    text = redact_lines(lines[-1:])[0] if lines else "(nothing in the journal yet)"
    return text if len(text) <= 200 else text[:197] + "..."


class WaitState:
    """What the calls of one wait share (report_every): the monotonic time it began, the restart
    count before it, whether it started the unit, whether the server has listened yet. A file per unit under state_dir (a tmpfs)."""

    def __init__(self, state_dir, unit, wait_id):
        self.path = os.path.join(state_dir, f"wait-{unit}.json") if wait_id else None
        self.wait_id = wait_id

    def load(self):
        data = read_json(self.path) if self.path else None
        return data if data and data.get("wait_id") == self.wait_id else None

    def save(self, began, restarts0, started, listened=False):
        if not self.path:
            return
        write_json(self.path, {"wait_id": self.wait_id, "began": began, "restarts0": restarts0, "started": started,
                               "listened": listened})

    def clear(self):
        if self.path and os.path.exists(self.path):
            os.unlink(self.path)


ARGUMENT_SPEC = dict(
    unit=dict(type="str", required=True),
    url=dict(type="str", required=True),
    timeout=dict(type="int", default=900),
    interval=dict(type="float", default=2.0),
    request_timeout=dict(type="float", default=30.0),
    journal_lines=dict(type="int", default=60),
    api_key=dict(type="str", no_log=True),
    start=dict(type="bool", default=False),
    restarted=dict(type="bool", default=False),
    generation=dict(type="str", default=""),
    start_log=dict(type="path"),
    report_every=dict(type="int", default=0),
    wait_id=dict(type="str", default=""),
    state_dir=dict(type="path", default="/run/sglang-deploy"),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    unit = p["unit"]
    call_began = time.monotonic()
    state = WaitState(p["state_dir"], unit, p["wait_id"] if p["report_every"] > 0 else "")
    carried = state.load()
    first = unit_state(module, unit)
    if first.get("LoadState") != "loaded":
        state.clear()
        module.fail_json(msg=f"{unit} is not loaded (LoadState={first.get('LoadState')})", main_pid=0,
                         outcome="crashed")
    if carried:  # a later call of the same wait: it began (and maybe started the unit) before
        start, started, restarts0 = carried["began"], carried["started"], carried["restarts0"]
    else:
        start, started = call_began, False
        if p["start"] and first.get("ActiveState") not in ("active", "activating", "reloading"):
            if module.check_mode:
                module.exit_json(changed=True, started=True, ready=True, main_pid=0, outcome="started")
            # Type=simple: returns once the process is forked; the loop below watches it start
            module.run_command(["systemctl", "start", unit], check_rc=True)
            started = True
            first = unit_state(module, unit)
        elif module.check_mode:
            module.exit_json(changed=False, started=False, ready=True, main_pid=int(first.get("MainPID") or 0),
                             outcome="started")
        restarts0 = int(first.get("NRestarts") or 0)
        state.save(start, restarts0, started)
    last_http = "no answer yet"
    listened = carried.get("listened", False) if carried else False
    while True:
        st = unit_state(module, unit)
        pid = int(st.get("MainPID") or 0)
        crashed = (
            st.get("ActiveState") in ("failed", "inactive")
            or st.get("SubState") == "auto-restart"
            or int(st.get("NRestarts") or 0) > restarts0
        )
        if crashed:
            state.clear()
            module.fail_json(
                msg=(
                    f"{unit} exited while starting (ActiveState={st.get('ActiveState')}, "
                    f"SubState={st.get('SubState')}, Result={st.get('Result')}): the server "
                    "rejected its flags or could not load the model; its journal follows"
                ),
                main_pid=pid, started=started, outcome="crashed",
                journal=journal(module, unit, first.get("InvocationID") or st.get("InvocationID"),
                                p["journal_lines"]),
            )
        code, detail = request(p["url"], timeout=p["request_timeout"],
                               headers={"Authorization": "Bearer " + p["api_key"]} if p["api_key"] else None)
        if code == 200:
            state.clear()
            # systemd's monotonic clock is CLOCK_MONOTONIC, the one time.monotonic() reads
            began = int(st.get("ExecMainStartTimestampMonotonic") or 0) / 1e6
            now = time.monotonic()
            seconds = round(now - began, 1) if began else None
            record = None
            if (started or p["restarted"]) and p["start_log"]:
                record = {"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "seconds": seconds,
                          "generation": p["generation"], "unit": unit}
                record_start(p["start_log"], record)
            module.exit_json(changed=started, started=started, ready=True, elapsed=round(now - start, 1),
                             start_seconds=seconds, start=record, main_pid=pid, outcome="started")
        last_http = f"HTTP {code}" if code else detail
        # an HTTP answer, or a request the server accepted and never answered: it listens
        listened = listened or bool(code) or "timed out" in str(detail).lower()
        now = time.monotonic()
        if now - start > p["timeout"]:
            state.clear()
            module.fail_json(
                msg=(
                    f"{unit} did not generate within {p['timeout']} s ({p['url']}: {last_http}); "
                    "raise sglang_server_ready_timeout for a large model; its journal follows"
                ),
                main_pid=pid, outcome="hung" if listened else "timeout",
                journal=journal(module, unit, st.get("InvocationID"), p["journal_lines"]),
            )
        if p["report_every"] > 0 and now - call_began >= p["report_every"]:
            state.save(start, restarts0, started, listened)
            module.exit_json(
                changed=started, started=started, ready=False, main_pid=pid, outcome="starting",
                progress_line=f"{unit} starting for {int(now - start)} s of at most {p['timeout']} s "
                              f"({last_http}); newest journal line: {newest_line(module, unit, st.get('InvocationID'))}")
        time.sleep(p["interval"])


if __name__ == "__main__":
    main()
