"""Unit tests of the rules table (roles/sglang_flags/vars/main.yml), its evaluator
(roles/sglang_flags/filter_plugins/sglang_flags_rules.py) and the filters beside it that the
evaluation and the lint use, in the same folder: sglang_flags_version.py, sglang_flags_sm.py
and sglang_flags_requirements.py (versions, SM, package spec), sglang_flags_report.py (report
lines), sglang_flags_specs.py (argument specs), sglang_flags_env.py (task environment)."""

import copy
import importlib.util
import os

import pytest
import sglang_flags_env
import sglang_flags_report
import sglang_flags_requirements
import sglang_flags_rules as F
import sglang_flags_sm
import sglang_flags_specs
import sglang_flags_version
import yaml
from ansible.errors import AnsibleFilterError

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_flags")

with open(os.path.join(ROLE, "vars", "main.yml"), encoding="utf-8") as fh:
    RULES = yaml.safe_load(fh)["sglang_flags_rules"]
RULE_IDS = [r["id"] for r in RULES]
HOST_RULE_IDS = {r["id"] for r in RULES if r.get("scope") == "host"}
DEPLOY_RULE_IDS = {r["id"] for r in RULES if r.get("scope") == "deploy"}  # test_sglang_flags_deploy.py

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
# The same launch corrected for 0.5.23.
FIXED_ARGS = {k: v for k, v in TUNED_ARGS.items() if k != "mamba-scheduler-strategy"}
FIXED_ARGS.update({"mamba-radix-cache-strategy": "extra_buffer", "speculative-num-steps": 1})
FIXED_ENV = {k: v for k, v in TUNED_ENV.items() if k != "SGLANG_ENABLE_SPEC_V2"}

MINIMAL = {"model-path": "/data/m"}
QWEN35 = {"model-path": "/data/models/Qwen3.5-397B-A17B-NVFP4"}  # a hybrid Gated-DeltaNet model


def check(args, env=None, **kw):
    opts = dict(BLACKWELL)
    opts.update(kw)
    return F.sglang_flags_check(args, RULES, env=env or {}, **opts)


def by_rule(findings):
    return {f["rule"]: f for f in findings}


def errors(findings):
    return {f["rule"] for f in findings if f["severity"] == "error"}


# ---------------------------------------------------------------------------------------------
# one case per offline rule: (args, env, extra kwargs) that fire it, and a near miss that must not
# ---------------------------------------------------------------------------------------------
CASES = {
    "sm120-moe-flashinfer-trtllm": (
        dict(MINIMAL, **{"moe-runner-backend": "flashinfer_trtllm"}), {}, {},
        dict(MINIMAL, **{"moe-runner-backend": "flashinfer_cutlass"}), {}, {}),
    "sm120-moe-flashinfer-cutedsl": (
        dict(MINIMAL, **{"speculative-moe-runner-backend": "flashinfer_cutedsl"}), {}, {},
        dict(MINIMAL, **{"moe-runner-backend": "flashinfer_cutedsl"}), {}, {"sm": "10.0"}),
    "sm120-attention-fa3-fa4": (
        dict(MINIMAL, **{"decode-attention-backend": "fa4"}), {}, {"version": "0.5.18"},
        dict(MINIMAL, **{"attention-backend": "fa4"}), {}, {"version": "0.5.19"}),
    "sm120-hybrid-gdn-attention-backend": (
        dict(QWEN35, **{"prefill-attention-backend": "fa4"}), {}, {},
        dict(QWEN35, **{"attention-backend": "flashinfer"}), {}, {}),
    "sm120-trtllm-mha-prefill-before-0.5.19": (
        dict(MINIMAL, **{"attention-backend": "trtllm_mha"}), {}, {"version": "0.5.17"},
        dict(MINIMAL, **{"attention-backend": "trtllm_mha"}), {}, {"version": "0.5.19"}),
    "sm120-trtllm-mha-fp8-kv": (
        dict(MINIMAL, **{"prefill-attention-backend": "trtllm_mha", "kv-cache-dtype": "fp8_e4m3"}), {}, {},
        dict(MINIMAL, **{"attention-backend": "trtllm_mha", "kv-cache-dtype": "bf16"}), {}, {}),
    "sm120-fp4-gemm-cutlass": (
        dict(MINIMAL, **{"fp4-gemm-backend": "flashinfer_cutlass"}), {}, {},
        dict(MINIMAL, **{"fp4-gemm-backend": "flashinfer_cudnn"}), {}, {}),
    "sm120-fp4-gemm-default": (
        dict(MINIMAL, **{"quantization": "modelopt_fp4"}), {}, {},
        dict(MINIMAL, **{"quantization": "modelopt_fp4", "fp4-gemm-backend": "flashinfer_cudnn"}), {}, {}),
    "sm120-torch-symm-mem": (
        dict(MINIMAL, **{"enable-torch-symm-mem": True}), {}, {},
        dict(MINIMAL, **{"enable-torch-symm-mem": False}), {}, {}),
    "removed-mamba-scheduler-strategy": (
        dict(MINIMAL, **{"mamba-scheduler-strategy": "extra_buffer"}), {}, {"version": "0.5.20"},
        dict(MINIMAL, **{"mamba-scheduler-strategy": "extra_buffer"}), {}, {"version": "0.5.19"}),
    "deprecated-mamba-scheduler-strategy": (
        dict(MINIMAL, **{"mamba-scheduler-strategy": "extra_buffer"}), {}, {"version": "0.5.14"},
        dict(MINIMAL, **{"mamba-scheduler-strategy": "extra_buffer"}), {}, {"version": "0.5.13"}),
    "mamba-radix-cache-strategy-before-0.5.14": (
        dict(MINIMAL, **{"mamba-radix-cache-strategy": "extra_buffer"}), {}, {"version": "0.5.14rc1"},
        dict(MINIMAL, **{"mamba-radix-cache-strategy": "extra_buffer"}), {}, {"version": "0.5.14"}),
    "removed-env-spec-v2": (
        MINIMAL, {"SGLANG_ENABLE_SPEC_V2": "1"}, {"version": "0.5.14"},
        MINIMAL, {"SGLANG_ENABLE_SPEC_V2": "1"}, {"version": "0.5.13.post1"}),
    "env-pcie-ipc-allreduce-before-0.5.21": (
        MINIMAL, {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": 1}, {"version": "0.5.21.dev0+g123"},
        MINIMAL, {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": 1}, {"version": "0.5.21"}),
    "deprecated-disable-cuda-graph": (
        dict(MINIMAL, **{"disable-cuda-graph": True}), {}, {"version": "0.5.17"},
        dict(MINIMAL, **{"disable-cuda-graph": True}), {}, {"version": "0.5.13"}),
    "deprecated-enable-dp-attention": (
        dict(MINIMAL, **{"enable-dp-attention": True}), {}, {"version": "0.5.22"},
        dict(MINIMAL, **{"enable-dp-attention": True}), {}, {"version": "0.5.21"}),
    "deprecated-enable-flashinfer-allreduce-fusion": (
        dict(MINIMAL, **{"enable_flashinfer_allreduce_fusion": True}), {}, {"version": "0.5.17"},
        dict(MINIMAL, **{"enable_flashinfer_allreduce_fusion": True}), {}, {"version": "0.5.13"}),
    "mamba-extra-buffer-spec-before-0.5.16": (
        dict(MINIMAL, **{"speculative-algorithm": "NEXTN", "mamba-radix-cache-strategy": "extra_buffer"}), {},
        {"version": "0.5.15.post1"},
        dict(MINIMAL, **{"speculative-algorithm": "NEXTN", "mamba-radix-cache-strategy": "extra_buffer"}), {},
        {"version": "0.5.16"}),
    "pcie-ipc-allreduce-deterministic": (
        dict(MINIMAL, **{"enable-deterministic-inference": True}), {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}, {},
        dict(MINIMAL, **{"enable-deterministic-inference": True}), {}, {}),
    "pcie-ipc-allreduce-world-size": (
        dict(MINIMAL, **{"tp-size": 6}), {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}, {},
        dict(MINIMAL, **{"tp-size": 8}), {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}, {}),
    "pcie-ipc-allreduce-dtype": (
        dict(MINIMAL, **{"dtype": "float16"}), {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}, {},
        dict(MINIMAL, **{"dtype": "bfloat16"}), {"SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": "1"}, {}),
    "spec-draft-without-num-steps": (
        dict(MINIMAL, **{"speculative-algorithm": "nextn", "speculative-eagle-topk": 1}), {}, {},
        dict(MINIMAL, **{"speculative-algorithm": "NGRAM", "speculative-num-draft-tokens": 2}), {}, {}),
    "spec-knobs-without-algorithm": (
        dict(MINIMAL, **{"speculative-num-draft-tokens": 2}), {}, {},
        dict(MINIMAL, **{"speculative-algorithm": "EAGLE", "speculative-num-steps": 2}), {}, {}),
    "mscclpp-not-installed": (
        dict(MINIMAL, **{"enable-mscclpp": True}), {}, {},
        dict(MINIMAL, **{"enable-mscclpp": True}), {}, {"packages": ["mscclpp==0.7.0"]}),
    "tp-exceeds-gpu-count": (
        dict(MINIMAL, **{"tp-size": 8, "pp-size": 2}), {}, {},
        dict(MINIMAL, **{"tp-size": 8, "pp-size": 2, "nnodes": 2}), {}, {}),
    "model-path-missing": (
        {"tp": 8}, {}, {},
        {"model": "/data/m"}, {}, {}),
}


def test_every_offline_rule_has_a_case():
    offline = [i for i in RULE_IDS if i not in HOST_RULE_IDS | DEPLOY_RULE_IDS]
    assert sorted(offline) == sorted(CASES), "add a case to CASES for each new rule (and only rules)"


def test_host_rules_are_the_ones_the_script_implements():
    with open(os.path.join(ROLE, "files", "sglang_preflight.py"), encoding="utf-8") as fh:
        script = fh.read()
    assert HOST_RULE_IDS == {"host-model-path-missing", "host-mscclpp-not-importable",
                             "host-tp-exceeds-gpu-count"}
    for rid in HOST_RULE_IDS:
        assert f'"{rid}"' in script
    # and the offline check never evaluates them
    assert not HOST_RULE_IDS & {f["rule"] for f in check({"tp": 64})}


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_fires(rule_id):
    args, env, kw, *_ = CASES[rule_id]
    found = by_rule(check(args, env, **kw))
    assert rule_id in found, found
    f = found[rule_id]
    rule = next(r for r in RULES if r["id"] == rule_id)
    assert f["severity"] == rule["severity"]
    assert f["status"] == "violation"
    assert f["fix"] and f["source"] and f["message"]
    assert "{" not in f["message"] and "{" not in f["fix"], "unfilled placeholder"


@pytest.mark.parametrize("rule_id", sorted(CASES))
def test_rule_near_miss_does_not_fire(rule_id):
    *_, args, env, kw = CASES[rule_id]
    assert rule_id not in by_rule(check(args, env, **kw))


def test_rules_table_shape():
    F.sglang_flags_validate_rules(RULES)
    assert len(set(RULE_IDS)) == len(RULE_IDS)
    for rule in RULES:
        assert rule["source"].strip(), rule["id"]


@pytest.mark.parametrize("mutate,match", [
    (lambda r: r.pop("fix"), "missing"),
    (lambda r: r.update(severity="fatal"), "severity"),
    (lambda r: r["applies"].update(gpu="12.0"), "unknown condition"),
    (lambda r: r["applies"].update(sglang={"min": "banana"}), "not a PEP 440"),
    (lambda r: r.update(scope="remote"), "scope"),
])
def test_malformed_rules_are_rejected_naming_the_rule(mutate, match):
    rules = copy.deepcopy(RULES)
    mutate(rules[0])
    with pytest.raises(AnsibleFilterError, match=match):
        F.sglang_flags_validate_rules(rules)


def test_duplicate_rule_ids_are_rejected():
    with pytest.raises(AnsibleFilterError, match="duplicate"):
        F.sglang_flags_validate_rules(RULES + [copy.deepcopy(RULES[0])])


# ---------------------------------------------------------------------------------------------
# the hand-tuned command
# ---------------------------------------------------------------------------------------------
def test_hand_tuned_command_is_rejected_on_0_5_23_naming_the_rename():
    found = check(TUNED_ARGS, TUNED_ENV)
    assert errors(found) == {"removed-mamba-scheduler-strategy", "spec-draft-without-num-steps"}
    rename = by_rule(found)["removed-mamba-scheduler-strategy"]
    assert rename["flag"] == "mamba-scheduler-strategy"
    assert "--mamba-radix-cache-strategy" in rename["message"]
    assert "mamba-radix-cache-strategy" in rename["fix"]
    assert "0.5.23" in rename["message"]
    assert by_rule(found)["removed-env-spec-v2"]["severity"] == "warning"
    steps = by_rule(found)["spec-draft-without-num-steps"]
    assert "speculative-num-steps 1" in steps["fix"]


def test_hand_tuned_command_on_0_5_14_only_warns_about_the_alias():
    found = check(TUNED_ARGS, TUNED_ENV, version="0.5.14")
    assert "removed-mamba-scheduler-strategy" not in by_rule(found)
    assert by_rule(found)["deprecated-mamba-scheduler-strategy"]["severity"] == "warning"


def test_corrected_command_is_accepted():
    assert check(FIXED_ARGS, FIXED_ENV) == []


def test_production_profile_is_accepted_on_0_5_23_sm120():
    path = os.path.join(ROOT, "inventories", "production", "group_vars", "blackwell", "sglang.yml")
    with open(path, encoding="utf-8") as fh:
        profile = yaml.safe_load(fh)
    assert profile["gpu_host_expected_sm"] == "12.0"
    found = check(profile["sglang_server_args"], profile["sglang_server_env"])
    assert found == []
    # the PCIe levers are opt-in
    for lever in ("sglang_server_pcie_ipc_allreduce", "sglang_server_nccl_ib_disable",
                  "sglang_server_nccl_p2p_level_sys"):
        assert profile[lever] is False
    assert not profile["sglang_server_args"]["enable-mscclpp"]


def test_every_violation_is_listed_not_just_the_first():
    args = dict(TUNED_ARGS, **{"moe-runner-backend": "flashinfer_trtllm", "attention-backend": "fa3",
                              "enable-mscclpp": True, "tp": 16})
    assert errors(check(args, TUNED_ENV)) == {
        "removed-mamba-scheduler-strategy", "spec-draft-without-num-steps",
        "sm120-moe-flashinfer-trtllm", "sm120-hybrid-gdn-attention-backend", "mscclpp-not-installed",
        "tp-exceeds-gpu-count",
    }


# ---------------------------------------------------------------------------------------------
# unknowns, waivers, formatting
# ---------------------------------------------------------------------------------------------
def test_unknown_version_warns_instead_of_passing():
    found = by_rule(check(TUNED_ARGS, TUNED_ENV, version=""))
    f = found["removed-mamba-scheduler-strategy"]
    assert (f["severity"], f["status"]) == ("warning", "unknown-version")
    assert "version unknown" in f["message"]
    assert "deprecated-mamba-scheduler-strategy" in found  # every range it might be in


def test_unknown_sm_warns_instead_of_passing():
    f = by_rule(check(dict(MINIMAL, **{"moe-runner-backend": "flashinfer_trtllm"}), sm=""))[
        "sm120-moe-flashinfer-trtllm"]
    assert (f["severity"], f["status"]) == ("warning", "unknown-sm")


def test_unknown_gpu_count_and_packages_warn():
    found = by_rule(check(dict(MINIMAL, **{"tp": 8, "enable-mscclpp": True}), gpu_count="",
                          packages=None))
    assert found["tp-exceeds-gpu-count"]["status"] == "unknown-gpu-count"
    assert found["mscclpp-not-installed"]["status"] == "unknown-packages"
    assert {f["severity"] for f in found.values()} == {"warning"}


def test_gpu_count_zero_means_unknown():
    f = by_rule(check(dict(MINIMAL, tp=2), gpu_count=0))["tp-exceeds-gpu-count"]
    assert f["status"] == "unknown-gpu-count"


def test_single_gpu_needs_no_gpu_count():
    assert check(MINIMAL, gpu_count=None) == []


def test_waiver_turns_an_error_into_a_visible_warning():
    args = dict(MINIMAL, **{"moe-runner-backend": "flashinfer_trtllm"})
    f = by_rule(check(args, waive=["sm120-moe-flashinfer-trtllm"]))["sm120-moe-flashinfer-trtllm"]
    assert (f["severity"], f["status"]) == ("warning", "waived")
    assert "waived" in f["message"]


def test_unknown_waiver_id_is_reported():
    f = by_rule(check(MINIMAL, waive=["sm120-moe-trtllm"]))["sm120-moe-trtllm"]
    assert (f["severity"], f["status"]) == ("warning", "unknown-waiver")


def test_bad_input_names_the_variable():
    with pytest.raises(AnsibleFilterError, match="sglang_flags_sglang_version"):
        check(MINIMAL, version="latest")
    with pytest.raises(AnsibleFilterError, match="sglang_flags_gpu_sm"):
        check(MINIMAL, sm="blackwell")
    with pytest.raises(AnsibleFilterError, match="sglang_flags_gpu_count"):
        check(MINIMAL, gpu_count="eight")
    with pytest.raises(AnsibleFilterError, match="sglang_server_args"):
        check(["--tp", "8"])


def test_bad_input_as_a_finding_in_lint_mode():
    found = F.sglang_flags_check({"bad name": 1}, RULES, errors_as_findings=True)
    assert [(f["rule"], f["severity"]) for f in found] == [("input", "error")]
    assert "bad name" in found[0]["message"]


def test_tp_prefix_and_aliases_count_gpus():
    for flag in ("tp", "tp-size", "tensor-parallel-size", "tensor_parallel_size"):
        assert "tp-exceeds-gpu-count" in errors(check(dict(MINIMAL, **{flag: 16})))


def test_extra_site_rule():
    extra = {"id": "site-no-fp8-kv", "severity": "error", "message": "no {value}", "fix": "drop it",
             "source": "site policy", "applies": {"flag_values": {"kv-cache-dtype": ["fp8_e4m3"]}}}
    found = F.sglang_flags_check(dict(MINIMAL, **{"kv-cache-dtype": "fp8_e4m3"}), RULES + [extra])
    assert by_rule(found)["site-no-fp8-kv"]["message"] == "no fp8_e4m3"


def test_format_and_report_name_host_flag_rule_fix():
    found = check(dict(MINIMAL, **{"moe-runner-backend": "flashinfer_trtllm"}), {"SGLANG_ENABLE_SPEC_V2": 1})
    lines = sglang_flags_report.sglang_flags_format(found, "gpu-node-01")
    assert any(ln.startswith("gpu-node-01: --moe-runner-backend [sm120-moe-flashinfer-trtllm]")
               and "Fix: use --moe-runner-backend flashinfer_cutlass" in ln for ln in lines)
    assert any("SGLANG_ENABLE_SPEC_V2 [removed-env-spec-v2]" in ln for ln in lines)
    report = sglang_flags_report.sglang_flags_report({"b-host": found, "a-host": []})
    assert len(report["errors"]) == 1 and report["errors"][0].startswith("b-host: ")
    assert len(report["warnings"]) == 1


def test_collect_marks_hosts_without_findings():
    hostvars = {"a": {"_x": []}, "b": {}}
    out = sglang_flags_report.sglang_flags_collect(hostvars, ["a", "b"], "_x")
    assert out["a"] == [] and out["b"][0]["rule"] == "not-evaluated"


def test_host_rules_and_renames_for_the_script():
    hr = F.sglang_flags_host_rules(RULES)
    assert set(hr["rules"]) == HOST_RULE_IDS
    assert hr["renames"]["mamba-scheduler-strategy"]["replacement"] == "--mamba-radix-cache-strategy"


def test_spec_findings_from_validate_argument_spec_results():
    results = [
        {"item": "/r/roles/ml_env/meta/argument_specs.yml", "failed": False,
         "msg": "The arg spec validation passed"},
        {"item": "/r/roles/gpu_host/meta/argument_specs.yml", "failed": False,
         "argument_errors": ["argument 'gpu_host_expected_gpu_count' is of type str and we were unable to convert to int"],
         "msg": "Validation of arguments failed"},
    ]
    found = sglang_flags_specs.sglang_flags_spec_findings(results)
    assert [(f["rule"], f["flag"], f["severity"]) for f in found] == [
        ("argument-spec", "role gpu_host", "error")]


def test_lint_spec_drops_required_and_default():
    spec = {"a": {"type": "str", "required": True, "default": "computed", "choices": ["x"]}}
    assert sglang_flags_specs.sglang_flags_lint_spec(spec) == {"a": {"type": "str", "choices": ["x"]}}


def test_env_dict_for_the_task_environment():
    assert sglang_flags_env.sglang_flags_env_dict({"A": 1, "B": None, "C": True, "D": False}) == {
        "A": "1", "C": "1", "D": "0"}


# ---------------------------------------------------------------------------------------------
# versions, SM, package spec
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lower,higher", [
    ("0.5.9", "0.5.10"),
    ("0.5.23", "0.5.24.dev0+g1234"),
    ("0.5.24.dev0+g1234", "0.5.24a1"),
    ("0.5.24a1", "0.5.24b2"),
    ("0.5.24rc1", "0.5.24"),
    ("0.5.24", "0.5.24.post1"),
    ("0.5.6", "0.5.6.post2"),
    ("0.5.6.post2", "0.5.7"),
    ("0.5.6.post2.dev1", "0.5.6.post2"),
    ("0.5.20", "0.5.20.1"),
    ("0.5", "0.5.0.1"),
    ("1!0.1", "2!0.0"),
])
def test_version_order(lower, higher):
    assert F.sglang_version_compare(lower, higher) == -1
    assert F.sglang_version_compare(higher, lower) == 1


@pytest.mark.parametrize("a,b", [("0.5", "0.5.0"), ("0.5.23", "0.5.23+local"), ("v0.5.23", "0.5.23"),
                                 ("0.5.14-rc1", "0.5.14rc1"), ("0.5.6-1", "0.5.6.post1")])
def test_version_equal(a, b):
    assert F.sglang_version_compare(a, b) == 0


@pytest.mark.parametrize("bad", ["", "latest", "0.5.x", "main"])
def test_version_rejects_garbage(bad):
    with pytest.raises(ValueError):
        sglang_flags_version.version_key(bad)


def test_version_in_range_bounds():
    assert sglang_flags_version.version_in_range("0.5.20", "0.5.20", None)
    assert not sglang_flags_version.version_in_range("0.5.20", None, "0.5.20")
    assert sglang_flags_version.version_in_range("0.5.19.post3", None, "0.5.20")
    assert not sglang_flags_version.version_in_range("0.5.20.dev0", "0.5.20", None)


@pytest.mark.parametrize("spec,want", [
    (["torch==2.14.1", "sglang==0.5.23"], "0.5.23"),
    (["sglang[all]==0.5.6.post2"], "0.5.6.post2"),
    (["sglang===0.5.24.dev0+g1a2b"], "0.5.24.dev0+g1a2b"),
    (["sglang-router==0.3.2", "sglang-kernel==0.4.10"], ""),
    (["sglang>=0.5.20"], ""),
    (["-e python"], ""),
    (["/srv/wheelhouse/sglang-0.5.23-py3-none-any.whl"], "0.5.23"),
    (["sglang @ https://example.invalid/sglang-0.5.24.dev3-py3-none-any.whl"], "0.5.24.dev3"),
    ([], ""),
    (None, ""),
    ("sglang==0.5.23", "0.5.23"),
])
def test_version_from_spec(spec, want):
    assert sglang_flags_requirements.sglang_flags_version_from_spec(spec) == want


def test_version_from_the_local_inventory_spec():
    with open(os.path.join(ROOT, "inventories", "local", "group_vars", "all", "ml_env.yml"), encoding="utf-8") as fh:
        ml_env = yaml.safe_load(fh)
    reqs = ml_env.get("ml_env_packages", []) + ml_env.get("ml_env_packages_nodeps", [])
    assert sglang_flags_requirements.sglang_flags_version_from_spec(reqs) == "0.5.23"


def test_package_names():
    assert sglang_flags_requirements.sglang_flags_package_names(
        ["MSCCLPP==0.7", "flashinfer_python>=0.6", "-e python", "# c", "/w/sgl_kernel-0.4.10-cp311-abi3.whl"]
    ) == ["flashinfer-python", "mscclpp", "sgl-kernel"]


@pytest.mark.parametrize("value,want", [
    ("12.0", "12.0"), (12.0, "12.0"), (12, "12.0"), ("sm_120", "12.0"), ("SM120", "12.0"),
    ("120", "12.0"), ("9.0", "9.0"), ("90", "9.0"), ("sm_90", "9.0"), ("12.1", "12.1"),
    ("sm_75", "7.5"), ("", ""), (None, ""),
])
def test_normalize_sm(value, want):
    assert sglang_flags_sm.sglang_flags_normalize_sm(value) == want


def test_every_filter_of_the_folder_is_published_once():
    """Ansible loads every file of filter_plugins/ and merges their filters: a name published by
    two files would leave one of them unused."""
    folder = os.path.join(ROLE, "filter_plugins")
    owners = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        spec = importlib.util.spec_from_file_location(f"_test_filters_{name[:-3]}", os.path.join(folder, name))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for filter_name in module.FilterModule().filters():
            assert filter_name not in owners, f"{filter_name}: {owners.get(filter_name)} and {name}"
            owners[filter_name] = name
    assert owners["sglang_flags_check"] == "sglang_flags_rules.py"
    assert owners["sglang_flags_report"] == "sglang_flags_report.py"
