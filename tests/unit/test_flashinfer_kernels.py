"""FlashInfer's kernel packages as plugins/module_utils/ml_env/flashinfer_kernels.py reads them (the provider
an SM needs, the versions that must match) and the deploy rules built on it, at their version
boundaries: flashinfer 0.6.18.post1 (one jit-cache wheel) against 0.7.0 (the shim and a provider per
architecture), 0.7.1 (a mismatch refuses to import) against 0.7.2 (a mismatch is ignored)."""

import os

import pytest
import yaml

from ansible_collections.sglang.deploy.plugins.module_utils.flags import deploy as D
from ansible_collections.sglang.deploy.plugins.module_utils.ml_env import flashinfer_kernels as fk

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
with open(os.path.join(ROOT, "roles", "sglang_flags", "vars", "main.yml"), encoding="utf-8") as fh:
    RULES = yaml.safe_load(fh)["sglang_flags_rules"]


def findings(packages, nodeps=(), sm="12.0", cuda="13.0"):
    inputs = {"ml_env_packages": list(packages), "ml_env_packages_nodeps": list(nodeps),
              "ml_env_extra_index_urls": ["https://flashinfer.ai/whl/cu130", "https://flashinfer.ai/whl"],
              "cuda_toolkit_version": cuda}
    return {f["rule"]: f for f in D.sglang_flags_deploy_findings(inputs, RULES, {}, [], sm=sm)}


# --- which provider serves which GPU (flashinfer/jit/_cuda_architecture.py's rule) -------------

@pytest.mark.parametrize("tag,sm,serves", [
    ("sm120f", "12.0", True), ("sm120f", "12.1", True), ("sm121a", "12.0", False), ("sm120a", "12.0", True),
    ("sm120a", "12.1", False), ("sm100a", "12.0", False), ("sm90a", "9.0", True), ("sm80", "8.9", True),
    ("sm89", "8.0", False), ("sm120", "12.0", True), ("sm120f", "10.0", False), ("bogus", "12.0", False)])
def test_a_provider_serves_the_sms_flashinfer_loads_it_on(tag, sm, serves):
    assert fk.serves(tag, sm) is serves


def test_the_published_provider_of_each_gpu():
    assert fk.provider_for("12.0") == "sm120f"
    assert fk.provider_for("12.1") == "sm120f"
    assert fk.provider_for("9.0") == "sm90a"
    assert fk.provider_for("10.3") == "sm103a"
    assert fk.provider_for("8.6") == "sm80"
    assert fk.provider_for("11.0") == ""


def test_names_versions_and_labels():
    assert fk.provider_tag("flashinfer_jit_cache_sm120f") == "sm120f"
    assert fk.provider_tag("Flashinfer-JIT-Cache-SM90a") == "sm90a"
    assert fk.provider_tag("flashinfer-jit-cache") == "" and fk.provider_tag("flashinfer-cubin") == ""
    assert fk.public("0.7.2+cu130") == "0.7.2" and fk.label("0.7.2+cu130") == "cu130" and fk.label("0.7.2") == ""
    assert fk.cuda_label("13.0") == "cu130" and fk.cuda_label("12.9.1") == "cu129" and fk.cuda_label("") == ""
    assert not fk.providers_era("0.6.18.post1") and fk.providers_era("0.7.0") and fk.providers_era("0.7.0rc3")


def test_the_install_hint_names_the_minimal_pair_or_the_one_old_wheel():
    hint = fk.install_hint("0.7.2", "13.0", "12.0")
    assert hint.startswith("flashinfer-jit-cache-sm120f==0.7.2+cu130 beside flashinfer-jit-cache==0.7.2+cu130")
    assert "--no-deps from https://flashinfer.ai/whl/cu130" in hint
    assert fk.install_hint("0.6.18.post1", "13.0", "12.0").startswith("flashinfer-jit-cache==0.6.18.post1+cu130 from")


# --- the deploy rules at their version boundaries ------------------------------------------------

PROD = ["torch==2.14.1", "flashinfer-python==0.7.2", "flashinfer-cubin==0.7.2", "sglang==0.5.23"]
PAIR = ["flashinfer-jit-cache==0.7.2+cu130", "flashinfer-jit-cache-sm120f==0.7.2+cu130"]


def test_the_production_pair_passes():
    assert not set(findings(PROD, PAIR)) & {"flashinfer-kernel-version", "flashinfer-jit-cache-provider",
                                           "flashinfer-jit-cache-all-providers"}


def test_the_shim_alone_is_refused_from_0_7_0_and_passes_before():
    hit = findings(PROD, ["flashinfer-jit-cache==0.7.2+cu130"])["flashinfer-jit-cache-provider"]
    assert hit["severity"] == "error" and hit["flag"] == "ml_env_packages_nodeps"
    assert "no provider for SM 12.0 (none pinned)" in hit["message"]
    assert hit["fix"].startswith("install flashinfer-jit-cache-sm120f==0.7.2+cu130 beside flashinfer-jit-cache==0.7.2+cu130")
    at_070 = ["flashinfer-python==0.7.0", "flashinfer-cubin==0.7.0"]
    assert "flashinfer-jit-cache-provider" in findings(at_070, ["flashinfer-jit-cache==0.7.0+cu130"])
    # 0.6.18.post1: one wheel with every architecture, nothing to pair
    before = ["flashinfer-python==0.6.18.post1", "flashinfer-cubin==0.6.18.post1"]
    assert "flashinfer-jit-cache-provider" not in findings(before, ["flashinfer-jit-cache==0.6.18.post1+cu130"])


def test_a_provider_is_refused_before_0_7_0_and_without_the_shim():
    before = ["flashinfer-python==0.6.18.post1"]
    hit = findings(before, ["flashinfer-jit-cache==0.6.18.post1+cu130",
                            "flashinfer-jit-cache-sm120f==0.6.18.post1+cu130"])["flashinfer-jit-cache-provider"]
    assert "they begin with 0.7.0" in hit["message"]
    hit = findings(PROD, ["flashinfer-jit-cache-sm120f==0.7.2+cu130"])["flashinfer-jit-cache-provider"]
    assert "without the flashinfer-jit-cache shim" in hit["message"]


def test_another_architectures_provider_is_refused_on_sm120_and_fits_its_own():
    other = ["flashinfer-jit-cache==0.7.2+cu130", "flashinfer-jit-cache-sm100a==0.7.2+cu130"]
    assert "flashinfer-jit-cache-provider" in findings(PROD, other)
    assert "flashinfer-jit-cache-provider" not in findings(PROD, other, sm="10.0")
    # an unknown SM judges no provider
    assert "flashinfer-jit-cache-provider" not in findings(PROD, ["flashinfer-jit-cache==0.7.2+cu130"], sm="")


def test_the_shim_with_its_dependencies_warns_from_0_7_0():
    hit = findings(PROD + ["flashinfer-jit-cache==0.7.2"])["flashinfer-jit-cache-all-providers"]
    assert hit["severity"] == "warning" and "flashinfer-jit-cache==0.7.2 is in ml_env_packages" in hit["message"]
    assert "flashinfer-jit-cache-sm120f==0.7.2+cu130" in hit["fix"]
    assert "flashinfer-jit-cache-all-providers" not in findings(
        ["flashinfer-python==0.6.18.post1", "flashinfer-jit-cache==0.6.18.post1"])


@pytest.mark.parametrize("python,cubin,effect", [
    ("0.7.1", "0.7.0", "refuses to import"),        # 0.7.0 and 0.7.1 raise at import
    ("0.7.2", "0.7.1", "ignores it with a warning"),  # from 0.7.2 the mismatched package is skipped
    ("0.6.18.post1", "0.6.18", "refuses to import")])
def test_a_cubin_of_another_version_says_what_that_flashinfer_does(python, cubin, effect):
    hit = findings([f"flashinfer-python=={python}", f"flashinfer-cubin=={cubin}"])["flashinfer-kernel-version"]
    assert f"flashinfer-cubin {cubin} is not flashinfer-python's {python}" in hit["message"]
    assert effect in hit["message"]


def test_shim_and_provider_of_different_cuda_labels_are_refused():
    hit = findings(PROD, ["flashinfer-jit-cache==0.7.2+cu130",
                          "flashinfer-jit-cache-sm120f==0.7.2+cu129"])["flashinfer-kernel-version"]
    assert "flashinfer-jit-cache-sm120f 0.7.2+cu129 is not the shim's 0.7.2+cu130" in hit["message"]


def test_the_shipped_production_spec_is_the_pair():
    with open(os.path.join(ROOT, "inventories", "production", "group_vars", "blackwell", "ml_env.yml"),
              encoding="utf-8") as fh:
        spec = yaml.safe_load(fh)
    assert spec["ml_env_packages_nodeps"] == PAIR
    assert not any(p.startswith("flashinfer-jit-cache") for p in spec["ml_env_packages"])
