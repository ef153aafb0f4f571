"""The scalar kinds of the catalogue: booleans, numbers in a range, choices, one line of text,
names of a pattern, durations, versions, secrets, and the free-form kind (base.py says what a
kind is)."""

from __future__ import annotations

import re

from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as _guard
from ansible_collections.sglang.deploy.plugins.module_utils.inputs.base import Problem, kind, shown

_TRUE_FALSE = ("true", "false", "yes", "no", "on", "off", "1", "0")
_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
# Prometheus' duration (model/time.go ParseDuration): units in descending order, at least one
_DURATION_RE = re.compile(r"(?:[0-9]+y)?(?:[0-9]+w)?(?:[0-9]+d)?(?:[0-9]+h)?(?:[0-9]+m)?(?:[0-9]+s)?(?:[0-9]+ms)?")
# PEP 440 as packaging reads it (a public version, optionally with a local part)
_VERSION_RE = re.compile(r"v?[0-9]+(?:\.[0-9]+)*(?:(?:a|b|rc)[0-9]+)?(?:\.post[0-9]+)?(?:\.dev[0-9]+)?(?:\+[a-z0-9.]+)?",
                         re.IGNORECASE)


def number(value, integer=False):
    """``value`` as an int (``integer``) or float, or None: text counts when it spells one;
    a boolean is not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, float) and not integer):
        return value
    if isinstance(value, float):
        return int(value) if value == int(value) else None
    text = str(value).strip()
    if integer:
        return int(text) if _INT_RE.fullmatch(text) else None
    return float(text) if _FLOAT_RE.fullmatch(text) else None


def _range_text(spec):
    low, high = spec.get("min"), spec.get("max")
    parts = []
    if spec.get("above") is not None:
        parts.append(f"> {spec['above']}")
    elif low is not None:
        parts.append(f">= {low}")
    if spec.get("below") is not None:
        parts.append(f"< {spec['below']}")
    elif high is not None:
        parts.append(f"<= {high}")
    return " and ".join(parts) or "any"


def range_problems(value, spec, integer):
    found = number(value, integer)
    what = "an integer" if integer else "a number"
    limits = _range_text(spec)
    meaning = f" ({spec['means']})" if spec.get("means") else ""
    fix = f"give {what} {limits}{meaning}" if limits != "any" else f"give {what}"
    if found is None:
        return [Problem("input-type", f"{shown(value, spec)} is not {what}", fix)]
    bad = ((spec.get("min") is not None and found < spec["min"])
           or (spec.get("max") is not None and found > spec["max"])
           or (spec.get("above") is not None and found <= spec["above"])
           or (spec.get("below") is not None and found >= spec["below"]))
    if bad:
        return [Problem("input-range", f"{found!r} cannot work: it must be {limits}{meaning}", fix)]
    return []


@kind("bool", "true or false")
def _bool(value, spec, ctx):
    if isinstance(value, bool) or str(value).strip().lower() in _TRUE_FALSE:
        return []
    return [Problem("input-type", f"{shown(value, spec)} is not a boolean", "true or false")]


@kind("int", "an integer within [min, max] (a count, size, interval, threshold or limit)",
      ("min", "max", "above", "below", "means"))
def _int(value, spec, ctx):
    return range_problems(value, spec, integer=True)


@kind("number", "a number within [min, max], or (above, below) (a ratio, a share, seconds)",
      ("min", "max", "above", "below", "means"))
def _number(value, spec, ctx):
    return range_problems(value, spec, integer=False)


@kind("choice", "one of `choices` (the argument spec's, where it lists them; a contract test holds the two equal)",
      ("choices",))
def _choice(value, spec, ctx):
    choices = spec.get("choices")
    if choices and value not in choices and str(value) not in [str(c) for c in choices]:
        return [Problem("input-choice", f"{shown(value, spec)} is not one of {', '.join(map(str, choices))}",
                        f"give one of {', '.join(map(str, choices))}")]
    return []


def control_problems(text, spec):
    char = _guard.control_char(text)
    if char:
        return [Problem("input-control-char", f"{shown(text, spec)} contains the control character {char}: a "
                        "line break ends the "
                        "line of the file it is written into, and what follows is read as a line of its own",
                        "remove it (a YAML `|` block keeps a trailing newline: use `>-` or a plain scalar)")]
    return []


@kind("text", "one line of text shown or written as it is (no control character or line separator)",
      ("multiline",))
def _text(value, spec, ctx):
    if isinstance(value, (list, dict)):
        return [Problem("input-type", f"is a {type(value).__name__}, not text", "give one line of text")]
    text = str(value)
    if spec.get("multiline"):
        text = text.replace("\n", " ")
    return control_problems(text, spec)


@kind("name", "a name of a given pattern (an nftables table, an inventory group, a run id, a module; `rule`: "
      "its own rule id)", ("pattern", "what", "example", "rule"))
def _name(value, spec, ctx):
    what = spec.get("what", "name")
    if isinstance(value, (list, dict, bool)):
        return [Problem("input-type", f"is a {type(value).__name__}, not a {what}", f"give a {what}")]
    text = str(value)
    pattern = spec.get("pattern", r"[A-Za-z0-9][A-Za-z0-9_.-]*")
    if _guard.control_char(text):
        return control_problems(text, spec)
    if not re.fullmatch(pattern, text):
        example = f", e.g. {spec['example']}" if spec.get("example") else ""
        return [Problem(spec.get("rule", "input-name"), f"{shown(value, spec)} is not a {what} (the pattern "
                        f"{pattern})", f"give a {what}{example}")]
    return []


@kind("duration", "a Prometheus duration (5m, 1h30m, 15s), more than zero (zero too where `zero_ok`)",
      ("zero_ok",))
def _duration(value, spec, ctx):
    text = str(value).strip()
    zero = not re.search(r"[1-9]", text)
    if not text or not _DURATION_RE.fullmatch(text) or (zero and not spec.get("zero_ok")):
        above = " or zero" if spec.get("zero_ok") else " above zero"
        return [Problem("input-duration", f"{shown(value, spec)} is not a Prometheus duration{above}",
                        "e.g. 30s, 5m, 1h30m")]
    return []


@kind("version", "a version (PEP 440, or MAJOR.MINOR where the spec's pattern says)", ("pattern", "example"))
def _version(value, spec, ctx):
    text = str(value).strip()
    pattern = spec.get("pattern")
    ok = re.fullmatch(pattern, text) if pattern else _VERSION_RE.fullmatch(text)
    if not ok or _guard.control_char(text):
        return [Problem("input-version", f"{shown(value, spec)} is not a version"
                        + (f" of the form {pattern}" if pattern else " (PEP 440)"),
                        f"e.g. {spec.get('example', '0.5.23')}")]
    return []


@kind("key", "a secret (an API key, a token): a string without whitespace, at least min characters; never "
      "quoted", ("min_length",))
def _key(value, spec, ctx):
    problem = _guard.key_problem(value)
    if problem:
        return [Problem("input-key-shape", f"<redacted> {problem}", "a random string without whitespace, e.g. "
                        "`openssl rand -hex 32`, vault-encrypted")]
    length = spec.get("min_length", 16)
    if len(str(value)) < length:
        return [Problem("input-key-short", f"<redacted> has {len(str(value))} characters, fewer than {length}: "
                        "a short key is guessable", f"at least {length} characters, e.g. `openssl rand -hex 32`")]
    return []


_TYPES = {"dict": dict, "list": (list, tuple), "str": str}


@kind("free", "free-form: the spec says why (`why`) and what judges it instead; of the `type` given (dict, list, "
      "str)", ("why", "type"))
def _free(value, spec, ctx):
    wanted = spec.get("type")
    if wanted and not isinstance(value, _TYPES[wanted]):
        return [Problem("input-type", f"is a {type(value).__name__}, not a {wanted}", f"give a {wanted}")]
    return []


@kind("hosts-or-bool", "true/false, or a list of inventory host names (this run's hosts it applies to)")
def _hosts_or_bool(value, spec, ctx):
    if isinstance(value, bool) or str(value).strip().lower() in _TRUE_FALSE:
        return []
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) and not _guard.control_char(v) for v in value):
        return []
    return [Problem("input-type", f"{shown(value, spec)} is neither true/false nor a list of host names",
                    "true, false, or [host, ...]")]


@kind("count-or-percent", "an integer >= min, or \"N%\" of a group (0-100)", ("min",))
def _count_or_percent(value, spec, ctx):
    text = str(value).strip()
    if text.endswith("%"):
        share = number(text[:-1], integer=True)
        if share is None or not 0 <= share <= 100:
            return [Problem("input-range", f"{shown(value, spec)} is not a share 0%-100%", "e.g. 25%")]
        return []
    return range_problems(value, {"min": spec.get("min", 0)}, integer=True)


@kind("serial", "Ansible's serial: an integer >= 1, \"N%\" (1-100), or a list of them")
def _serial(value, spec, ctx):
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items:
        return [Problem("input-range", "is an empty list", "e.g. 1, \"25%\" or [1, \"50%\"]")]
    for item in items:
        text = str(item).strip()
        share = number(text[:-1], integer=True) if text.endswith("%") else None
        whole = number(text, integer=True)
        if not ((share is not None and 1 <= share <= 100) or (whole is not None and whole >= 1)):
            return [Problem("input-range", f"{shown(item, spec)} is neither an integer >= 1 nor a share 1%-100%: "
                            "a batch of none never ends", "e.g. 1, \"25%\" or [1, \"50%\"]")]
    return []


@kind("requirement", "one pip requirement line (PEP 508: name, version, extras, markers, or name @ URL); never "
      "an option of pip's (a line starting with '-' would be read as --index-url ...)")
def _requirement(value, spec, ctx):
    from packaging.requirements import InvalidRequirement, Requirement  # controller only: ansible-core's own
    text = str(value).strip()
    if text.startswith("-") or _guard.control_char(text):
        return [Problem("input-requirement", f"{shown(value, spec)} is read by pip as an option, not a package",
                        "give a requirement (name==version); indexes go into their own variables")]
    try:
        Requirement(text)
    except InvalidRequirement as exc:
        return [Problem("input-requirement", f"{shown(value, spec)} is not a requirement ({exc})",
                        "e.g. sglang==0.5.23")]
    return []
