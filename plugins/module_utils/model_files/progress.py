# -*- coding: utf-8 -*-
"""Progress of a fetch or copy that roles/model_files runs in the background (async): the fetch
module writes what it is about to fill (``start``), the progress module measures it from the
files on disk (``measure``) and words it (``line``). Standard library only.

Measured, not reported by the transfer: the Hub client writes each file to a temporary
``*.incomplete`` file under ``<dir>/.cache/huggingface/download/`` and renames it when done; a
path copy writes ``COPY_TMP`` and renames it. A file counts as done when it has its full size
under its own name; the bytes of the temporary files count as they grow.
"""

import os
import time

from ansible_collections.sglang.deploy.plugins.module_utils.model_files.manifest import CLIENT_DIR
# the progress record is read and written whole, as every JSON file of the project
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import read_json as read, write_json

COPY_TMP = ".sglang-deploy-copy.tmp"


def start(path, directory, files, label, phase):
    """Write the progress file of a transfer about to fill `directory` with `files` ({name: size})."""
    if not path:
        return
    record = {"pid": os.getpid(), "dir": directory, "files": files, "label": label, "phase": phase,
              "started": time.time()}
    record["base_bytes"] = measure(record)[0]
    write_json(path, record)


def finish(path):
    if path and os.path.lexists(path):
        os.unlink(path)


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def measure(record):
    """(bytes done, files done) of a transfer, from the files on disk."""
    directory, files = record["dir"], record["files"]
    done_bytes = done_files = 0
    for name, size in files.items():
        have = _size(os.path.join(directory, *name.split("/")))
        if have == size:
            done_files += 1
        done_bytes += min(have, size)
    temporary = [os.path.join(directory, COPY_TMP)]
    download = os.path.join(directory, CLIENT_DIR, "huggingface", "download")
    for parent, _dirs, names in os.walk(download):
        temporary += [os.path.join(parent, n) for n in names if n.endswith(".incomplete")]
    done_bytes += sum(_size(p) for p in temporary)
    return min(done_bytes, sum(files.values())), done_files


def _bytes(n):
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return "%.1f %s" % (n / scale, unit)
    return "%d B" % n


def _duration(seconds):
    seconds = int(round(seconds))
    if seconds >= 3600:
        return "%d h %02d min" % (seconds // 3600, seconds % 3600 // 60)
    if seconds >= 60:
        return "%d min %02d s" % (seconds // 60, seconds % 60)
    return "%d s" % seconds


def line(record, done_bytes, done_files, now=None):
    """One line for an operator: bytes and files done of the total, the rate, the time left."""
    now = time.time() if now is None else now
    total = sum(record["files"].values())
    elapsed = max(now - record["started"], 0.0)
    gained = max(done_bytes - record.get("base_bytes", 0), 0)
    rate = gained / elapsed if elapsed > 0 else 0.0
    text = "%s %s: %s of %s (%d%%), %d of %d files, %s elapsed" % (
        record["phase"], record["label"], _bytes(done_bytes), _bytes(total),
        int(100 * done_bytes / total) if total else 100, done_files, len(record["files"]), _duration(elapsed))
    if gained >= min(1e6, total / 100.0) and rate > 0:  # a first kilobyte says nothing of the rate
        text += ", %s/s, about %s left" % (_bytes(rate), _duration((total - done_bytes) / rate))
    return text
