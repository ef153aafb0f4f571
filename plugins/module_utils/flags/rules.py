"""Judge a launch flag set against the rules table (``sglang_flags_rules``), offline.

The rules are data (``roles/sglang_flags/vars/main.yml``); this module only evaluates them.
A rule::

    - id: sm120-moe-flashinfer-trtllm      # stable name; used by waivers and in messages
      severity: error                      # error fails the play; warning is shown
      scope: offline                       # offline (here), host (files/sglang_preflight.py) or
                                           # deploy (flags/deploy.py: the ml_env spec, gateway)
      applies:                             # every condition given must hold (AND)
        sm: ["12.0", "12.1"]               # GPU compute capability major.minor ("12.*" allowed)
        sglang: {min: "0.5.20", max: null} # min inclusive, max exclusive, PEP 440 ordering
        flags_any: [a, b]                  # at least one of these flags is present
        flag_at_least: {flag: N}           # some flag is given with a number >= N (ep-size 2)
        flag_values: {flag: [v1, v2]}      # some flag has one of these values (case-insensitive);
                                           # a list of such mappings: each one must hold
        flag_values_outside: {flag: [v]}   # some flag is given with a value outside the list
        flag_unset_or: {flag: [auto]}      # each flag is absent (SGLang's default) or has one of these
        flag_lacks: {flag: [v1, v2]}       # each flag (a list) is absent or lacks one of these values
        model_any: ["*qwen3.5*"]           # model-path matches a pattern (fnmatch, lower case)
        flags_absent: [c]                  # none of these flags is present
        env_any: [VAR]                     # at least one of these variables is set (not null)
        packages_absent: [mscclpp]         # none of these is in the installed package list
        gpus_exceed_count: true            # dp * tp * pp / nnodes > GPUs on the host
                                           # (attention DP adds none: flags/gpus.py)
        weights_exceed_memory: true        # weights / (tp * pp) leave less than the KV reserve
                                           # of the usable GPU memory (flags/memory.py)
        dp_with_attn_dp: true              # dp-size > 1 together with attention DP
        attn_dp_not_dividing_tp: true      # the attention DP width does not divide tp
        env_unset: [VAR]                   # each of these is unset or off ("0", "false")
      message: what is wrong and why       # may use {flag}, {value}, {version}, {sm}, {layout},
                                           # {gpus_needed}, {tp} {pp} {dp} {attn_dp}, the memory
                                           # figures of flags/memory.py ({weights_per_gpu_gib}, ...)
      fix: what to do instead
      source: where the fact comes from    # docs/sglang-versions.md#<section>: the issue, PR or wheel
      replacement: --new-flag              # optional; renamed flags (the host check names it)

When a rule's version range (or SM list) cannot be judged because the version (or SM) is
unknown, and every other condition holds, the result is a warning with status
``unknown-version`` (``unknown-sm``), never a silent pass.
"""

from __future__ import annotations


from ansible.errors import AnsibleFilterError


# Siblings of the collection, imported by name: flags/conditions.py decides whether each condition holds; the renderer (flags/render.py)
# owns the flag model (``model_path`` -> ``model-path``, ``false``/``null`` dropped);
# flags/version.py orders versions (packaging.version); flags/requirements.py reads
# package names, flags/sm.py compute capabilities, flags/gpus.py the GPUs a flag
# set needs.
from ansible_collections.sglang.deploy.plugins.module_utils.flags import render as _renderer
from ansible_collections.sglang.deploy.plugins.module_utils.flags import version as _versions
from ansible_collections.sglang.deploy.plugins.module_utils.flags import requirements as _requirements
from ansible_collections.sglang.deploy.plugins.module_utils.flags import sm as _sm
from ansible_collections.sglang.deploy.plugins.module_utils.flags import gpus as _gpus
from ansible_collections.sglang.deploy.plugins.module_utils.flags import conditions as _conditions
from ansible_collections.sglang.deploy.plugins.module_utils.flags import memory as _memory
version_key = _versions.version_key
sglang_version_compare = _versions.sglang_version_compare
version_in_range = _versions.version_in_range
# scripts/sglang_drift.py imports this module and judges a profile as tasks/evaluate.yml
# does, so the spec readers and the report line are reachable from here too
sglang_flags_version_from_spec = _requirements.sglang_flags_version_from_spec
sglang_flags_package_names = _requirements.sglang_flags_package_names
from ansible_collections.sglang.deploy.plugins.module_utils.flags.report import sglang_flags_format

# --------------------------------------------------------------------------------------------
# the flag set, as the rules see it
# --------------------------------------------------------------------------------------------


def _normalize_args(args) -> dict:
    return _renderer.sglang_normalize_args(args)


_REQUIRED_FIELDS = ("id", "severity", "applies", "message", "fix", "source")


def sglang_flags_validate_rules(rules) -> list:
    """Check the table's shape; returns it unchanged. Raises naming the bad rule."""
    if not isinstance(rules, list):
        raise AnsibleFilterError("sglang_flags_rules must be a list of rules")
    seen = set()
    for i, rule in enumerate(rules):
        where = f"sglang_flags_rules[{i}]"
        if not isinstance(rule, dict):
            raise AnsibleFilterError(f"{where} is not a mapping")
        missing = [f for f in _REQUIRED_FIELDS if f not in rule]
        if missing:
            raise AnsibleFilterError(f"{where} ({rule.get('id', '?')}): missing {missing}")
        if rule["id"] in seen:
            raise AnsibleFilterError(f"{where}: duplicate rule id {rule['id']!r}")
        seen.add(rule["id"])
        if rule["severity"] not in ("error", "warning"):
            raise AnsibleFilterError(f"{where} ({rule['id']}): severity must be error or warning")
        if rule.get("scope", "offline") not in ("offline", "host", "deploy"):
            raise AnsibleFilterError(f"{where} ({rule['id']}): scope must be offline, host or deploy")
        applies = rule["applies"]
        if not isinstance(applies, dict):
            raise AnsibleFilterError(f"{where} ({rule['id']}): applies must be a mapping")
        unknown = set(applies) - _conditions.KNOWN_CONDITIONS
        if unknown:
            raise AnsibleFilterError(
                f"{where} ({rule['id']}): unknown condition(s) {sorted(unknown)}; "
                f"known: {sorted(_conditions.KNOWN_CONDITIONS)}"
            )
        least = applies.get("flag_at_least")
        if least is not None and (not isinstance(least, dict) or not least or any(
                isinstance(n, bool) or not isinstance(n, (int, float)) for n in least.values())):
            raise AnsibleFilterError(
                f"{where} ({rule['id']}): flag_at_least must be {{flag: number, ...}}")
        for name in ("flag_unset_or", "flag_lacks"):
            given = applies.get(name)
            if given is not None and (not isinstance(given, dict) or not given or any(
                    not isinstance(v, list) or not v for v in given.values())):
                raise AnsibleFilterError(
                    f"{where} ({rule['id']}): {name} must be {{flag: [value, ...], ...}}")
        rng = applies.get("sglang")
        if rng is not None:
            if not isinstance(rng, dict) or set(rng) - {"min", "max"}:
                raise AnsibleFilterError(
                    f"{where} ({rule['id']}): sglang must be {{min: X, max: Y}}"
                )
            for bound in rng.values():
                if bound not in (None, ""):
                    try:
                        version_key(bound)
                    except ValueError as exc:
                        raise AnsibleFilterError(f"{where} ({rule['id']}): {exc}") from exc
    return rules


def _fmt(template: str, **kw) -> str:
    class _Safe(dict):
        def __missing__(self, key):
            return "{" + key + "}"

    return str(template).format_map(_Safe(**{k: ("" if v is None else v) for k, v in kw.items()}))


def sglang_flags_check(
    args,
    rules,
    env=None,
    sm="",
    version="",
    gpu_count=None,
    packages=None,
    waive=None,
    scope="offline",
    errors_as_findings=False,
    memory=None,
):
    """See ``_check``. With ``errors_as_findings`` a malformed input (bad flag name, bad
    version string) becomes one error finding (rule ``input``) instead of an exception, so
    that a lint run can report every host at once. ``memory``: the GPU memory and the model's
    weight size (flags/memory.py) for ``weights_exceed_memory``."""
    try:
        return _check(args, rules, env, sm, version, gpu_count, packages, waive, scope, memory)
    except AnsibleFilterError as exc:
        if not errors_as_findings:
            raise
        return [
            {
                "rule": "input",
                "severity": "error",
                "status": "violation",
                "flag": "sglang_server_args",
                "value": None,
                "message": str(exc.message if hasattr(exc, "message") else exc),
                "fix": "correct the variable named in the message",
                "source": "roles/sglang_flags input checks",
            }
        ]


def _layout_figures(nargs, memory) -> dict:
    """The parallel layout and memory figures a message may name."""
    lay = _gpus.layout(nargs)
    judged = _memory.judge(nargs, memory)
    figures = dict(judged[1]) if judged else {}
    figures.update(tp=lay["tp"], pp=lay["pp"], dp=lay["dp"], attn_dp=lay["attn_dp"],
                   layout=_gpus.layout_text(nargs), gpus_needed=_gpus.gpus_needed(nargs))
    return figures


def _check(args, rules, env, sm, version, gpu_count, packages, waive, scope, memory=None):
    """Every finding of ``rules`` (scope ``scope``) on one host's flag set.

    Returns a list of dicts: rule, severity (error|warning), status (violation, waived,
    unknown-version, unknown-sm, unknown-gpu-count, unknown-packages), flag, value,
    message, fix, source. Only status ``violation`` keeps the rule's own severity; every
    other status is a warning.
    """
    sglang_flags_validate_rules(rules)
    nargs = _normalize_args(args)
    if env is None:
        env = {}
    if not isinstance(env, dict):
        raise AnsibleFilterError("sglang_server_env must be a mapping of NAME -> value")
    sm = _sm.sglang_flags_normalize_sm(sm)
    version = "" if version is None else str(version).strip()
    if version:
        try:
            version_key(version)
        except ValueError as exc:
            raise AnsibleFilterError(
                f"sglang_flags_sglang_version: {exc}; give the installed SGLang version, "
                "e.g. \"0.5.23\""
            ) from exc
    if gpu_count in (None, ""):
        gpu_count = None
    else:
        try:
            gpu_count = int(gpu_count)
        except (TypeError, ValueError) as exc:
            raise AnsibleFilterError(
                f"sglang_flags_gpu_count: {gpu_count!r} is not an integer"
            ) from exc
        if gpu_count <= 0:  # gpu_host's "0 = any number" / a CPU test host
            gpu_count = None
    if packages is not None:  # names or requirement strings ("mscclpp==0.7.0")
        packages = set(sglang_flags_package_names(list(packages)))
    waive = set(waive or [])
    known_ids = {r["id"] for r in rules}
    try:
        figures = _layout_figures(nargs, memory)
    except ValueError as exc:  # a size that is not an integer >= 1 (parallel_layout.LayoutError)
        raise AnsibleFilterError(f"{exc}; give an integer >= 1") from exc
    findings = []
    for wid in sorted(waive - known_ids):
        findings.append(
            {
                "rule": wid,
                "severity": "warning",
                "status": "unknown-waiver",
                "flag": "sglang_flags_waive",
                "value": wid,
                "message": f"sglang_flags_waive names {wid!r}, which is not a rule id",
                "fix": "remove it or correct the id (see roles/sglang_flags/vars/main.yml)",
                "source": "sglang_flags_waive",
            }
        )
    for rule in rules:
        if rule.get("scope", "offline") != scope:
            continue
        res = _conditions.evaluate_rule(rule, nargs, env, sm, version, gpu_count, packages, memory)
        if res is None:
            continue
        status, flag, value = res
        if isinstance(value, (list, tuple)):
            value = " ".join(str(v) for v in value)
        kw = dict(
            flag=flag,
            value=value,
            version=version or "unknown",
            sm=sm or "unknown",
            gpu_count="unknown" if gpu_count is None else gpu_count,
            replacement=rule.get("replacement", ""),
            **figures,
        )
        severity = rule["severity"]
        message = _fmt(rule["message"], **kw)
        if status != "violation":
            severity = "warning"
            what = status.replace("unknown-", "")
            message = (
                f"could not be judged: {what.replace('-', ' ')} unknown "
                f"(rule would say: {message})"
            )
        if rule["id"] in waive:
            status, severity = "waived", "warning"
            message = f"waived by sglang_flags_waive: {message}"
        findings.append(
            {
                "rule": rule["id"],
                "severity": severity,
                "status": status,
                "flag": flag,
                "value": value,
                "message": message,
                "fix": _fmt(rule["fix"], **kw),
                "source": rule["source"],
            }
        )
    return findings


def sglang_flags_host_rules(rules) -> dict:
    """The host-scope rules and every renamed flag, as the on-host script wants them."""
    sglang_flags_validate_rules(rules)
    host = {
        r["id"]: {k: r[k] for k in ("severity", "message", "fix", "source")}
        for r in rules
        if r.get("scope", "offline") == "host"
    }
    renames = {}
    for r in rules:
        if r.get("replacement"):
            for f in (r.get("applies") or {}).get("flags_any", []):
                renames.setdefault(
                    f,
                    {
                        "rule": r["id"],
                        "replacement": r["replacement"],
                        "message": str(r["message"]),  # {version} is filled in on the host
                        "source": r["source"],
                    },
                )
    return {"rules": host, "renames": renames}
