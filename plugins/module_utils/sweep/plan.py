# -*- coding: utf-8 -*-
# Controller side only (the sglang_sweep_plan and sglang_sweep_record modules): a sweep file's
# base, axes and explicit candidates expanded into concrete flag sets. Flag names go through the
# flag model (plugins/module_utils/flags/model.py): folded, refused, rendered and compared there.
"""Expand a tuning sweep into candidates.

A candidate is ``{key, label, args, env, changes, aliases}``:

* ``args``: the full flag set it launches, names folded, omitted flags (``null``/``false``)
  dropped: the host's current flags, overlaid by ``sweep_base.args`` and the candidate's own;
* ``env``: the full environment, values as strings (``true`` -> "1"), ``null`` removes;
* ``changes``: ``{args: {flag: value}, env: {NAME: value}}``, what differs from the host's
  current configuration (``None`` = removed), for display and the winner's snippet;
* ``key``: sha256 of the canonical JSON of (args, env) [:12], secret flags left out: the same
  flags give the same key in any sweep file, so a resumed sweep recognises finished candidates;
* ``label``: the name the sweep file gives, else the changes in one line, secret values
  redacted (what is written and shown: plugins/module_utils/sweep/redact.py).

The host's current configuration is always the first candidate, ``baseline``; the base
overrides apply to every other candidate. Candidates with identical content are kept once
(their other labels in ``aliases``).
"""

import hashlib
import itertools
import json
import re

from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import (
    SECRET_FLAGS,
    FlagModelError,
    fold_args,
    norm_value,
    normalize_args,
)
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_input_guard import refused_option
from ansible_collections.sglang.deploy.plugins.module_utils.sweep.redact import (
    REDACTED,
    is_secret,
    is_secret_env,
    redact_list,
)

BASELINE = "baseline"
NO_CHANGE = "(no change)"
# axis keys and candidate settings in capitals are environment variables, the rest are flags
_ENV_AXIS = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CANDIDATE_KEYS = ("name", "args", "env")
# SGLang's --port and --host when none is given (server_args.py); the port roles/sglang_firewall
# filters then
DEFAULT_PORT = 30000
DEFAULT_HOST = "127.0.0.1"


class SweepPlanError(ValueError):
    """A sweep file the plan refuses; the message names the variable and the fix."""


def _env_value(value):
    """A variable as the unit's environment file gets it (None = not set)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _env(env, where):
    if env is None:
        return {}
    if not isinstance(env, dict):
        raise SweepPlanError("%s must be a mapping of NAME -> value" % where)
    for name in env:
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise SweepPlanError("%s: %r is not an environment variable name" % (where, name))
    return dict((name, _env_value(value)) for name, value in env.items())


def _args(args, where):
    try:
        return fold_args(args)
    except FlagModelError as exc:
        raise SweepPlanError("%s: %s" % (where, exc))


def _overlay(args, env, over_args, over_env):
    """The flags and environment with the overrides applied (``None`` values kept: removal)."""
    out_args, out_env = dict(args), dict(env)
    out_args.update(over_args)
    out_env.update(over_env)
    return out_args, out_env


def _final(args, env):
    return normalize_args(args), dict((k, v) for k, v in env.items() if v is not None)


def candidate_key(args, env):
    """Content key of a flag set and environment (secret flags left out)."""
    canon = json.dumps({
        "args": dict((k, norm_value(v)) for k, v in normalize_args(args).items() if k not in SECRET_FLAGS),
        "env": dict((k, _env_value(v)) for k, v in (env or {}).items() if v is not None),
    }, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()[:12]


def changes(args, env, current_args, current_env):
    """What a candidate sets differently from the current configuration (None = removed)."""
    diff = {"args": {}, "env": {}}
    for new, old, part, same in ((args, current_args, "args", lambda a, b: norm_value(a) == norm_value(b)),
                                 (env, current_env, "env", lambda a, b: a == b)):
        for name in list(old) + [n for n in new if n not in old]:
            if name not in new:
                diff[part][name] = None
            elif name not in old or not same(new[name], old[name]):
                diff[part][name] = new[name]
    return diff


def describe(diff, secret=None):
    """``max-running-requests=16 OMP_NUM_THREADS=2 -enable-metrics``: a change set in one line;
    the value of a flag ``secret(name)`` calls secret (default: any spelling of a secret flag), of
    a secret option inside a list value and of a credential variable (HF_TOKEN) is ``<redacted>``
    (plugins/module_utils/sweep/redact.py)."""
    words, secret = [], secret or is_secret
    for part in ("args", "env"):
        for name, value in diff[part].items():
            if value is None:
                words.append("-%s" % name)
            elif value is True and part == "args":
                words.append("+%s" % name)
            elif secret(name) if part == "args" else is_secret_env(name):
                words.append("%s=%s" % (name, REDACTED))
            elif part == "args" and isinstance(value, (list, tuple)):
                words.append("%s=%s" % (name, norm_value(redact_list(value, secret))))
            else:
                words.append("%s=%s" % (name, norm_value(value) if part == "args" else value))
    return " ".join(words) or NO_CHANGE


def _split(settings, where):
    """A mapping of flag and variable names (capitals = variable) -> (args, env)."""
    if not isinstance(settings, dict):
        raise SweepPlanError("%s must be a mapping of flag or VARIABLE -> value" % where)
    flags = dict((k, v) for k, v in settings.items() if not (isinstance(k, str) and _ENV_AXIS.match(k)))
    env = dict((k, v) for k, v in settings.items() if isinstance(k, str) and _ENV_AXIS.match(k))
    return _args(flags, where), _env(env, where)


def axis_settings(axes):
    """Each axis as a list of (args, env) overrides. A mapping value sets the flags and
    variables it names together (linked settings; the axis key is then only a label); any
    other value (null included) sets the flag or variable the axis key names."""
    if axes is None:
        return []
    if not isinstance(axes, dict):
        raise SweepPlanError("sweep_axes must be a mapping of axis -> list of values")
    out = []
    for axis, values in axes.items():
        where = "sweep_axes[%r]" % (axis,)
        if not isinstance(values, list) or not values:
            raise SweepPlanError("%s must be a non-empty list of values" % where)
        settings = []
        for i, value in enumerate(values):
            if isinstance(value, dict):
                settings.append(_split(value, "%s[%d]" % (where, i)))
            else:
                if not isinstance(axis, str):
                    raise SweepPlanError("%s: the axis key must be a flag or VARIABLE name" % where)
                settings.append(_split({axis: value}, where))
        out.append(settings)
    return out


def _explicit(candidates):
    if candidates is None:
        return []
    if not isinstance(candidates, list):
        raise SweepPlanError("sweep_candidates must be a list of {name, args, env}")
    out = []
    for i, cand in enumerate(candidates):
        where = "sweep_candidates[%d]" % i
        if not isinstance(cand, dict):
            raise SweepPlanError("%s must be a mapping {name, args, env}" % where)
        unknown = sorted(set(cand) - set(_CANDIDATE_KEYS))
        if unknown:
            raise SweepPlanError("%s: unknown key(s) %s; a candidate has %s" % (
                where, ", ".join(map(str, unknown)), ", ".join(_CANDIDATE_KEYS)))
        out.append((cand.get("name"), _args(cand.get("args"), where + ".args"),
                    _env(cand.get("env"), where + ".env")))
    return out


def _candidate(label, args, env, current, secret=None):
    args, env = _final(args, env)
    diff = changes(args, env, current[0], current[1])
    return {"key": candidate_key(args, env), "label": label or describe(diff, secret), "args": args, "env": env,
            "changes": diff, "aliases": []}


def expand(current_args, current_env, base=None, axes=None, candidates=None, secret=None):
    """The candidates of a sweep, the baseline first, duplicates merged (see the module doc).
    ``secret``: which flag names are secret, for the labels (secret_of of sweep/redact.py)."""
    current = _final(_args(current_args, "current flags"), _env(current_env, "current environment"))
    base = base or {}
    if not isinstance(base, dict) or set(base) - {"args", "env"}:
        raise SweepPlanError("sweep_base must be a mapping {args: {...}, env: {...}}")
    start = _overlay(current[0], current[1], _args(base.get("args"), "sweep_base.args"),
                     _env(base.get("env"), "sweep_base.env"))
    found = [_candidate(BASELINE, current[0], current[1], current)]
    for combo in itertools.product(*axis_settings(axes)) if axes else ():
        args, env = start
        for over_args, over_env in combo:
            args, env = _overlay(args, env, over_args, over_env)
        found.append(_candidate(None, args, env, current, secret))
    for name, over_args, over_env in _explicit(candidates):
        found.append(_candidate(name, *_overlay(start[0], start[1], over_args, over_env), current=current,
                                secret=secret))
    out, by_key = [], {}
    for cand in found:
        first = by_key.get(cand["key"])
        if first is None:
            by_key[cand["key"]] = cand
            out.append(cand)
        elif cand["label"] not in (first["label"], NO_CHANGE) and cand["label"] not in first["aliases"]:
            first["aliases"].append(cand["label"])
    return out


def _bind(args, option):
    """The value argparse takes for --``option`` from ``args`` (the option or a prefix of it: the
    last one wins), or None."""
    return next((v for f, v in reversed(list(args.items())) if refused_option(f, (option,))), None)


def _smuggled(args, option):
    """The flag whose list value carries --``option`` (any prefix, ``--port=1``) as an item."""
    return next((f for f, v in args.items() for i in (v if isinstance(v, (list, tuple)) else [v])
                 if isinstance(i, str) and i.startswith("-") and refused_option(i, (option,))), "")


def bind_problem(cands, filtered_port=None):
    """Why a candidate of ``cands`` (expand's, the baseline first) may not run: it sets --port to
    another port than ``filtered_port`` (roles/sglang_firewall's sglang_firewall_port; None: the
    baseline's port, the firewall's default), or --host to another address than the baseline's,
    by any spelling, or either inside a list value. "" when none does."""
    base = cands[0]["args"]
    port = str(norm_value(filtered_port if filtered_port not in (None, "") else _bind(base, "port") or DEFAULT_PORT))
    for cand in cands[1:]:
        args, changed = cand["args"], cand["changes"]["args"]
        for option in ("port", "host"):
            flag = _smuggled(args, option)
            if flag:
                return ("candidate %r: the value of --%s carries --%s, which would move the server off its "
                        "bind. Fix: remove it from the candidate's %s" % (cand["label"], flag, option, flag))
        if any(refused_option(f, ("port",)) for f in changed):
            value = _bind(args, "port")
            value = DEFAULT_PORT if value is None else value  # removed: SGLang's default
            if str(norm_value(value)) != port:
                return ("candidate %r sets --port %s, but the firewall (roles/sglang_firewall) filters port %s "
                        "(sglang_firewall_port): the candidate would serve on a port nothing filters. Fix: "
                        "remove port from the candidate (its settings, sweep_base or the axis); every "
                        "candidate runs on the filtered port" % (cand["label"], value, port))
        host, bound = (_bind(a, "host") for a in (args, base))
        host, bound = (DEFAULT_HOST if h is None else h for h in (host, bound))
        if any(refused_option(f, ("host",)) for f in changed) and norm_value(host) != norm_value(bound):
            return ("candidate %r sets --host %s, but the canary binds %s, the address its firewall and "
                    "the server's guards judged. Fix: remove host from the candidate (its settings, "
                    "sweep_base or the axis)" % (cand["label"], host, bound))
    return ""


def validate_name(value, what):
    """A sweep or host name used as one directory of the results path."""
    if not isinstance(value, str) or not value or value in (".", "..") or "/" in value or "\0" in value:
        raise SweepPlanError("%s %r cannot name a directory: use letters, digits, '-', '_' or '.'" % (what, value))
    return value
