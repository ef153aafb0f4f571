"""The server's start log: one JSON object per line, a start each (time, seconds to the first
generation, ml_env generation, cold or warm). sglang_server_wait appends; sglang_probe reads it
into the verification report. Standard library only (runs on the hosts)."""

from __future__ import annotations

import json

from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import write_text


def _lines(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return [line for line in handle.read().splitlines() if line.strip()]
    except OSError:
        return []


def _parse(line):
    try:
        return json.loads(line)
    except ValueError:
        return None


def read(path, keep=20):
    """The records of the newest `keep` lines ([] without a log; a torn line is left out)."""
    if not path:
        return []
    records = [_parse(line) for line in _lines(path)[-keep:]]
    return [r for r in records if r is not None]


def append(path, record, keep=50):
    """Append one start, keeping the newest `keep` (atomic rewrite, mode 0644). Its cache is warm
    when an earlier start of the same generation is in the log (the per-generation cache
    directory holds what that start compiled), cold when none is, unknown without a generation."""
    lines = _lines(path)
    generation = record.get("generation")
    if not generation:
        record["cache"] = "unknown"
    else:
        earlier = (_parse(line) for line in lines)
        record["cache"] = "warm" if any(isinstance(r, dict) and r.get("generation") == generation
                                        for r in earlier) else "cold"
    lines = (lines + [json.dumps(record, sort_keys=True)])[-keep:]
    write_text(path, "\n".join(lines) + "\n", mode=0o644)
