"""The rules of scope ``deploy`` (vars/main.yml): what the host's ml_env spec and router
settings must hold for its flags, judged offline in the same lint as the flags.

The table carries each rule's severity, message, fix and source; this module decides when it
applies (as files/sglang_preflight.py does for the ``host`` rules):

* ``flashinfer-cubin-index``: a flashinfer-cubin requirement that can only be met from
  FlashInfer's root wheel index (>= 0.6.14, or unpinned) while neither ml_env_index_url,
  ml_env_extra_index_urls nor ml_env_find_links lists that index;
* ``fp4-gemm-cudnn-version``: ``--fp4-gemm-backend flashinfer_cudnn`` while nothing checks the
  ml_env's cuDNN (no nvidia-cudnn entry in ml_env_min_versions, no exact nvidia-cudnn pin of
  at least the minimum in the spec);
* ``router-control-plane-open``: ``sglang_router_url`` set, ``sglang_router_api_key`` empty.

``inputs`` is the mapping tasks/evaluate.yml builds from the host's variables (see
``DEPLOY_INPUTS``); secrets are only tested for emptiness, never copied into a finding.
"""

from __future__ import annotations

import os
import re
import runpy


# Filter plugins are loaded by path, not as a package: siblings are loaded the same way
# (module_utils/sglang_by_path.py).
_load = runpy.run_path(os.path.join(os.path.dirname(__file__), "../../../module_utils/sglang_by_path.py"))["load"]
_versions = _load(__file__, "sglang_flags_version.py")
_renderer = _load(__file__, "sglang_flags.py")

DEPLOY_INPUTS = ("ml_env_packages", "ml_env_packages_nodeps", "ml_env_index_url",
                 "ml_env_extra_index_urls", "ml_env_find_links", "ml_env_min_versions",
                 "sglang_router_url", "sglang_router_api_key")
CUBIN_ROOT_INDEX = "https://flashinfer.ai/whl"
CUBIN_ROOT_ONLY_FROM = "0.6.14"
CUDNN_MIN = "9.10.2"
_REQ = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;#]*)")


def _canonical(name) -> str:
    return re.sub(r"[-_.]+", "-", str(name)).lower()


def _requirements(inputs) -> list:
    """(name, specifier text, requirement) of every requirement line of the spec."""
    out = []
    for req in list(inputs.get("ml_env_packages") or []) + list(inputs.get("ml_env_packages_nodeps") or []):
        text = str(req).strip()
        m = _REQ.match(text)
        if m and not text.startswith(("-", "#")):
            out.append((_canonical(m.group("name")), m.group("spec").strip(), text))
    return out


def _exact(spec) -> str:
    """The version of an exact pin (``==X`` / ``===X``), else ""."""
    m = re.fullmatch(r"===?\s*([^\s,]+)", spec.strip())
    return m.group(1) if m and _versions.is_version(m.group(1)) else ""


def _at_least(version, minimum) -> bool:
    return _versions.is_version(version) and _versions.version_key(version) >= _versions.version_key(minimum)


def _cubin_hits(inputs) -> list:
    """flashinfer-cubin requirements that only the root index serves, when it is not listed."""
    sources = [inputs.get("ml_env_index_url") or ""] + list(inputs.get("ml_env_extra_index_urls") or []) \
        + list(inputs.get("ml_env_find_links") or [])
    if any(str(s).strip().rstrip("/") == CUBIN_ROOT_INDEX for s in sources):
        return []
    hits = []
    for name, spec, text in _requirements(inputs):
        if name != "flashinfer-cubin":
            continue
        pinned = _exact(spec)
        if not pinned or _at_least(pinned, CUBIN_ROOT_ONLY_FROM):
            hits.append(text)
    return hits


def _cudnn_unchecked(inputs, args) -> str:
    """A description of the spec's cuDNN when flashinfer_cudnn is used and nothing checks it,
    else ""."""
    if str((args or {}).get("fp4-gemm-backend", "")).lower() != "flashinfer_cudnn":
        return ""
    minimum = {_canonical(k): str(v) for k, v in (inputs.get("ml_env_min_versions") or {}).items()}
    if any(k.startswith("nvidia-cudnn") and _at_least(v, CUDNN_MIN) for k, v in minimum.items()):
        return ""
    pins = [(n, _exact(s)) for n, s, _ in _requirements(inputs) if n.startswith("nvidia-cudnn")]
    if any(v and _at_least(v, CUDNN_MIN) for _, v in pins):
        return ""
    return ", ".join(f"{n}=={v}" if v else n for n, v in pins) or "cuDNN comes in with torch, unpinned"


def _fmt(template, **kw) -> str:
    class _Safe(dict):
        def __missing__(self, key):
            return "{" + key + "}"

    return str(template).format_map(_Safe(**kw))


def sglang_flags_deploy_findings(inputs, rules, args=None, waive=None) -> list:
    """Findings of the ``deploy`` rules of ``rules`` on one host (see the module docstring).
    ``args``: sglang_server_args; ``waive``: sglang_flags_waive."""
    inputs = inputs if isinstance(inputs, dict) else {}
    try:
        flags = _renderer.sglang_normalize_args(args) if isinstance(args, dict) else {}
    except Exception:  # noqa: BLE001  a bad flag name: sglang_flags_inputs reports it
        flags = {}
    hits = {
        "flashinfer-cubin-index": ", ".join(_cubin_hits(inputs)),
        "fp4-gemm-cudnn-version": _cudnn_unchecked(inputs, flags),
        "router-control-plane-open": (str(inputs.get("sglang_router_url") or "")
                                      if inputs.get("sglang_router_url")
                                      and not inputs.get("sglang_router_api_key") else ""),
    }
    flag_of = {"flashinfer-cubin-index": "ml_env_packages", "fp4-gemm-cudnn-version": "fp4-gemm-backend",
               "router-control-plane-open": "sglang_router_url"}
    findings = []
    for rule in rules or []:
        value = hits.get(rule.get("id")) if rule.get("scope") == "deploy" else ""
        if not value:
            continue
        waived = rule["id"] in set(waive or [])
        message = _fmt(rule["message"], value=value)
        findings.append({
            "rule": rule["id"],
            "severity": "warning" if waived else rule["severity"],
            "status": "waived" if waived else "violation",
            "flag": flag_of[rule["id"]],
            "value": value,
            "message": f"waived by sglang_flags_waive: {message}" if waived else message,
            "fix": _fmt(rule["fix"], value=value),
            "source": rule["source"],
        })
    return findings


class FilterModule:
    def filters(self):
        return {"sglang_flags_deploy_findings": sglang_flags_deploy_findings}
