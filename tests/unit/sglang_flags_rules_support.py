"""Shared by the tests of roles/sglang_flags' rules: the rules table (vars/main.yml), the
evaluator's call on a Blackwell host (check) and the production profile's hand-tuned launch."""

import os

from ansible_collections.sglang.deploy.plugins.module_utils.flags import catalog as C
from ansible_collections.sglang.deploy.plugins.module_utils.flags import deploy as D
from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as I
from ansible_collections.sglang.deploy.plugins.module_utils.flags import rules as F
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_flags")

with open(os.path.join(ROLE, "vars", "main.yml"), encoding="utf-8") as fh:
    _VARS = yaml.safe_load(fh)
RULES = _VARS["sglang_flags_rules"]
REMOVED = _VARS["sglang_flags_removed_flags"]
HOST_RULE_IDS = {r["id"] for r in RULES if r.get("scope") == "host"}

BLACKWELL = dict(sm="12.0", version="0.5.23", gpu_count=8, packages=["sglang", "torch"])

# The production profile's hand-tuned launch (docs/blackwell-profile.md, The hand-tuning
# session), as inventory data: the NEXTN iteration that added --mamba-scheduler-strategy
# extra_buffer after the first crash.
TUNED_ARGS = {
    "model-path": "/data/models/Qwen3.5-397B-A17B-NVFP4",
    "served-model-name": "qwen3.5-397b",
    "tp": 8,
    "trust-remote-code": True,
    "quantization": "modelopt_fp4",
    "host": "0.0.0.0",
    "attention-backend": "triton",
    "moe-runner-backend": "flashinfer_cutlass",
    "fp4-gemm-backend": "flashinfer_cudnn",
    "reasoning-parser": "qwen3",
    "tool-call-parser": "qwen3_coder",
    "speculative-algorithm": "NEXTN",
    "speculative-num-draft-tokens": 2,
    "speculative-eagle-topk": 1,
    "mamba-scheduler-strategy": "extra_buffer",
}
TUNED_ENV = {
    "CUDA_HOME": "/usr/local/cuda-13.0",
    "PATH": "/usr/local/cuda-13.0/bin:/root/ml-env/bin:$PATH",
    "LD_LIBRARY_PATH": "/usr/local/cuda-13.0/lib64",
    "OMP_NUM_THREADS": 16,
    "SGLANG_ENABLE_SPEC_V2": 1,
}

MINIMAL = {"model-path": "/data/m"}


def check(args, env=None, **kw):
    opts = dict(BLACKWELL)
    opts.update(kw)
    return F.sglang_flags_check(args, RULES, env=env or {}, **opts)


def by_rule(findings):
    return {f["rule"]: f for f in findings}


def errors(findings):
    return {f["rule"] for f in findings if f["severity"] == "error"}


def lint(args, env=None, version="0.5.23", sm="12.0", deploy=None, waive=None):
    """Every finding of one host, as tasks/evaluate.yml computes it in playbooks/lint.yml: the
    input checks against the version's catalog, the rules on the flags as its argparse reads them,
    the deploy rules on the ml_env spec (``deploy``: the DEPLOY_INPUTS the host sets)."""
    env = env or {}
    catalog = C.sglang_flags_catalog_of(version, REMOVED)
    found = I.sglang_flags_inputs(args, env=env, unit={}, catalog=catalog, rules=RULES, version=version)
    found += F.sglang_flags_check(I.sglang_flags_expand(args, catalog), RULES, env=env, sm=sm, version=version,
                                  gpu_count=8, packages=["sglang"], waive=waive, errors_as_findings=True)
    found += D.sglang_flags_deploy_findings(deploy or {}, RULES, args, waive, sm=sm)
    return found
