"""Write an Ansible local fact file (facts.d/<name>.fact) in the module's own round trip.

A role that gathers facts on the host writes its local fact from the same module call, instead
of two more tasks (a directory and a copy) on every run. Changed only when the content differs;
in check mode nothing is written and the change is reported as it would be.
"""

from __future__ import annotations

import json
import os

from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import write_text


def render(data):
    """The file's content: sorted, indented JSON with a final newline (what to_nice_json writes)."""
    return json.dumps(data, indent=4, sort_keys=True) + "\n"


def write_local_fact(directory, name, data, check_mode=False):
    """Write <directory>/<name>.fact atomically (mode 0644); True when changed."""
    return write_if_changed(os.path.join(directory, name + ".fact"), render(data), check_mode)


def write_if_changed(path, content, check_mode=False):
    """Write `content` to `path` atomically (mode 0644) unless it is already there; True when changed."""
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == content:
                return False
    except OSError:
        pass
    if not check_mode:
        write_text(path, content, mode=0o644)
    return True
