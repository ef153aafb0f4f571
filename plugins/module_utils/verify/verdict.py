# -*- coding: utf-8 -*-
# The one shape every registered gate returns (plugins/module_utils/verify/registry.py), and
# what a gate entry is. Controller side only (the sglang_verify_gate module).
"""A gate entry, its settings, and the verdict every gate returns."""

import collections

# worst last: the verdict of a host is its gates' worst level
LEVELS = ("not_applicable", "same", "passed", "numerics_changed", "degraded", "failed")
FAILING = ("degraded", "failed")

# name: the gate's name (report, docs/architecture.md's table, the module's `gates` keys);
# settings: {key: default}, a closed dict: each key is the role option sglang_verify_<key>;
# needs: the probe checks whose results it reads (sglang_probe's `checks`);
# evaluate(ctx, settings) -> a verdict, or None when the gate is off or had nothing to judge;
# protocol(ctx, settings) -> how its figure was measured (keys its accepted history), or None
#   for a gate without history; record(ctx, settings) -> the figures a passing run adds to it;
# test: the unit test file that holds the gate; options: role options that shape it besides its
#   settings (what the probe measures it with).
Gate = collections.namedtuple("Gate", "name settings needs evaluate protocol record test options",
                              defaults=(None, None, None, ()))


def verdict(gate, level, reasons=(), figures=(), message=""):
    """The verdict shape: ``level`` (one of LEVELS), ``reasons`` (why: each failure quoted, or
    why the gate does not apply), ``figures`` (the table's rows: gate, value, limit, ok, unit,
    note), ``message`` (one sentence for a person)."""
    if level not in LEVELS:
        raise ValueError("gate %s: level %r is none of %s" % (gate, level, ", ".join(LEVELS)))
    return {"gate": gate, "level": level, "reasons": list(reasons), "figures": list(figures),
            "message": message or ("%s: %s" % (gate, level) + (" (%s)" % "; ".join(reasons) if reasons else ""))}


def failed(v):
    return v["level"] in FAILING


def check_settings(registry, given):
    """{gate name: settings with defaults}: ``given`` ({gate: {key: value}}) checked as a closed
    dict of closed dicts; an unknown gate or key raises ValueError naming it."""
    names = [g.name for g in registry]
    unknown = sorted(set(given or {}) - set(names))
    if unknown:
        raise ValueError("gates: no registered gate %s (registered: %s)" % (", ".join(unknown), ", ".join(names)))
    out = {}
    for g in registry:
        mine = dict((given or {}).get(g.name) or {})
        extra = sorted(set(mine) - set(g.settings))
        if extra:
            raise ValueError("gates.%s: no setting %s (settings: %s)" % (g.name, ", ".join(extra), ", ".join(
                sorted(g.settings))))
        out[g.name] = dict(g.settings, **mine)
    return out


def outcome(verdicts):
    """(passed, failures, rows) of a host from its verdicts, in registry order."""
    failures = [r for v in verdicts if failed(v) for r in v["reasons"]]
    rows = [row for v in verdicts for row in v["figures"]]
    return not failures, failures, rows


def limit_value(v):
    """A gate limit from the inventory: None, "", "None" and "null" mean no gate."""
    if v is None or (isinstance(v, str) and v.strip().lower() in ("", "none", "null")):
        return None
    return float(v)


def flag(v):
    """A boolean setting as Ansible may template it (a string)."""
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)
