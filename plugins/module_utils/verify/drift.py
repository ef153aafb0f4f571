# -*- coding: utf-8 -*-
# Drift of the sglang_verify role: the inventory's flags against the running server's
# /server_info. What a flag is, how it is spelt, shown and compared is the flag model's
# (plugins/module_utils/flags/model.py). Standard library only (runs on the GPU host with the
# probe module).
"""Inventory flags against the flags the server runs with."""

from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import (
    RESOLVED_ALIASES,
    SECRET_FLAGS,
    field_for_flag,
    fold_args,
    norm_value,
    normalize_flag,
    parse_launch_command,
)


def compare_args(expected, server_info, ignore=()):
    """Compare the inventory's flags with the running server.

    The flags the server was launched with (`launch_command`) are compared first: a value
    that differs or a flag that is missing is drift. The resolved value (`/server_info`
    field) is looked at too: when SGLang replaced what was asked for, that is listed as a
    warning (`resolved`), since SGLang does this on purpose for some flags.
    Flag names are compared as the flag model folds them (``model_path`` is ``model-path``;
    plugins/module_utils/flags/model.py); ``false``/``null`` mean "not on the command line".
    Returns a dict: ok, mismatches[], extra[], resolved[], unverifiable[], checked.
    Raises FlagModelError for a flag name the model refuses.
    """
    expected = fold_args(expected)
    ignore = set(normalize_flag(name) for name in ignore or ())
    launch = parse_launch_command(server_info.get("launch_command"))
    have_launch = bool(launch)
    mismatches, resolved, unverifiable = [], [], []
    checked = 0
    for flag in sorted(expected):
        if flag in ignore:
            continue
        want = expected[flag]
        if want is False or want is None:
            if have_launch and flag in launch:
                mismatches.append({"flag": flag, "expected": "(absent)",
                                   "actual": _display(flag, launch[flag])})
            continue
        checked += 1
        field = field_for_flag(flag)
        actual_field = server_info.get(field, _MISSING)
        if have_launch:
            if flag not in launch:
                mismatches.append({"flag": flag, "expected": _display(flag, want), "actual": "(not on its command line)"})
                continue
            if norm_value(launch[flag]) != norm_value(want):
                mismatches.append({"flag": flag, "expected": _display(flag, want),
                                   "actual": _display(flag, launch[flag])})
                continue
            if actual_field is not _MISSING and flag not in SECRET_FLAGS:
                if not _resolved_matches(field, want, actual_field):
                    resolved.append({"flag": flag, "asked": _display(flag, want),
                                     "resolved": _display(flag, actual_field)})
        else:
            if actual_field is _MISSING:
                unverifiable.append(flag)
                continue
            if flag in SECRET_FLAGS:
                continue
            if not _resolved_matches(field, want, actual_field):
                mismatches.append({"flag": flag, "expected": _display(flag, want),
                                   "actual": _display(flag, actual_field)})
    extra = []
    if have_launch:
        for flag in sorted(launch):
            if flag in ignore:
                continue
            if flag not in expected:
                extra.append({"flag": flag, "value": _display(flag, launch[flag])})
    return {
        "ok": not mismatches,
        "source": "launch_command" if have_launch else "server_info fields",
        "checked": checked,
        "mismatches": mismatches,
        "extra": extra,
        "resolved": resolved,
        "unverifiable": unverifiable,
    }


_MISSING = object()


def compare_resolved(expected, server_info, asked=None):
    """The profile's expectations on what SGLang resolved (``/server_info`` fields such as
    ``attention_backend`` or ``page_size``) against the running server.

    SGLang replaces some choices on its own at start-up and says nothing (a backend or a page
    size picked for another flag); the launch flags then match the inventory while the server
    runs something else. ``expected``: field -> value (a flag spelling, ``page-size``, is read
    as its field). A field the server does not show is a mismatch too: an expectation that
    cannot be checked protects nothing. ``asked``: the flags the server was launched with
    (name -> value); where they ask another value for an expected field (a sweep candidate
    trying another backend), the expectation does not apply and is listed as skipped.
    Returns a dict: ok, checked, mismatches[{field, expected, actual}], skipped[{field, expected, asked}].
    """
    asked_fields = dict((field_for_flag(flag), value) for flag, value in fold_args(asked or {}).items())
    mismatches, skipped = [], []
    for name in sorted(expected or {}):
        field = field_for_flag(normalize_flag(name)) if "-" in name else name
        want = expected[name]
        if field in asked_fields and not (_same_resolved(want, asked_fields[field])
                                          or _resolved_matches(field, asked_fields[field], want)):
            skipped.append({"field": field, "expected": want, "asked": asked_fields[field]})
            continue
        actual = server_info.get(field, _MISSING)
        if actual is _MISSING:
            mismatches.append({"field": field, "expected": want, "actual": "(not in /server_info)"})
        elif not _same_resolved(want, actual):
            mismatches.append({"field": field, "expected": want, "actual": actual})
    return {"ok": not mismatches, "checked": len(expected or {}) - len(skipped),
            "mismatches": mismatches, "skipped": skipped}


def _same_resolved(want, actual):
    """An expectation met: the same value as the flag model compares them (numbers
    numerically, case-insensitive names); null expects the field unset."""
    if want is None or actual is None:
        return want is None and actual is None
    if isinstance(want, bool) or isinstance(actual, bool):
        return str(want).lower() == str(actual).lower()
    return str(norm_value(want)).lower() == str(norm_value(actual)).lower()


def _display(flag, v):
    if flag in SECRET_FLAGS:
        return "<redacted>"
    return v


def _resolved_matches(field, want, actual):
    if want is True:
        return actual is True or (actual not in (False, None, 0, ""))
    if actual is None:
        return False
    a = norm_value(actual)
    w = norm_value(want)
    if a == w:
        return True
    alias = RESOLVED_ALIASES.get((field, str(want)))
    if alias is not None and norm_value(alias) == a:
        return True
    return str(a).lower() == str(w).lower()
