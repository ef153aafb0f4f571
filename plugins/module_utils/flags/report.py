"""Findings (flags/rules.py and the other checks here) as the lines a play prints.

tasks/main.yml and tasks/host_validate.yml print one host's findings with
``sglang_flags_format``; tasks/lint.yml gathers every host's with ``sglang_flags_collect`` and
splits them into errors and warnings with ``sglang_flags_report``.
"""

from __future__ import annotations

import re

_FLAG_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _flag_label(flag) -> str:
    if flag is None:
        return "-"
    flag = str(flag)
    if flag in ("argv", "stdin") or not _FLAG_RE.match(flag) or flag != flag.lower():
        return flag  # a variable, an environment variable, "role x", "-"
    return f"--{flag}"


def sglang_flags_format(findings, host="") -> list:
    """One line per finding: ``host: --flag [rule-id] message. Fix: ... (source: ...)``."""
    lines = []
    for f in findings or []:
        prefix = f"{host}: " if host else ""
        line = f"{prefix}{_flag_label(f.get('flag'))} [{f.get('rule')}] {f.get('message')}"
        if f.get("fix"):
            line += f" Fix: {f['fix']}"
        if f.get("source"):
            line += f" (source: {f['source']})"
        lines.append(line)
    return lines


def sglang_flags_report(by_host) -> dict:
    """Aggregate ``{host: [findings]}`` into ``{errors: [lines], warnings: [lines]}``."""
    errors, warnings = [], []
    for host in sorted(by_host or {}):
        for f in by_host[host] or []:
            line = sglang_flags_format([f], host)[0]
            (errors if f.get("severity") == "error" else warnings).append(line)
    return {"errors": errors, "warnings": warnings}


def sglang_flags_collect(hostvars, hosts, varname) -> dict:
    """``{host: hostvars[host][varname]}`` for every host; ``[]`` where it is unset (a host
    that failed before its findings were computed)."""
    out = {}
    for host in hosts or []:
        try:
            value = hostvars[host][varname]
        except (KeyError, AttributeError, TypeError):
            value = None
        if value is None or type(value).__name__.endswith("Undefined"):
            value = [
                {
                    "rule": "not-evaluated",
                    "severity": "error",
                    "status": "violation",
                    "flag": "-",
                    "value": None,
                    "message": "this host's flags were not evaluated (it failed earlier in the play)",
                    "fix": "see the failure above for this host",
                    "source": "playbooks/lint.yml",
                }
            ]
        out[str(host)] = list(value)
    return out
