"""plugins/callback/sglang_progress.py, the console output: a polled task shows its progress line
(or its poll count), never "FAILED - RETRYING", and nothing of a no_log result; the rollout
summary gives each host its outcome and the seconds of each step of its batch. Built from
ansible-core's own result, host and task objects; a real ansible-playbook run loads it as the
configured stdout callback."""

import os
import subprocess
import sys
from pathlib import Path

from ansible.executor.task_result import CallbackTaskResult
from ansible.inventory.host import Host
from ansible.playbook.task import Task

from ansible_collections.sglang.deploy.plugins.callback import sglang_progress as callback

ROOT = Path(__file__).resolve().parents[2]


class Shown:
    def __init__(self):
        self.lines = []

    def display(self, msg, **_kw):
        self.lines.append(msg)

    def banner(self, msg, **_kw):
        self.lines.append("== " + msg)


def retry(data, name="Wait until the server generates"):
    cb = callback.CallbackModule()
    cb._display = Shown()
    cb._print_task_banner = lambda task: None  # the banner itself is the default callback's
    task = Task()
    task.name = name
    cb.v2_runner_retry(CallbackTaskResult(Host("gpu-node-01"), task, data, {}))
    return cb._display.lines


def test_the_progress_line_of_a_retry_is_shown_under_the_host():
    assert retry({"progress_line": "fetch org/m@0123: 1.0 GB of 2.0 GB (50%)", "attempts": 1, "retries": 9}) == [
        "  waiting [gpu-node-01] fetch org/m@0123: 1.0 GB of 2.0 GB (50%)"]


def test_a_retry_without_a_line_or_with_no_log_shows_the_poll_not_a_failure():
    lines = retry({"attempts": 2, "retries": 9}) + retry({"progress_line": "secret", "_ansible_no_log": True,
                                                          "attempts": 1, "retries": 9})
    assert lines == ["  waiting [gpu-node-01] Wait until the server generates (poll 2 of at most 9)",
                     "  waiting [gpu-node-01] Wait until the server generates (poll 1 of at most 9)"]
    assert not any("FAILED" in line or "secret" in line for line in lines)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_rollout_summary_gives_each_host_its_outcome_and_the_seconds_of_each_step():
    clock = Clock()
    steps = callback.RolloutSteps(clock)
    for name, seconds, hosts in (("Rollout | Take the host out of every gateway and let its requests finish", 5, "ab"),
                                 ("sglang_server : Restart", 0, ""),  # a task of another role: no step of its own
                                 ("Rollout | Switch the environment, write the unit, restart once", 20, "ab"),
                                 ("Rollout | Gate the host (health, correctness probes)", 10, "a"),
                                 ("Rollout | Record the release as last-known-good", 1, "a"),
                                 ("Rollout | Put the host back into every gateway", 2, "a"),
                                 ("Rollout | What happened on this host", 0, "")):
        steps.task_started(name)
        for host in hosts:
            steps.host_ran(host)
        clock.now += seconds
    steps.result("a", {"sglang_rollout_result": {"action": "deploy", "outcome": "rolled"}})
    steps.result("b", {"other": 1})
    assert steps.lines() == [
        "a: rolled (deploy); leave 5.0, apply 20.0, gate 10.0, record 1.0, rejoin 2.0; total 38.0 s",
        "b: failed; leave 5.0, apply 20.0; total 25.0 s"]


def test_no_summary_without_a_rollout_step():
    steps = callback.RolloutSteps(Clock())
    steps.task_started("Gather facts")
    steps.host_ran("a")
    assert steps.lines() == []


def test_a_real_run_loads_it_as_the_stdout_callback(tmp_path):
    """ansible.cfg names it; a play with a polled task and a rollout step prints both."""
    play = tmp_path / "play.yml"
    play.write_text(
        "- hosts: all\n  gather_facts: false\n  tasks:\n"
        "    - name: Rollout | Take the host out of every gateway (a stand-in step)\n"
        "      ansible.builtin.set_fact:\n        sglang_rollout_result: {action: deploy, outcome: rolled}\n"
        "    - name: Poll twice\n      ansible.builtin.command: 'true'\n      changed_when: false\n"
        "      register: polled_result\n      until: polled_result.attempts | default(0) | int >= 2\n"
        "      retries: 3\n      delay: 0\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_LOCAL_TEMP=str(tmp_path / ".tmp"))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", str(play)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    # under its own banner (printed before the first poll), never as a failure
    assert "TASK [Poll twice] ***" in out.split("waiting [localhost] Poll twice (poll 1 of at most 4)")[0], out
    assert "RETRYING" not in out and "FAILED" not in out, out
    assert "ROLLOUT SUMMARY" in out and "localhost: rolled (deploy); leave " in out, out
