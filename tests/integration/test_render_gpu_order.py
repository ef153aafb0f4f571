"""The grouped GPU order reaches the environment file: the production inventory with a data-parallel
layout (tp-size 4 x dp-size 2) on a host whose gpu_host facts come from the interleaved-sockets capture
(tests/fixtures/gpu-host/pcie-8gpu-dual-socket-interleaved/) renders CUDA_VISIBLE_DEVICES in the grouped
order, and the offline check says which GPUs each replica got (plugins/module_utils/gpu/topology_env.py).
The inventories as they are render without it (test_unit_render.py's fixtures)."""

import yaml
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import host_interconnect as interconnect
from test_unit_render import CASES, ROOT, run_render  # pylint: disable=wrong-import-order

TOPO = ROOT / "tests" / "fixtures" / "gpu-host" / "pcie-8gpu-dual-socket-interleaved" / "nvidia-smi-topo-m.txt"


def _facts():
    topo = interconnect.parse_topo_matrix(TOPO.read_text(encoding="utf-8"))
    gpus = [{"index": int(name[3:]), "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "sm": "12.0",
             "memory_mib": 97887} for name in topo["gpus"]]
    return {"gpus": gpus, "gpu_count": len(gpus), "sm": "12.0",
            "interconnect": {"matrix": topo["matrix"], "numa_affinity": topo["numa_affinity"]}}


def test_dp_layout_renders_the_grouped_order(tmp_path):
    with open(ROOT / "inventories" / "production" / "group_vars" / "blackwell" / "sglang.yml", encoding="utf-8") as fh:
        args = yaml.safe_load(fh)["sglang_server_args"]
    args = dict(args, **{"tp-size": 4, "dp-size": 2})
    inventory, extra = CASES["production"]
    proc = run_render(tmp_path, inventory, dict(extra, sglang_server_args=args, gpu_host_facts=_facts()))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    env_file = (tmp_path / "sglang.env.j2").read_text()
    assert 'CUDA_VISIBLE_DEVICES="0,2,4,6,1,3,5,7"' in env_file
    assert "DP rank 0: GPUs 0,2,4,6: GPUs 0,2,4,6 under one PCIe switch tree (PXB)" in proc.stdout
    assert "DP rank 1: GPUs 1,3,5,7" in proc.stdout
