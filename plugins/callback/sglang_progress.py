# -*- coding: utf-8 -*-
"""The project's console output (ansible.cfg stdout_callback): Ansible's default output, with two
changes for the waits and the rollout an operator watches:

- a task polled with `until` (a server's start, a model fetch, a gateway's drain) shows its
  `progress_line` on each poll ("waiting [host] ..."), or the poll count, instead of the default's
  "FAILED - RETRYING: ... (N retries left)", which reads like an error on every healthy start;
- after the recap, a rollout summary: per host of roles/sglang_rollout, what was done (its
  sglang_rollout_result outcome) and how long each step of its turn took (from the start of one
  `Rollout | ...` task to the start of the next, the steps of the batch the host was in)."""

from __future__ import annotations

import time

DOCUMENTATION = r"""
name: sglang_progress
type: stdout
short_description: Ansible's default output with progress lines for polled tasks and a rollout summary
description:
  - The default stdout callback, except that a task retried with C(until) shows the C(progress_line) of its
    result (or the poll count) instead of C(FAILED - RETRYING), and that the recap is followed by a summary of
    roles/sglang_rollout per host (outcome and seconds per step).
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as stdout in configuration (ansible.cfg stdout_callback = sglang.deploy.sglang_progress)
"""

from ansible.plugins.callback.default import CallbackModule as DefaultCallback

STEP_PREFIX = "Rollout | "
# task name (after the prefix) -> the step it starts; a name not listed starts no step of its own
STEPS = (
    ("Wait until every gateway keeps the floor", "floor"),
    ("Check the release to put back", "check"),
    ("Remember the release to fall back on", None),
    ("Take the host out of every gateway", "leave"),
    ("Switch the environment", "apply"),
    ("Validate, write, restart once", "apply"),
    ("Put the release back", "apply"),
    ("Gate the", "gate"),
    ("Record", "record"),
    ("Put the host back into every gateway", "rejoin"),
    ("Put the host back on release", "restore"),
    ("Confirm the restored host", "confirm"),
    ("What happened on this host", None),
    ("Stop the rollout here", None),
)


def step_of(task_name):
    """The step a task's name starts, '' for a task of no step, None for a rollout task that ends one."""
    if not task_name.startswith(STEP_PREFIX):
        return ""
    rest = task_name[len(STEP_PREFIX):]
    for start, step in STEPS:
        if rest.startswith(start):
            return step
    return ""


class RolloutSteps:
    """Seconds per step per host, from the task starts and the hosts that ran a task in each step."""

    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.current = None  # (step, started)
        self.hosts = set()
        self.seconds = {}  # host -> [(step, seconds)]
        self.outcome = {}  # host -> sglang_rollout_result

    def task_started(self, task_name):
        step = step_of(task_name)
        if step == "":
            return
        self._close()
        if step is not None:
            self.current, self.hosts = (step, self.clock()), set()

    def host_ran(self, host):
        if self.current is not None:
            self.hosts.add(host)

    def result(self, host, facts):
        if isinstance(facts, dict) and isinstance(facts.get("sglang_rollout_result"), dict):
            self.outcome[host] = facts["sglang_rollout_result"]

    def _close(self):
        if self.current is None:
            return
        step, started = self.current
        took = self.clock() - started
        for host in self.hosts:
            self.seconds.setdefault(host, []).append((step, took))
        self.current, self.hosts = None, set()

    def lines(self):
        self._close()
        out = []
        for host in sorted(set(self.seconds) | set(self.outcome)):
            steps = self.seconds.get(host, [])
            what = self.outcome.get(host, {})
            parts = ["%s %.1f" % (step, took) for step, took in steps]
            total = sum(took for _, took in steps)
            out.append("%s: %s%s; %s; total %.1f s" % (
                host, what.get("outcome", "failed"), (" (%s)" % what["action"]) if what.get("action") else "",
                ", ".join(parts) or "no step", total))
        return out


def _data(result):
    """A callback result's dict (ansible-core 2.19: result.result; before: result._result)."""
    data = getattr(result, "result", None)
    return data if isinstance(data, dict) else (getattr(result, "_result", {}) or {})


def _host(result):
    return (getattr(result, "host", None) or result._host).get_name()


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "sglang.deploy.sglang_progress"

    def __init__(self):
        super().__init__()
        self.rollout = RolloutSteps()

    def v2_runner_retry(self, result):
        data, host = _data(result), _host(result)
        task = getattr(result, "task", None) or getattr(result, "_task", None)
        if task is not None and getattr(self, "_last_task_banner", None) != getattr(task, "_uuid", None):
            self._print_task_banner(task)  # the banner first, as for a result (it is printed lazily)
        line = None if data.get("_ansible_no_log") else data.get("progress_line")
        if not line:
            name = getattr(result, "task_name", None) or getattr(task, "name", "")
            line = "%s (poll %s of at most %s)" % (name, data.get("attempts", "?"), data.get("retries", "?"))
        self._display.display("  waiting [%s] %s" % (host, line))

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.rollout.task_started(task.name or "")
        super().v2_playbook_on_task_start(task, is_conditional)

    def _ran(self, result):
        host = _host(result)
        self.rollout.host_ran(host)
        self.rollout.result(host, _data(result).get("ansible_facts"))

    def v2_runner_on_ok(self, result):
        self._ran(result)
        super().v2_runner_on_ok(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._ran(result)
        super().v2_runner_on_failed(result, ignore_errors=ignore_errors)

    def v2_playbook_on_stats(self, stats):
        super().v2_playbook_on_stats(stats)
        lines = self.rollout.lines()
        if lines:
            self._display.banner("ROLLOUT SUMMARY (roles/sglang_rollout: outcome; seconds per step of the host's batch)")
            for line in lines:
                self._display.display(line)
