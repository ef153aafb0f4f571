"""Files written whole and atomically, the one way every module writes a file: the reports and
baselines on the controller (several hosts of one run, written by parallel workers, never
collide), and on the hosts the local facts (plugins/module_utils/local_fact.py), the server's
start log (plugins/module_utils/sglang_start_log.py), the release copies and their index
(plugins/module_utils/release/state.py) and a model's stamp
(plugins/module_utils/model_files/manifest.py).

Each write goes to its own temporary file in the target directory, is flushed to the disk and
renamed over the target: a reader, or a host that loses power, sees the old content or the new
one, never a part. Directories are created race-free. Standard library only.
"""

from __future__ import annotations

import json
import os
import tempfile


def write_bytes(path, data, mode=None):
    """Atomically replace `path` with the bytes `data`, creating its directory if needed; `mode`
    (e.g. 0o644) for a file others read, else the temporary file's own (0600)."""
    d = os.path.dirname(path) or "."
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text(path, text, mode=None):
    """write_bytes of `text` in UTF-8."""
    write_bytes(path, text.encode("utf-8"), mode)


def write_json(path, data):
    write_text(path, json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


def read_json(path):
    """The parsed file, or None when it is missing or not JSON."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None
