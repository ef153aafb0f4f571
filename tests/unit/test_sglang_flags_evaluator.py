"""The evaluator of the rules table (plugins/module_utils/flags/rules.py):
it rejects malformed tables, warns on unknown versions, SM, GPU counts and packages instead of
passing, turns waivers into visible warnings, names the variable of a bad input, takes extra site
rules and exports the host rules for files/sglang_preflight.py."""

import copy

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.flags import rules as F
from ansible.errors import AnsibleFilterError
from sglang_flags_rules_support import HOST_RULE_IDS, MINIMAL, RULES, TUNED_ARGS, TUNED_ENV, by_rule, check, errors


# ---------------------------------------------------------------------------------------------
# malformed tables
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mutate,match", [
    (lambda r: r.pop("fix"), "missing"),
    (lambda r: r.update(severity="fatal"), "severity"),
    (lambda r: r["applies"].update(gpu="12.0"), "unknown condition"),
    (lambda r: r["applies"].update(sglang={"min": "banana"}), "not a PEP 440"),
    (lambda r: r.update(scope="remote"), "scope"),
    (lambda r: r["applies"].update(flag_at_least={"ep-size": "two"}), "flag_at_least"),
    (lambda r: r["applies"].update(flag_at_least=["ep-size"]), "flag_at_least"),
    (lambda r: r["applies"].update(flag_at_least={}), "flag_at_least"),
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
# unknowns, waivers, inputs
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


def test_host_rules_and_renames_for_the_script():
    hr = F.sglang_flags_host_rules(RULES)
    assert set(hr["rules"]) == HOST_RULE_IDS
    assert hr["renames"]["mamba-scheduler-strategy"]["replacement"] == "--mamba-radix-cache-strategy"



# ---------------------------------------------------------------------------------------------
# flag_at_least: a numeric threshold on a flag's value
# ---------------------------------------------------------------------------------------------
AT_LEAST = {"id": "site-long-context", "severity": "error", "message": "--{flag} {value}", "fix": "lower it",
            "source": "site policy", "applies": {"flag_at_least": {"context-length": 262144, "ep": 2}}}


@pytest.mark.parametrize("args,hit", [
    ({"context-length": 262144}, ("context-length", 262144)),
    ({"context-length": "300000"}, ("context-length", "300000")),
    ({"context-length": 131072, "ep": 2}, ("ep", 2)),
    ({"ep": "8"}, ("ep", "8")),
])
def test_flag_at_least_fires_at_or_above_the_limit(args, hit):
    f = by_rule(F.sglang_flags_check(dict(MINIMAL, **args), [AT_LEAST]))["site-long-context"]
    assert (f["flag"], f["value"]) == hit
    assert f["message"] == f"--{hit[0]} {hit[1]}"


@pytest.mark.parametrize("args", [
    {"context-length": 262143}, {"context-length": "auto"}, {"context-length": True}, {"ep": 1}, {"ep-size": 8}, {},
])
def test_flag_at_least_does_not_fire_below_the_limit_or_on_other_flags(args):
    assert F.sglang_flags_check(dict(MINIMAL, **args), [AT_LEAST]) == []


def test_flag_at_least_names_the_flag_after_flags_any():
    rule = dict(AT_LEAST, applies={"flags_any": ["speculative-algorithm"], "flag_at_least": {"context-length": 10}})
    f = F.sglang_flags_check(dict(MINIMAL, **{"speculative-algorithm": "NEXTN", "context-length": 20}), [rule])[0]
    assert f["flag"] == "speculative-algorithm"
