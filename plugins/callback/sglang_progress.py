# -*- coding: utf-8 -*-
"""Progress lines of long tasks: a task polled with `until` (a model fetch, a server start)
returns `progress_line` on each attempt; this callback shows it under the default output's
"FAILED - RETRYING" line, where an operator waits. Nothing else is changed or recorded."""

from __future__ import annotations

DOCUMENTATION = r"""
name: sglang_progress
type: notification
short_description: Show the progress line of a task that is being retried
description:
  - On each retry of a task (C(until)/C(retries)), displays the C(progress_line) of its result,
    when it has one (roles/model_files and roles/sglang_server return it while they wait).
  - Loaded without being enabled (ansible.cfg C(callback_plugins)); shows nothing for other tasks.
"""

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "sglang_progress"
    CALLBACK_NEEDS_ENABLED = False

    def v2_runner_retry(self, result):
        data = getattr(result, "result", None)
        if not isinstance(data, dict):
            data = getattr(result, "_result", {}) or {}
        line = data.get("progress_line")
        if line and not data.get("_ansible_no_log"):
            host = getattr(result, "host", None) or result._host
            self._display.display("  [%s] %s" % (host.get_name(), line))
