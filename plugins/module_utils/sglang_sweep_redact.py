# -*- coding: utf-8 -*-
# Controller side only (the sglang_sweep_plan and sglang_sweep_record modules): what a sweep
# writes (sweep.json, candidate-<key>.json, and through them sweep.md, sweep-summary.json and
# winner.yml) and shows (labels, console lines) holds no secret flag value.
"""Secret flag values out of a sweep's files and labels, by flag-model field.

A setting is secret when the flag it sets is one of SECRET_FLAGS
(plugins/module_utils/sglang_flags_model.py) as SGLang's argparse reads it: ``api_key`` and
``--api-key`` are ``api-key``, and an abbreviation is the flag it resolves to in the host's
catalog (``api-k`` -> ``api-key``; plugins/filter/sglang_flags_catalog.py,
``resolve``). Without a catalog (or for a name the catalog does not know) any prefix of a secret
flag counts as secret: a value shown as ``<redacted>`` that was not a secret costs less than the
other way round. A secret option inside a list value (``lora-paths: [x, --api-key, K]``,
``[--api-key=K]``) has its value redacted too, and so has an environment variable that holds a
credential (``HF_TOKEN``, ``is_secret_env``). The flags a candidate launches keep their values
(the sweep runs them); only what is written and shown (sweep.json, the records, labels, the plan
module's result unless the play asks for the values with no_log) is redacted.
"""

from ansible_collections.sglang.deploy.plugins.module_utils.sglang_flags_model import SECRET_FLAGS

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


# environment variables whose value is a credential (HF_TOKEN, WANDB_API_KEY, AWS_SECRET_ACCESS_KEY...)
_SECRET_ENV_WORDS = frozenset(("TOKEN", "KEY", "APIKEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL",
                               "CREDENTIALS", "AUTH"))


def is_secret_env(name):
    """Whether the environment variable ``name`` holds a credential: one of its words (split at
    '_') is one of _SECRET_ENV_WORDS (TOKENIZERS_PARALLELISM is not)."""
    return bool(_SECRET_ENV_WORDS & set(str(name).upper().replace("-", "_").split("_")))


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
