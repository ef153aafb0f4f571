"""The rules of scope ``deploy`` (vars/main.yml): what the host's ml_env spec and gateway
settings must hold for its flags, judged offline in the same lint as the flags.

The table carries each rule's severity, message, fix and source; this module decides when it
applies (as files/sglang_preflight.py does for the ``host`` rules):

* ``flashinfer-cubin-index``: a flashinfer-cubin requirement that can only be met from
  FlashInfer's root wheel index (>= 0.6.14, or unpinned) while neither ml_env_index_url,
  ml_env_extra_index_urls nor ml_env_find_links lists that index;
* ``fp4-gemm-cudnn-version``: ``--fp4-gemm-backend flashinfer_cudnn`` while nothing checks the
  ml_env's cuDNN (no nvidia-cudnn entry in ml_env_min_versions, no exact nvidia-cudnn pin of
  at least the minimum in the spec);
* ``rollout-serial``, ``rollout-min-serving``: a malformed ``sglang_rollout_serial`` or
  ``sglang_rollout_min_serving`` (plugins/module_utils/rollout/batches.py says why);
* ``gateway-client-key``: a gateway host (roles/sglang_gateway, smg 1.13) whose client key
  ``sglang_gateway_api_key`` is set and is not this host's ``sglang_server_api_key``: smg forwards
  the client's Authorization header to the worker unchanged (measured, roles/sglang_gateway/
  README.md), so the worker refuses every request. tasks/evaluate.yml compares the keys and passes
  only ``sglang_gateway_client_key`` ("" none, "same", "other") and the gateway hosts' names;
* ``sm120-nvfp4-moe-flashinfer``: on SM 12.x, an NVFP4 quantization whose MoE runs on FlashInfer's
  CUTLASS grouped GEMM (``--moe-runner-backend`` flashinfer_cutlass, auto or unset) while the
  spec pins flashinfer-python below the release with its SM120 fixes (FlashInfer PR 2725) or
  cuda_toolkit_version is below 13.0 (no ``compute_120f``);
* ``flashinfer-kernel-version``, ``flashinfer-jit-cache-provider``,
  ``flashinfer-jit-cache-all-providers``: FlashInfer's kernel packages in the spec, decided by
  plugins/module_utils/ml_env/flashinfer_kernels.py (versions that do not match flashinfer-python's, a
  jit-cache shim without the provider for the GPU's SM, a shim that pulls every provider).

``inputs`` is the mapping tasks/evaluate.yml builds from the host's variables (see
``DEPLOY_INPUTS``); secrets are only tested for emptiness, never copied into a finding.
"""

from __future__ import annotations

# siblings of the collection, imported by name
from ansible_collections.sglang.deploy.plugins.module_utils.flags import version as _versions
from ansible_collections.sglang.deploy.plugins.module_utils.flags import render as _renderer
from ansible_collections.sglang.deploy.plugins.module_utils.flags import requirements as _reqs
from ansible_collections.sglang.deploy.plugins.module_utils.flags import sm as _sm
from ansible_collections.sglang.deploy.plugins.module_utils.rollout import batches as _rollout
from ansible_collections.sglang.deploy.plugins.module_utils.ml_env import flashinfer_kernels as _fk

DEPLOY_INPUTS = ("ml_env_packages", "ml_env_packages_nodeps", "ml_env_index_url",
                 "ml_env_extra_index_urls", "ml_env_find_links", "ml_env_min_versions",
                 "sglang_gateway_hosts", "sglang_gateway_client_key", "cuda_toolkit_version",
                 "sglang_rollout_serial", "sglang_rollout_min_serving")
CUBIN_ROOT_INDEX = "https://flashinfer.ai/whl"
CUBIN_ROOT_ONLY_FROM = "0.6.14"
CUDNN_MIN = "9.10.2"
# FlashInfer PR 2725 (SM120 NVFP4 MoE, merged 2026-03-20): the first release published after it
NVFP4_MOE_FLASHINFER_MIN = "0.6.7"
NVFP4_MOE_CUDA_MIN = "13.0"
NVFP4_QUANTIZATIONS = ("modelopt_fp4", "modelopt_mixed", "nvfp4_online", "petit_nvfp4")
FLASHINFER_MOE_RUNNERS = ("", "auto", "flashinfer_cutlass")


def _requirements(inputs) -> list:
    """(canonical name, exact pin or "", line) of every requirement line of the spec."""
    out = []
    for req in list(inputs.get("ml_env_packages") or []) + list(inputs.get("ml_env_packages_nodeps") or []):
        parsed = _reqs.parse_requirement(req)
        if parsed is not None:
            out.append((_reqs.canonical_package(parsed.name), _reqs.exact_pin(parsed), str(req).strip()))
    return out


def _at_least(version, minimum) -> bool:
    return _versions.is_version(version) and _versions.version_key(version) >= _versions.version_key(minimum)


def _cubin_hits(inputs) -> list:
    """flashinfer-cubin requirements that only the root index serves, when it is not listed."""
    sources = [inputs.get("ml_env_index_url") or ""] + list(inputs.get("ml_env_extra_index_urls") or []) \
        + list(inputs.get("ml_env_find_links") or [])
    if any(str(s).strip().rstrip("/") == CUBIN_ROOT_INDEX for s in sources):
        return []
    hits = []
    for name, pinned, text in _requirements(inputs):
        if name != "flashinfer-cubin":
            continue
        if not pinned or _at_least(pinned, CUBIN_ROOT_ONLY_FROM):
            hits.append(text)
    return hits


def _cudnn_unchecked(inputs, args) -> str:
    """A description of the spec's cuDNN when flashinfer_cudnn is used and nothing checks it,
    else ""."""
    if str((args or {}).get("fp4-gemm-backend", "")).lower() != "flashinfer_cudnn":
        return ""
    minimum = {_reqs.canonical_package(k): str(v) for k, v in (inputs.get("ml_env_min_versions") or {}).items()}
    if any(k.startswith("nvidia-cudnn") and _at_least(v, CUDNN_MIN) for k, v in minimum.items()):
        return ""
    pins = [(n, v) for n, v, _ in _requirements(inputs) if n.startswith("nvidia-cudnn")]
    if any(v and _at_least(v, CUDNN_MIN) for _, v in pins):
        return ""
    return ", ".join(f"{n}=={v}" if v else n for n, v in pins) or "cuDNN comes in with torch, unpinned"


def _nvfp4_moe_unfixed(inputs, args, sm) -> dict:
    """What keeps FlashInfer's SM120 NVFP4 MoE fixes out of this host (an exact flashinfer-python
    pin below the fixed release, a CUDA toolkit below 13.0), with the flags that select that
    path; {} when nothing does or the path is not taken."""
    try:
        sm = _sm.sglang_flags_normalize_sm(sm)
    except Exception:  # noqa: BLE001  a bad SM: the rules check reports it (sglang_flags_gpu_sm)
        sm = ""
    if not sm.startswith("12."):
        return {}
    quantization = str((args or {}).get("quantization", "")).lower()
    moe = str((args or {}).get("moe-runner-backend", "")).lower()
    if quantization not in NVFP4_QUANTIZATIONS or moe not in FLASHINFER_MOE_RUNNERS:
        return {}
    why = [f"flashinfer-python=={v}" for n, v, _ in _requirements(inputs) if n == "flashinfer-python"
           and v and not _at_least(v, NVFP4_MOE_FLASHINFER_MIN)]
    cuda = str(inputs.get("cuda_toolkit_version") or "").strip()
    if cuda and _versions.is_version(cuda) and not _at_least(cuda, NVFP4_MOE_CUDA_MIN):
        why.append(f"cuda_toolkit_version {cuda}")
    if not why:
        return {}
    return {"value": " and ".join(why), "quantization": quantization, "moe": moe or "auto",
            "fixed": NVFP4_MOE_FLASHINFER_MIN, "flag": "ml_env_packages" if why[0].startswith("flashinfer")
            else "cuda_toolkit_version"}


def _flashinfer_hits(inputs, sm) -> dict:
    """The FlashInfer kernel-package rules' hits on the spec (flashinfer_kernels.spec_hits)."""
    try:
        sm = _sm.sglang_flags_normalize_sm(sm)
    except Exception:  # noqa: BLE001  a bad SM: the rules check reports it (sglang_flags_gpu_sm)
        sm = ""
    pins = []
    for key in ("ml_env_packages", "ml_env_packages_nodeps"):
        part = []
        for req in list(inputs.get(key) or []):
            parsed = _reqs.parse_requirement(req)
            if parsed is not None:
                part.append((_reqs.canonical_package(parsed.name), _reqs.exact_pin(parsed)))
        pins.append(part)
    return _fk.spec_hits(pins[0], pins[1], sm, str(inputs.get("cuda_toolkit_version") or ""))


def _given(inputs, name, default):
    value = inputs.get(name)
    return default if value is None else value


def _fmt(template, **kw) -> str:
    class _Safe(dict):
        def __missing__(self, key):
            return "{" + key + "}"

    return str(template).format_map(_Safe(**kw))


def sglang_flags_deploy_findings(inputs, rules, args=None, waive=None, sm="") -> list:
    """Findings of the ``deploy`` rules of ``rules`` on one host (see the module docstring).
    ``args``: sglang_server_args; ``waive``: sglang_flags_waive; ``sm``: the GPU's compute
    capability as sglang_flags_gpu_sm gives it ("12.0", "sm_120"; "" unknown: the SM120 rule
    does not apply)."""
    inputs = inputs if isinstance(inputs, dict) else {}
    try:
        flags = _renderer.sglang_normalize_args(args) if isinstance(args, dict) else {}
    except Exception:  # noqa: BLE001  a bad flag name: sglang_flags_inputs reports it
        flags = {}
    gateways = inputs.get("sglang_gateway_hosts") or []
    gateways = ", ".join(str(g) for g in ([gateways] if isinstance(gateways, str) else gateways)) or "the gateway"
    # rule -> {value, flag, other placeholders of its message}; no value: the rule does not apply
    hits = {
        "flashinfer-cubin-index": {"value": ", ".join(_cubin_hits(inputs)), "flag": "ml_env_packages"},
        "fp4-gemm-cudnn-version": {"value": _cudnn_unchecked(inputs, flags), "flag": "fp4-gemm-backend"},
        "gateway-client-key": {"value": gateways if inputs.get("sglang_gateway_client_key") == "other" else "",
                               "flag": "sglang_gateway_api_key"},
        "sm120-nvfp4-moe-flashinfer": _nvfp4_moe_unfixed(inputs, flags, sm),
        **_flashinfer_hits(inputs, sm),
        # not set (None): the defaults 1 and 0 apply
        "rollout-serial": {"value": _rollout.serial_problem(_given(inputs, "sglang_rollout_serial", 1)),
                           "flag": "sglang_rollout_serial"},
        "rollout-min-serving": {"value": _rollout.floor_problem(_given(inputs, "sglang_rollout_min_serving", 0)),
                                "flag": "sglang_rollout_min_serving"},
    }
    findings = []
    for rule in rules or []:
        hit = hits.get(rule.get("id")) if rule.get("scope") == "deploy" else None
        if not hit or not hit.get("value"):
            continue
        kw = {k: str(v) for k, v in hit.items() if k != "flag"}
        waived = rule["id"] in set(waive or [])
        message = _fmt(rule["message"], **kw)
        findings.append({
            "rule": rule["id"],
            "severity": "warning" if waived else rule["severity"],
            "status": "waived" if waived else "violation",
            "flag": hit["flag"],
            "value": hit["value"],
            "message": f"waived by sglang_flags_waive: {message}" if waived else message,
            "fix": _fmt(rule["fix"], **kw),
            "source": rule["source"],
        })
    return findings
