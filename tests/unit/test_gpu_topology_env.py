"""Whether a host's server gets CUDA_VISIBLE_DEVICES in the grouped order
(plugins/module_utils/gpu/topology_env.py, the filter gpu_topology_env of
plugins/module_utils/gpu/topology_env.py), on the gpu_host fixtures (tests/fixtures/gpu-host/)."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sglang.deploy.plugins.filter.filters import FilterModule
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import topology_env as gfilter
from ansible_collections.sglang.deploy.plugins.module_utils.gpu.topology_env import gpu_order
from test_gpu_topology_groups import H200, INTERLEAVED, NVL, RTX, facts

TITANX = facts("titanx-4gpu-dual-socket-mlx4")
BASE = {"model-path": "/data/m"}


def flags(**layout):
    return dict(BASE, **{k.replace("_", "-"): v for k, v in layout.items()})


def test_interleaved_tp4_dp2_gets_the_grouped_order_and_says_why():
    out = gpu_order(INTERLEAVED, flags(tp_size=4, dp_size=2), {})
    assert out["applies"] and out["env"] == {"CUDA_VISIBLE_DEVICES": "0,2,4,6,1,3,5,7"}
    assert out["lines"] == [
        "DP rank 0: GPUs 0,2,4,6: GPUs 0,2,4,6 under one PCIe switch tree (PXB)",
        "DP rank 1: GPUs 1,3,5,7: GPUs 1,3,5,7 under one PCIe switch tree (PXB)"]
    assert out["warnings"] == []
    assert "dp-size 2 x tp-size 4 x pp-size 1 on 8 GPUs" in out["why"]


def test_rtx_tp4_dp2_one_replica_per_socket():
    out = gpu_order(RTX, flags(tp=4, dp=2), None)
    assert out["env"] == {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    assert out["lines"][1] == "DP rank 1: GPUs 4,5,6,7: GPUs 4-7 under NUMA node 1 (NODE)"


def test_fewer_gpus_than_the_host_take_one_switch_and_name_the_rest():
    out = gpu_order(RTX, flags(tp_size=2), {})
    assert out["env"] == {"CUDA_VISIBLE_DEVICES": "0,1"}
    assert out["lines"] == ["DP rank 0: GPUs 0,1: GPUs 0,1 under one PCIe switch on NUMA node 0 (PIX)",
                            "GPUs 2,3,4,5,6,7 are not used by this layout"]


def test_older_layout_capture_groups_by_numa_node():
    out = gpu_order(TITANX, flags(tp_size=2, dp_size=2), {})
    assert out["env"] == {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert [r["numa_node"] for r in out["plan"]["replicas"]] == [0, 1]


def test_no_grouping_within_a_socket_warns():
    out = gpu_order(TITANX, flags(tp_size=4, dp_size=1, pp_size=1), {})
    assert not out["applies"]  # one replica over every GPU: nothing to order
    out = gpu_order(RTX, flags(tp_size=3, dp_size=2), {})
    assert out["applies"]
    assert out["warnings"] == []  # 3 + 3 fit a socket of 4 each
    out = gpu_order(TITANX, flags(tp_size=3), {})
    assert out["applies"] and out["warnings"] == [
        "3 GPUs over 2 sockets cannot form a TP3 group within one socket: every all-reduce "
        "crosses the sockets (SYS)"]


def test_the_inventory_cuda_visible_devices_wins_and_the_grouping_is_reported():
    out = gpu_order(INTERLEAVED, flags(tp_size=4, dp_size=2), {"CUDA_VISIBLE_DEVICES": "7,6,5,4,3,2,1,0"})
    assert not out["applies"] and out["env"] == {}
    assert out["why"].startswith("the inventory sets CUDA_VISIBLE_DEVICES=7,6,5,4,3,2,1,0")
    assert out["why"].endswith("the grouping would be 0,2,4,6,1,3,5,7")
    assert len(out["lines"]) == 2


@pytest.mark.parametrize("host,layout,why", [
    ({}, {"tp_size": 4, "dp_size": 2}, "no GPUs in gpu_host_facts"),
    ({"gpus": [], "gpu_count": 0}, {"dp_size": 2}, "no GPUs in gpu_host_facts"),
    (RTX, {"tp_size": 8}, "one replica over all 8 GPUs"),
    (NVL, {"tp": 8}, "one replica over all 8 GPUs"),
    (H200, {}, "one replica over all 1 GPUs"),
    (RTX, {"tp_size": 8, "dp_size": 2}, "refused by tp-exceeds-gpu-count"),
    (RTX, {"tp_size": 8, "dp_size": 8, "enable_dp_attention": True}, "one replica over all 8 GPUs"),
    (RTX, {"tp_size": 4, "dp_size": 2, "nnodes": 2}, "--nnodes 2"),
    (dict(RTX, interconnect={"matrix": {}, "numa_affinity": {}}), {"tp_size": 4, "dp_size": 2}, "no topology"),
    (RTX, {"tp_size": "four", "dp_size": 2}, "the flags cannot be read"),
])
def test_left_alone(host, layout, why):
    out = gpu_order(host, flags(**layout), {})
    assert not out["applies"] and out["env"] == {} and why in out["why"]


def test_refused_flag_names_do_not_crash_the_environment():
    out = gpu_order(RTX, {"tp-size": 4, "tp_size": 4}, {})
    assert not out["applies"] and "the same flag" in out["why"]


def test_filter_is_exported_and_checks_its_input():
    published = FilterModule().filters()
    assert published["gpu_topology_env"] is gfilter.gpu_topology_env
    assert published["gpu_topology_candidate_env"] is gfilter.gpu_topology_candidate_env
    assert gfilter.gpu_topology_env(INTERLEAVED, flags(tp_size=4, dp_size=2))["env"] == {
        "CUDA_VISIBLE_DEVICES": "0,2,4,6,1,3,5,7"}
    assert gfilter.gpu_topology_env(None, None)["env"] == {}
    with pytest.raises(AnsibleFilterError, match="expects the launch flags"):
        gfilter.gpu_topology_env(RTX, ["--tp", "4"])


def test_a_sweep_candidate_is_grouped_for_its_own_layout_not_the_canarys():
    """roles/sglang_sweep/tasks/candidate.yml: a candidate's environment is the canary's with its
    changes, so it carries the order chosen for the canary's layout; unless pinned, it is grouped anew."""
    canary = gpu_order(INTERLEAVED, flags(tp_size=2, dp_size=4), {})["env"]  # the canary's own order
    assert canary == {"CUDA_VISIBLE_DEVICES": "0,2,1,3,4,6,5,7"}  # four pairs: not a tp 4 x dp 2 order
    env = dict(canary, OMP_NUM_THREADS="16")
    out = gfilter.gpu_topology_candidate_env(INTERLEAVED, flags(tp_size=4, dp_size=2), env, False)
    assert out["env"] == {"OMP_NUM_THREADS": "16", "CUDA_VISIBLE_DEVICES": "0,2,4,6,1,3,5,7"}
    assert out["lines"][0] == "DP rank 0: GPUs 0,2,4,6: GPUs 0,2,4,6 under one PCIe switch tree (PXB)"
    # tp 8 over 8 GPUs: nothing to order, and the canary's order does not stay behind
    out = gfilter.gpu_topology_candidate_env(INTERLEAVED, flags(tp_size=8), {"CUDA_VISIBLE_DEVICES": "7,6,5,4,3,2,1,0"},
                                             False)
    assert out["env"] == {} and out["plan"] is None
    # pinned (sglang_server_env or the candidate's own changes set it): kept, the grouping only said
    out = gfilter.gpu_topology_candidate_env(INTERLEAVED, flags(tp_size=4, dp_size=2), {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"},
                                             True)
    assert out["env"] == {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"} and not out["applies"]
    assert "kept; the grouping would be 0,2,4,6,1,3,5,7" in out["why"]
    # a host without gathered GPUs (the local CPU profile): the environment as planned
    out = gfilter.gpu_topology_candidate_env({}, flags(dp_size=2), {"SGLANG_CPU_OMP_THREADS_BIND": "0|1"}, False)
    assert out["env"] == {"SGLANG_CPU_OMP_THREADS_BIND": "0|1"} and out["lines"] == []
    with pytest.raises(AnsibleFilterError, match="candidate's flags and environment"):
        gfilter.gpu_topology_candidate_env(INTERLEAVED, "tp 4", {}, False)
