"""GPU grouping for data-parallel replicas (plugins/module_utils/gpu/topology_groups.py and the
filter plugins/module_utils/gpu/topology_env.py), on the gpu_host fixtures parsed by the gpu_host
parsers (tests/fixtures/gpu-host/)."""

import os

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sglang.deploy.plugins.filter.filters import FilterModule
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import host_interconnect as interconnect
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import host_nvidia as nvidia
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import topology_groups as groups

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures", "gpu-host")


def facts(folder, topo_file="nvidia-smi-topo-m.txt"):
    """gpu_host_facts as gpu_host_gather.gather builds them, from a fixture folder."""
    path = os.path.join(FIX, folder)
    query = os.path.join(path, "nvidia-smi-query.csv")
    with open(os.path.join(path, topo_file)) as handle:
        topo = interconnect.parse_topo_matrix(handle.read())
    if os.path.exists(query):
        with open(query) as handle:
            gpus = [nvidia.normalize_gpu(row) for row in nvidia.parse_query_csv(handle.read())]
    else:
        gpus = [{"index": int(name[3:])} for name in topo["gpus"]]
    if len(gpus) == 1:  # gather() runs topo -m only for more than one GPU
        topo = {"matrix": {}, "numa_affinity": {}}
    return {"gpus": gpus, "gpu_count": len(gpus),
            "interconnect": {"matrix": topo["matrix"], "numa_affinity": topo.get("numa_affinity", {})}}


RTX = facts("rtxpro6000-8gpu-pcie")
NVL = facts("h100-8gpu-nvlink")
H200 = facts("h200-1gpu-ubuntu2404")
INTERLEAVED = facts("pcie-8gpu-dual-socket-interleaved")
PUBLIC = facts("pcie-8gpu-dual-socket-interleaved", "nvidia-smi-topo-m-public.txt")
# fixture index of each GPU of the public capture (README.md of the fixture folder)
RELABEL = {0: 0, 1: 2, 2: 4, 3: 6, 4: 1, 5: 3, 6: 5, 7: 7}


def test_rtx_tp4_dp2_one_group_per_socket():
    plan = groups.plan_groups_from_facts(RTX, tp=4, dp=2)
    assert plan["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert plan["cuda_visible_devices"] == "0,1,2,3,4,5,6,7"
    assert [r["numa_node"] for r in plan["replicas"]] == [0, 1]
    assert plan["numa_node_arg"] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [r["worst_link"] for r in plan["replicas"]] == ["NODE", "NODE"]
    assert [r["reason"] for r in plan["replicas"]] == [
        "GPUs 0-3 under NUMA node 0 (NODE)", "GPUs 4-7 under NUMA node 1 (NODE)"]
    assert not plan["crosses_sockets"] and plan["cross_socket"] is None and plan["unused"] == []


def test_rtx_tp2_dp4_pix_pairs():
    plan = groups.plan_groups_from_facts(RTX, tp=2, dp=4)
    assert plan["groups"] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert [r["worst_link"] for r in plan["replicas"]] == ["PIX"] * 4
    assert plan["replicas"][2]["reason"] == "GPUs 4,5 under one PCIe switch on NUMA node 1 (PIX)"


def test_rtx_tp8_crosses_the_sockets():
    plan = groups.plan_groups_from_facts(RTX, tp=8)
    assert plan["groups"] == [list(range(8))]
    assert plan["crosses_sockets"]
    assert plan["replicas"][0]["worst_link"] == "SYS"
    assert plan["replicas"][0]["numa_node"] is None
    assert plan["cross_socket"] == ("8 GPUs over 2 sockets cannot form a TP8 group within one socket: "
                                    "every all-reduce crosses the sockets (SYS)")


def test_rtx_fewer_gpus_than_the_host_stay_on_one_switch():
    plan = groups.plan_groups_from_facts(RTX, tp=2, dp=2)
    assert plan["groups"] == [[0, 1], [2, 3]] and plan["unused"] == [4, 5, 6, 7]
    plan = groups.plan_groups_from_facts(RTX, tp=3, dp=2)
    assert plan["groups"] == [[0, 1, 2], [4, 5, 6]]
    assert not plan["crosses_sockets"]


def test_rtx_pipeline_keeps_tp_pairs_on_a_switch():
    plan = groups.plan_groups_from_facts(RTX, tp=2, pp=2, dp=2)
    assert plan["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_rtx_more_groups_than_a_socket_holds_names_the_crossing_rank():
    plan = groups.plan_groups_from_facts(RTX, tp=3, dp=2, pp=1)
    assert plan["cross_socket"] is None
    # 5 GPUs of 4 per socket: one group has to cross
    plan = groups.plan_groups(range(8), {g: g // 4 for g in range(8)},
                              {(a, b): ("NODE" if a // 4 == b // 4 else "SYS")
                               for a in range(8) for b in range(a + 1, 8)}, tp=5)
    assert plan["cross_socket"].startswith("5 GPUs over 2 sockets cannot form a TP5 group")


def test_nvlink_groups_follow_numa_and_never_cross():
    plan = groups.plan_groups_from_facts(NVL, tp=4, dp=2)
    assert plan["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert [r["worst_link"] for r in plan["replicas"]] == ["NV18", "NV18"]
    plan = groups.plan_groups_from_facts(NVL, tp=8)
    assert not plan["crosses_sockets"] and plan["cross_socket"] is None
    assert plan["replicas"][0]["reason"] == "GPUs 0-7 joined by NVLink, on NUMA nodes 0 and 1 (NV18)"


def test_one_gpu_host_refuses_dp2():
    with pytest.raises(groups.GroupingError) as err:
        groups.plan_groups_from_facts(H200, tp=1, dp=2)
    assert str(err.value).startswith("--dp-size 2 x --tp-size 1 x --pp-size 1 needs 2 GPUs; "
                                     "this host has 1 (GPU 0)")
    plan = groups.plan_groups_from_facts(H200, tp=1)
    assert plan["cuda_visible_devices"] == "0" and plan["replicas"][0]["worst_link"] is None


def test_interleaved_sockets_reorder_cuda_visible_devices():
    plan = groups.plan_groups_from_facts(INTERLEAVED, tp=4, dp=2)
    assert plan["groups"] == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert plan["cuda_visible_devices"] == "0,2,4,6,1,3,5,7"
    assert [r["worst_link"] for r in plan["replicas"]] == ["PXB", "PXB"]
    # that capture has no NUMA Affinity column: no --numa-node list, sockets from the SYS paths
    assert plan["numa_node_arg"] is None
    plan = groups.plan_groups_from_facts(INTERLEAVED, tp=2, dp=4)
    assert plan["cuda_visible_devices"] == "0,2,1,3,4,6,5,7"
    assert [r["worst_link"] for r in plan["replicas"]] == ["PIX"] * 4
    plan = groups.plan_groups_from_facts(INTERLEAVED, tp=8)
    assert plan["cross_socket"].startswith("8 GPUs over 2 sockets cannot form a TP8 group")


@pytest.mark.parametrize("tp,dp", [(2, 4), (4, 2), (1, 8), (2, 2), (3, 2), (2, 3)])
def test_interleaved_is_the_public_capture_relabelled(tp, dp):
    public = groups.plan_groups_from_facts(PUBLIC, tp=tp, dp=dp)
    relabelled = groups.plan_groups_from_facts(INTERLEAVED, tp=tp, dp=dp)
    assert sorted(r["worst_link"] or "" for r in public["replicas"]) == \
        sorted(r["worst_link"] or "" for r in relabelled["replicas"])
    if tp * dp == 8:  # every GPU used: the same physical groups
        assert sorted(sorted(RELABEL[g] for g in group) for group in public["groups"]) == \
            sorted(sorted(group) for group in relabelled["groups"])
    # (with GPUs left over, equally good choices go to the lowest indices, which relabelling moves)


def test_deterministic_whatever_the_dict_order():
    gpus = list(range(8))
    links = {(a, b): interconnect_cell(a, b) for a in gpus for b in gpus if a < b}
    numa = {g: g // 4 for g in gpus}
    first = groups.plan_groups(gpus, numa, links, tp=2, dp=4)
    shuffled = dict(reversed(list(links.items())))
    again = groups.plan_groups(list(reversed(gpus)), dict(reversed(list(numa.items()))), shuffled, tp=2, dp=4)
    assert first == again
    # all pairs equal: lowest indices win
    flat = groups.plan_groups(gpus, {}, dict((k, "NODE") for k in links), tp=2, dp=2)
    assert flat["groups"] == [[0, 1], [2, 3]]


def interconnect_cell(a, b):
    if a // 4 != b // 4:
        return "SYS"
    return "PIX" if a // 2 == b // 2 else "NODE"


def test_numa_mismatch_counts_as_sys_even_if_the_matrix_says_otherwise():
    # the 8x RTX 4090 host of NVIDIA/go-gpuallocator issue #17 prints SYS for every pair
    gpus = list(range(8))
    plan = groups.plan_groups(gpus, {g: g // 4 for g in gpus},
                              {(a, b): "SYS" for a in gpus for b in gpus if a < b}, tp=4, dp=2)
    assert plan["groups"] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    plan = groups.plan_groups([0, 1, 2, 3], {0: 0, 1: 1, 2: 0, 3: 1},
                              {(a, b): "NODE" for a in range(4) for b in range(4) if a < b}, tp=2, dp=2)
    assert plan["groups"] == [[0, 2], [1, 3]] and not plan["crosses_sockets"]


def test_bad_sizes_and_missing_matrix():
    with pytest.raises(groups.GroupingError):
        groups.plan_groups_from_facts(RTX, tp=0)
    with pytest.raises(groups.GroupingError):
        groups.plan_groups_from_facts(RTX, tp="four")
    no_matrix = dict(RTX, interconnect={"matrix": {}, "numa_affinity": {}})
    with pytest.raises(groups.GroupingError) as err:
        groups.plan_groups_from_facts(no_matrix, tp=2)
    assert "no path for GPU pair(s) 0-1" in str(err.value)


def test_filter_wraps_the_module():
    flt = groups.gpu_topology_groups
    # no role calls it (tests/unit/test_collection_layout.py refuses an unused filter): the roles
    # reach the grouping through gpu_topology_env (test_gpu_topology_env.py)
    assert "gpu_topology_groups" not in FilterModule().filters()
    assert flt(RTX, tp=4, dp=2)["cuda_visible_devices"] == "0,1,2,3,4,5,6,7"
    with pytest.raises(AnsibleFilterError, match="needs 2 GPUs"):
        flt(H200, tp=1, dp=2)
    with pytest.raises(AnsibleFilterError, match="gpu_host_facts"):
        flt(None, tp=1)
