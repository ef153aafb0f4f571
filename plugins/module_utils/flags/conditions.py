"""What each condition of a rule's ``applies`` means (the rules table, roles/sglang_flags/vars/main.yml).

flags/rules.py documents the fields and calls ``evaluate_rule`` for every rule of the
table on one host's normalised flag set; this module only decides whether a rule applies and
which flag and value the finding names. Every condition given must hold (AND).
"""

from __future__ import annotations

import fnmatch


# siblings of the collection, imported by name
from ansible_collections.sglang.deploy.plugins.module_utils.flags import version as _versions
from ansible_collections.sglang.deploy.plugins.module_utils.flags import requirements as _requirements
from ansible_collections.sglang.deploy.plugins.module_utils.flags import sm as _sm
from ansible_collections.sglang.deploy.plugins.module_utils.flags import gpus as _gpus
from ansible_collections.sglang.deploy.plugins.module_utils.flags import memory as _memory

KNOWN_CONDITIONS = {
    "sm",
    "sglang",
    "flags_any",
    "flag_at_least",
    "flag_values",
    "flag_values_outside",
    "flag_unset_or",
    "flag_lacks",
    "model_any",
    "flags_absent",
    "env_any",
    "packages_absent",
    "gpus_exceed_count",
    "weights_exceed_memory",
    "dp_with_attn_dp",
    "attn_dp_not_dividing_tp",
    "env_unset",
}

# an environment switch SGLang reads as off (its EnvBool)
_ENV_OFF = {"", "0", "false", "no", "off"}


def _values(value) -> list:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    if value is True:
        return []
    return [str(value)]


def _lc(values) -> set:
    return {str(v).lower() for v in values}


def _number(text):
    """``text`` as a number (int or float), or None when it is not one (``true``, ``auto``)."""
    try:
        return float(str(text).strip())
    except ValueError:
        return None


def flag_at_least(args, limits) -> tuple | None:
    """``(flag, value)`` of the first flag of ``limits`` ({flag: N}) given with a numeric value
    >= N, or None. A value that is not a number never matches (the input checks refuse it where
    it must be one)."""
    for flag, limit in (limits or {}).items():
        if flag not in args:
            continue
        for value in _values(args[flag]):
            number = _number(value)
            if number is not None and number >= float(limit):
                return flag, args[flag]
    return None


def _layout_conditions(applies, args, memory, unknown):
    """The parallel layout's conditions (flags/gpus.py, flags/memory.py): None when
    one does not hold, else (flag, value) to name (or (None, None))."""
    lay = _gpus.layout(args)
    flag = value = None
    if applies.get("dp_with_attn_dp"):
        if not (lay["dp"] > 1 and lay["attn_dp"] > 1):
            return None
        flag, value = _gpus.flag_name(args, _gpus.DP_FLAGS), lay["dp"]
    if applies.get("attn_dp_not_dividing_tp"):
        if lay["attn_dp"] <= 1 or lay["tp"] % lay["attn_dp"] == 0:
            return None
        if flag is None:
            names = _gpus.DP_FLAGS if lay["dp_attention"] and not any(
                f in args for f in _gpus.ATTN_DP_FLAGS) else _gpus.ATTN_DP_FLAGS
            flag, value = _gpus.flag_name(args, names), lay["attn_dp"]
    if applies.get("weights_exceed_memory"):
        verdict = _memory.judge(args, memory)
        if verdict is None or verdict[0] == "fits":
            return None
        if verdict[0] != "exceeds":
            unknown.append(verdict[0])
        if flag is None:
            flag, value = _gpus.flag_name(args, _gpus.TP_FLAGS), lay["tp"]
    return flag, value


def evaluate_rule(rule, args, env, sm, version, gpu_count, packages, memory=None):
    """(status, flag, value) or None when the rule does not apply.

    status: "violation", "unknown-version", "unknown-sm", "unknown-gpu-count",
    "unknown-gpu-memory", "unknown-packages". ``memory``: flags/memory.py's inputs.
    """
    applies = rule.get("applies") or {}
    flag = value = None
    unknown = []

    if "flags_any" in applies:
        present = [f for f in applies["flags_any"] if f in args]
        if not present:
            return None
        flag = present[0]
        value = args[flag]
    if "flag_at_least" in applies:
        hit = flag_at_least(args, applies["flag_at_least"])
        if not hit:
            return None
        if flag is None:
            flag, value = hit
    for flag_name, vals in (applies.get("flag_lacks") or {}).items():
        # the flag (a list) is absent or lacks one of these values
        given = _lc(_values(args[flag_name])) if flag_name in args else set()
        missing = [v for v in vals if str(v).lower() not in given]
        if not missing:
            return None
        if flag is None:
            flag, value = flag_name, missing
    groups = applies.get("flag_values", [])
    groups = [groups] if isinstance(groups, dict) else list(groups)
    if "flag_values_outside" in applies:
        groups.append(applies["flag_values_outside"])
    for i, group in enumerate(groups):
        outside = "flag_values_outside" in applies and i == len(groups) - 1
        hit = next(((f, v) for f, vals in group.items() if f in args for v in _values(args[f])
                    if (v.lower() in _lc(vals)) != outside), None)
        if not hit:
            return None
        if flag is None:
            flag, value = hit
    for flag_name, vals in (applies.get("flag_unset_or") or {}).items():
        # the flag is left to SGLang's default, or given one of these values (``auto``)
        if flag_name in args and not any(v.lower() in _lc(vals) for v in _values(args[flag_name])):
            return None
        if flag is None:
            flag, value = flag_name, args.get(flag_name, "unset")
    if "model_any" in applies:
        model = str(args.get("model-path", args.get("model", ""))).lower()
        if not any(fnmatch.fnmatchcase(model, str(p).lower()) for p in applies["model_any"]):
            return None
    if "flags_absent" in applies:
        if any(f in args for f in applies["flags_absent"]):
            return None
        if flag is None:
            flag = applies["flags_absent"][0]
    if "env_any" in applies:
        set_vars = [v for v in applies["env_any"] if env.get(v) is not None]
        if not set_vars:
            return None
        if flag is None:
            flag, value = set_vars[0], env[set_vars[0]]
    if "env_unset" in applies:
        # each of these is unset or off (SGLANG_ENABLE_PP_SPEC)
        if any(env.get(v) is not None and str(env[v]).strip().lower() not in _ENV_OFF
               for v in applies["env_unset"]):
            return None
    hit = _layout_conditions(applies, args, memory, unknown)
    if hit is None:
        return None
    if flag is None:
        flag, value = hit
    if applies.get("gpus_exceed_count"):
        need = _gpus.gpus_needed(args)
        if need <= 1:
            return None
        if gpu_count is None:
            unknown.append("unknown-gpu-count")
        elif need <= gpu_count:
            return None
        if flag is None:
            flag = next((f for f in _gpus.TP_FLAGS if f in args), "tp")
            value = need
    if "packages_absent" in applies:
        if packages is None:
            unknown.append("unknown-packages")
        elif any(_requirements.canonical_package(p) in packages for p in applies["packages_absent"]):
            return None
    if "sm" in applies:
        if not sm:
            unknown.append("unknown-sm")
        elif not _sm.sm_matches(sm, applies["sm"]):
            return None
    if "sglang" in applies:
        rng = applies["sglang"] or {}
        if not version:
            unknown.append("unknown-version")
        elif not _versions.version_in_range(version, rng.get("min"), rng.get("max")):
            return None
    return (unknown[0] if unknown else "violation", flag, value)
