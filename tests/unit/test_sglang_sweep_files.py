"""The sweep files (sweeps/*.yml) expanded against their inventory's flags and judged offline the
way roles/sglang_flags judges a host (tasks/evaluate.yml: the input checks with the flag catalog,
then the rules table): the known-bad Blackwell candidates are rejected naming their rule, the
rest pass, and the local sweep stays short."""

import os

import pytest
import yaml

from ansible_collections.sglang.deploy.plugins.module_utils.sweep import plan

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FLAGS = os.path.join(ROOT, "roles", "sglang_flags")




from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as INPUTS
from ansible_collections.sglang.deploy.plugins.module_utils.flags import catalog as CATALOG
from ansible_collections.sglang.deploy.plugins.module_utils.flags import rules as RULES_F


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


RULES = _yaml("roles", "sglang_flags", "vars", "main.yml")["sglang_flags_rules"]
SPEC = _yaml("roles", "sglang_sweep", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def expand(sweep_file, inventory, group):
    sweep = _yaml("sweeps", sweep_file)
    profile = _yaml("inventories", inventory, "group_vars", group, "sglang.yml")
    return sweep, plan.expand(profile["sglang_server_args"], profile.get("sglang_server_env"),
                              sweep.get("sweep_base"), sweep.get("sweep_axes"), sweep.get("sweep_candidates"))


def judge(cand, version="0.5.23", **host):
    """Error findings of one candidate as the lint finds them: rule ids."""
    catalog = CATALOG.sglang_flags_catalog_of(version)
    findings = INPUTS.sglang_flags_inputs(cand["args"], env=cand["env"], catalog=catalog, rules=RULES,
                                          version=version)
    findings += RULES_F.sglang_flags_check(INPUTS.sglang_flags_expand(cand["args"], catalog), RULES,
                                           env=cand["env"], version=version, **host)
    return sorted({f["rule"] for f in findings if f["severity"] == "error"})


BLACKWELL = dict(sm="12.0", gpu_count=8, packages=["sglang"])


@pytest.mark.parametrize("name", ["blackwell-backends.yml", "local-cpu.yml", "local-cpu-topology.yml"])
def test_sweep_files_use_only_the_documented_variables(name):
    sweep = _yaml("sweeps", name)
    assert set(sweep) <= set(SPEC), "undocumented: %s" % sorted(set(sweep) - set(SPEC))
    assert sweep["sweep_name"] == name[:-len(".yml")]
    assert isinstance(sweep["sweep_candidate_timeout"], int) and isinstance(sweep["sweep_time_budget"], int)


def test_blackwell_backends_rejects_the_known_bad_and_passes_the_rest():
    sweep, cands = expand("blackwell-backends.yml", "production", "blackwell")
    verdicts = dict((c["label"], judge(c, **BLACKWELL)) for c in cands)
    assert cands[0]["label"] == "baseline" and verdicts["baseline"] == []
    rejected = dict((label, rules) for label, rules in verdicts.items() if rules)
    passing = [label for label, rules in verdicts.items() if not rules]
    assert len(cands) == 53 and len(rejected) == 42 and len(passing) == 11
    fired = set(r for rules in rejected.values() for r in rules)
    assert fired == {"sm120-moe-flashinfer-cutedsl", "sm120-moe-flashinfer-trtllm", "sm120-fp4-gemm-cutlass",
                     "sm120-hybrid-gdn-attention-backend", "sm120-attention-fa3", "spec-draft-without-num-steps"}
    assert rejected["moe-runner-backend=flashinfer_trtllm"] == ["sm120-moe-flashinfer-trtllm"]
    assert rejected["draft tokens without num-steps (refused)"] == ["spec-draft-without-num-steps"]
    assert verdicts["trtllm_mha attention"] == [] and verdicts["SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1"] == []
    # the December candidates pass within their conditions (test_sglang_flags_rules_field.py breaks each)
    assert verdicts["FlashInfer GDN prefill (SGLang PR 36357's SM120 domain)"] == []
    assert verdicts["extra_buffer_lazy Mamba cache"] == []
    # the linked NEXTN axis varies its three settings together, and only those
    longer = [c for c in cands if c["changes"] == {
        "args": {"speculative-num-steps": 2, "speculative-num-draft-tokens": 3}, "env": {}}]
    assert len(longer) == 1 and longer[0]["args"]["speculative-eagle-topk"] == 1
    # the survivors' worst case (every start taking its whole timeout) fits the budget
    assert len(passing) * sweep["sweep_candidate_timeout"] <= sweep["sweep_time_budget"]


def test_local_cpu_sweep_is_short_and_real():
    sweep, cands = expand("local-cpu.yml", "local", "all")
    verdicts = [(c["label"], judge(c, sm="", gpu_count=None, packages=["sglang"])) for c in cands]
    assert [v[0] for v in verdicts][0] == "baseline"
    started = [label for label, rules in verdicts if not rules]
    assert 4 <= len(started) <= 6 and len(cands) <= 6
    assert dict(verdicts)["unknown schedule policy (refused)"] == ["flag-choice"]
    assert cands[0]["env"]["OMP_NUM_THREADS"] == "1"  # the profile's value is the baseline, not a candidate
    assert len(started) * sweep["sweep_candidate_timeout"] <= sweep["sweep_time_budget"]


def test_local_cpu_topology_sweep_passes_offline_and_gives_each_replica_a_core():
    """Both dp 2 candidates pass the offline rules: the one without SGLANG_CPU_OMP_THREADS_BIND is
    refused on the host, where the NUMA nodes are counted (test_sglang_flags_host_cpu_ranks.py)."""
    sweep, cands = expand("local-cpu-topology.yml", "local", "all")
    verdicts = dict((c["label"], judge(c, sm="", gpu_count=None, packages=["sglang"])) for c in cands)
    assert list(verdicts) == ["baseline", "dp 2, one core per replica", "dp 2 without a thread binding (refused)"]
    assert all(rules == [] for rules in verdicts.values()), verdicts
    assert cands[0]["aliases"] == ["one scheduler"]  # the profile itself: not started twice
    bound, unbound = cands[1], cands[2]
    assert bound["changes"] == {"args": {"dp-size": 2}, "env": {"SGLANG_CPU_OMP_THREADS_BIND": "0|1"}}
    assert unbound["changes"] == {"args": {"dp-size": 2}, "env": {}}
    assert sweep["sweep_objective"] == "throughput" and sweep["sweep_objective_concurrency"] in sweep["sweep_concurrency"]
    assert 2 * sweep["sweep_candidate_timeout"] <= sweep["sweep_time_budget"]


def test_local_cpu_topology_sweep_on_a_dp2_canary_has_the_way_back():
    """On a canary deployed with the dp 2 candidate's settings, the same file starts one
    scheduler and the two dp 2 candidates are that canary itself."""
    sweep = _yaml("sweeps", "local-cpu-topology.yml")
    profile = _yaml("inventories", "local", "group_vars", "all", "sglang.yml")
    args = dict(profile["sglang_server_args"], **{"dp-size": 2})
    env = dict(profile.get("sglang_server_env") or {}, SGLANG_CPU_OMP_THREADS_BIND="0|1")
    cands = plan.expand(args, env, None, None, sweep["sweep_candidates"])
    assert [c["label"] for c in cands] == ["baseline", "one scheduler"]
    assert sorted(cands[0]["aliases"]) == ["dp 2 without a thread binding (refused)", "dp 2, one core per replica"]
    assert cands[1]["changes"] == {"args": {"dp-size": None}, "env": {"SGLANG_CPU_OMP_THREADS_BIND": None}}
    assert "dp-size" not in cands[1]["args"] and "SGLANG_CPU_OMP_THREADS_BIND" not in cands[1]["env"]
