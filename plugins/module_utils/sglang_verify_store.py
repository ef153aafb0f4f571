# -*- coding: utf-8 -*-
# Files written whole and atomically: the reports and baselines on the controller (several hosts
# of one run, written by parallel workers, never collide), and on the hosts the local facts
# (plugins/module_utils/local_fact.py) and the server's start log (plugins/module_utils/sglang_start_log.py).
# Each write goes to its own temporary file in the target directory and is renamed over the
# target; directories are created race-free. Standard library only.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tempfile


def write_text(path, text, mode=None):
    """Atomically replace `path` with `text`, creating its directory if needed; `mode` (e.g.
    0o644) for a file others read, else the temporary file's own (0600)."""
    d = os.path.dirname(path) or "."
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path, data):
    write_text(path, json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


def read_json(path):
    """The parsed file, or None when it is missing or not JSON."""
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None
