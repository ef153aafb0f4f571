"""plugins/callback/sglang_progress.py: the progress line of a retried task is shown, nothing for
a task without one or with no_log; built from ansible-core's own result and host objects."""

import os

from ansible.executor.task_result import CallbackTaskResult
from ansible.inventory.host import Host
from ansible.playbook.task import Task

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
from ansible_collections.sglang.deploy.plugins.callback import sglang_progress as callback  # noqa: E402  pylint: disable=wrong-import-position


class Shown:
    def __init__(self):
        self.lines = []

    def display(self, msg, **_kw):
        self.lines.append(msg)


def retry(data):
    cb = callback.CallbackModule()
    cb._display = Shown()
    cb.v2_runner_retry(CallbackTaskResult(Host("gpu-node-01"), Task(), data, {}))
    return cb._display.lines


def test_the_progress_line_of_a_retry_is_shown_under_the_host():
    assert retry({"progress_line": "fetch org/m@0123: 1.0 GB of 2.0 GB (50%)", "attempts": 1, "retries": 9}) == [
        "  [gpu-node-01] fetch org/m@0123: 1.0 GB of 2.0 GB (50%)"]


def test_nothing_for_a_retry_without_a_line_or_with_no_log():
    assert retry({"attempts": 1, "retries": 9}) == []
    assert retry({"progress_line": "secret", "_ansible_no_log": True}) == []
