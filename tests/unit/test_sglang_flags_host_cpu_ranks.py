"""The CPU server's ranks against its thread binding (rules host-cpu-ranks-exceed-numa-nodes and
host-cpu-omp-bind-groups, roles/sglang_flags/files/sglang_preflight.py): SGLang 0.5.23 binds each
rank's OpenMP threads at start (numa_utils.init_threads_binding) and asserts in a rank without a
NUMA node or a core group of its own. Seen on the demo hosts (1 NUMA node, 2 cores): --dp-size 2
without SGLANG_CPU_OMP_THREADS_BIND never answered; with "0|1" both replicas served."""

from types import SimpleNamespace

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.flags import report
from ansible_collections.sglang.deploy.plugins.module_utils.flags import rules as F
from sglang_flags_rules_support import RULES
from test_sglang_flags_host_gpu_count import LAYOUT_SOURCE, preflight


def cpu_args(dp=1, tp=1, pp=1, device="cpu"):
    return SimpleNamespace(tp_size=tp, pp_size=pp, dp_size=dp, nnodes=1, attn_dp_size=None,
                           enable_dp_attention=False, device=device)


def cpu_check(sa, numa_nodes=1, bind=None, monkeypatch=None):
    if bind is None:
        monkeypatch.delenv("SGLANG_CPU_OMP_THREADS_BIND", raising=False)
    else:
        monkeypatch.setenv("SGLANG_CPU_OMP_THREADS_BIND", bind)
    request = {"rules": F.sglang_flags_host_rules(RULES)["rules"], "layout_source": LAYOUT_SOURCE}
    verdict = preflight.Verdict(request)
    preflight.check_cpu_ranks(verdict, sa, request, numa_nodes=numa_nodes)
    return verdict.out


def test_two_replicas_on_one_numa_node_without_a_binding_are_refused(monkeypatch):
    out = cpu_check(cpu_args(dp=2), numa_nodes=1, monkeypatch=monkeypatch)
    assert not out["ok"]
    (error,) = out["errors"]
    assert error["rule"] == "host-cpu-ranks-exceed-numa-nodes" and error["flag"] == "dp-size"
    line = report.sglang_flags_format(out["errors"], "sglang-local-1")[0]
    assert line.startswith("sglang-local-1: --dp-size [host-cpu-ranks-exceed-numa-nodes]")
    assert "dp-size 2 x tp-size 1 x pp-size 1 = 2 ranks" in line and "this host has 1:" in line
    assert 'Fix: set SGLANG_CPU_OMP_THREADS_BIND in sglang_server_env' in line and '"0|1"' in line
    assert "docs/local-profile.md#data-parallel-replicas-on-cpu" in line and "{" not in line


@pytest.mark.parametrize("dp,tp,pp,numa,bind,rule", [
    (2, 1, 1, 1, "0|1", None),                          # the demo's candidate
    (2, 1, 1, 2, None, None),                           # one node per rank
    (1, 1, 1, 1, None, None),                           # one rank: nothing to bind
    (2, 2, 1, 2, None, "host-cpu-ranks-exceed-numa-nodes"),
    (2, 2, 1, 2, "0-15|16-31|32-47|48-63", None),
    (2, 2, 1, 2, "0-31|32-63", "host-cpu-omp-bind-groups"),
    (1, 1, 2, 1, "0", "host-cpu-omp-bind-groups"),
])
def test_ranks_against_nodes_and_groups(monkeypatch, dp, tp, pp, numa, bind, rule):
    out = cpu_check(cpu_args(dp=dp, tp=tp, pp=pp), numa_nodes=numa, bind=bind, monkeypatch=monkeypatch)
    assert [e["rule"] for e in out["errors"]] == ([rule] if rule else [])


def test_the_groups_message_names_the_value_and_the_count(monkeypatch):
    out = cpu_check(cpu_args(dp=2, tp=2), numa_nodes=2, bind="0-31|32-63", monkeypatch=monkeypatch)
    line = report.sglang_flags_format(out["errors"], "h")[0]
    assert "SGLANG_CPU_OMP_THREADS_BIND (0-31|32-63) names 2 core group(s)" in line
    assert "Fix: give SGLANG_CPU_OMP_THREADS_BIND 4 core lists" in line


def test_a_gpu_server_is_not_judged(monkeypatch):
    assert cpu_check(cpu_args(dp=4, device="cuda"), numa_nodes=1, monkeypatch=monkeypatch)["ok"]
    assert cpu_check(cpu_args(dp=4, device=None), numa_nodes=1, monkeypatch=monkeypatch)["ok"]
