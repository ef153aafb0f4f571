# -*- coding: utf-8 -*-
# Controller side only (the sglang_sweep_plan and sglang_sweep_record modules): what a sweep
# writes (sweep.json, candidate-<key>.json, and through them sweep.md, sweep-summary.json and
# winner.yml) and shows (labels, console lines) holds no secret flag value.
"""Secret flag values out of a sweep's files and labels, by flag-model field.

A setting is secret when the flag it sets is one of SECRET_FLAGS
(plugins/module_utils/flags/model.py) as SGLang's argparse reads it: ``api_key`` and
``--api-key`` are ``api-key``, and an abbreviation is the flag it resolves to in the host's
catalog (``api-k`` -> ``api-key``; plugins/module_utils/flags/catalog.py,
``resolve``). Without a catalog (or for a name the catalog does not know) any prefix of a secret
flag counts as secret: a value shown as ``<redacted>`` that was not a secret costs less than the
other way round. A secret option inside a list value (``lora-paths: [x, --api-key, K]``,
``[--api-key=K]``) has its value redacted too, and so has an environment variable that holds a
credential (``HF_TOKEN``, ``is_secret_env``). The flags a candidate launches keep their values
(the sweep runs them); only what is written and shown (sweep.json, the records, labels, the plan
module's result unless the play asks for the values with no_log) is redacted.
"""

from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import SECRET_FLAGS
# which environment variables hold a credential: the shared secrets helper's rule, re-exported
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_secrets import is_secret_env  # noqa: F401

REDACTED = "<redacted>"


def is_secret(name, options=None):
    """Whether the flag ``name`` (any spelling) sets a secret flag. ``options``: the catalog's
    option strings (``--api-key`` ...) or names; empty = no catalog."""
    if not isinstance(name, str):
        return False
    flag = name.strip().lstrip("-").replace("_", "-")
    if not flag:
        return False
    if flag in SECRET_FLAGS:
        return True
    names = set(str(o).lstrip("-") for o in options or ())
    if names:
        if flag in names:
            return False  # an option of its own, not an abbreviation
        matches = [n for n in names if n.startswith(flag)]
        if matches:
            return any(m in SECRET_FLAGS for m in matches)
    return any(secret.startswith(flag) for secret in SECRET_FLAGS)


def redact_env(env):
    """An environment mapping as it is written: every credential's value as ``<redacted>``."""
    if not isinstance(env, dict):
        return env
    return dict((k, REDACTED if v not in (None, "") and is_secret_env(k) else v) for k, v in env.items())


def secret_of(options=None):
    """``is_secret`` bound to a catalog: the predicate the plan's labels use."""
    return lambda name: is_secret(name, options)


def redact_list(values, secret):
    """A list value with the value of every secret option among its items (``--api-key K``,
    ``--api-key=K``; ``secret``: a predicate on option names, e.g. secret_of(options)) as
    ``<redacted>``: argparse would read the item as that option."""
    out, hide = [], False
    for item in values:
        text = item if isinstance(item, str) else ""
        name, eq, _ = text.partition("=")
        if hide:
            out.append(REDACTED)
        elif text.startswith("-") and len(name) > 1 and secret(name):
            out.append(name + "=" + REDACTED if eq else item)
        else:
            out.append(item)
        hide = bool(text.startswith("-") and len(name) > 1 and not eq and secret(name))
    return out


def redact_args(args, options=None):
    """A flag mapping with every secret value as ``<redacted>`` (``None`` = removed, kept), and the
    secret options inside list values redacted (redact_list)."""
    if not isinstance(args, dict):
        return args
    secret = secret_of(options)
    return dict((k, REDACTED if v is not None and secret(k) else
                 redact_list(v, secret) if isinstance(v, (list, tuple)) else v) for k, v in args.items())


def redact_settings_map(settings, options=None):
    """A mapping of flags and VARIABLES (capitals: an axis value, a candidate's settings) redacted:
    flags as redact_args, variables as redact_env."""
    if not isinstance(settings, dict):
        return settings
    env = dict((k, v) for k, v in settings.items() if isinstance(k, str) and k.isupper())
    out = redact_args(dict((k, v) for k, v in settings.items() if k not in env), options)
    out.update(redact_env(env))
    return dict((k, out[k]) for k in settings)


def redact_candidate(cand, options=None):
    """A candidate as it is written and shown: its flags, environment and changes redacted (its
    label and aliases are redacted when they are made: sglang_sweep_plan.describe)."""
    changes = cand.get("changes") or {}
    return dict(cand, args=redact_args(cand.get("args") or {}, options), env=redact_env(cand.get("env") or {}),
                changes=dict(changes, args=redact_args(changes.get("args") or {}, options),
                             env=redact_env(changes.get("env") or {})))


def _axis(axis, values, options):
    secret = is_secret_env(axis) if isinstance(axis, str) and axis.isupper() else is_secret(axis, options)
    return [redact_settings_map(v, options) if isinstance(v, dict) else None if v is None else
            REDACTED if secret else redact_list(v, secret_of(options)) if isinstance(v, list) else v
            for v in values]


def redact_settings(settings, options=None):
    """The sweep file's own settings (sweep_base, sweep_axes, sweep_candidates) as sweep.json
    keeps them: each secret flag's value redacted, in every place a sweep file can set one."""
    out = dict(settings)
    base = out.get("base") or {}
    if isinstance(base, dict):
        out["base"] = dict(base, args=redact_args(base.get("args") or {}, options), env=redact_env(base.get("env") or {}))
    axes = out.get("axes") or {}
    if isinstance(axes, dict):
        out["axes"] = dict((axis, _axis(axis, values, options) if isinstance(values, list) else values)
                           for axis, values in axes.items())
    cands = out.get("candidates") or []
    if isinstance(cands, list):
        out["candidates"] = [dict(c, args=redact_args(c.get("args") or {}, options),
                                  env=redact_env(c.get("env") or {})) if isinstance(c, dict) else c for c in cands]
    return out


# What Ansible masks: a module masks a string wherever it occurs in what it returns (its arguments
# as -vvv prints them included), so a value this short is left out: "1" would turn every 1 and
# every number holding one into ********. The files and labels redact such a value all the same;
# the server's output redaction skips values under 4 characters too
# (roles/sglang_server/files/sitecustomize.py, MIN_LENGTH).
MASK_MIN_LENGTH = 4


def _leaves(value):
    if isinstance(value, dict):
        return set().union(*(_leaves(v) for v in value.values()))
    if isinstance(value, (list, tuple)):
        return set().union(*(_leaves(v) for v in value))
    return set() if value is None or isinstance(value, bool) else {str(value)}


def hidden_values(original, shown):
    """The values the redaction hid: each value of ``original`` whose counterpart in ``shown`` (the
    same structure as redacted above) is ``<redacted>``, or ``--flag=<redacted>`` for an item
    ``--flag=VALUE``. The redaction decides what is secret; this only reads what it replaced."""
    if isinstance(original, dict) and isinstance(shown, dict):
        return set().union(*(hidden_values(v, shown[k]) for k, v in original.items() if k in shown))
    if isinstance(original, (list, tuple)) and isinstance(shown, (list, tuple)) and len(original) == len(shown):
        return set().union(*(hidden_values(a, b) for a, b in zip(original, shown)))
    if not (isinstance(shown, str) and shown.endswith(REDACTED)) or original == shown:
        return set()
    prefix = shown[:-len(REDACTED)]
    if prefix and isinstance(original, str) and original.startswith(prefix):
        return {original[len(prefix):]}
    return _leaves(original)


def maskable(values):
    """``values`` as a module's no_log values: strings of at least MASK_MIN_LENGTH, longest first."""
    return sorted((v for v in values if len(v) >= MASK_MIN_LENGTH), key=lambda v: (-len(v), v))


def plan_secrets(current_args, current_env, base=None, axes=None, candidates=None, options=None):
    """The secret values among a sweep plan's inputs (sglang_sweep_plan's current_args,
    current_env, base, axes and candidates): what the modules that get them have Ansible mask.
    Every candidate's values come from these, so they cover every candidate's too."""
    settings = {"base": base or {}, "axes": axes or {}, "candidates": candidates or []}
    original = {"args": current_args or {}, "env": current_env or {}, "settings": settings}
    shown = {"args": redact_args(original["args"], options), "env": redact_env(original["env"]),
             "settings": redact_settings(settings, options)}
    return maskable(hidden_values(original, shown))


def candidate_secrets(cand, options=None):
    """The secret values of one candidate as sglang_sweep_plan returned it with reveal."""
    return maskable(hidden_values(cand, redact_candidate(cand, options))) if isinstance(cand, dict) else []


def sweep_secrets(original, base=None, axes=None, candidates=None, options=None):
    """The filter sglang_sweep_secrets (roles/sglang_sweep): plan_secrets of the canary's current
    configuration ``original`` ({flags, env}, as the plan gets it) and the sweep file's base, axes
    and candidates, for the ``secrets`` option of sglang_sweep_plan and sglang_sweep_record, whose
    results and arguments (at -vvv too) Ansible then masks."""
    original = original or {}
    return plan_secrets(original.get("flags"), original.get("env"), base, axes, candidates, options)
