"""Unit tests of the gpu_host parsers (plugins/module_utils/gpu/host_nvidia.py,
gpu/host_interconnect.py) and of empty_facts (gpu/host_gather.py) on real and documented outputs."""

import json
import os
import re

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import host_gather as gather
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import host_interconnect as interconnect
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import host_nvidia as nvidia

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

FIX = os.path.join(ROOT, "tests", "fixtures", "gpu-host")
H200 = os.path.join(FIX, "h200-1gpu-ubuntu2404")
RTX = os.path.join(FIX, "rtxpro6000-8gpu-pcie")
NVL = os.path.join(FIX, "h100-8gpu-nvlink")
TITANX = os.path.join(FIX, "titanx-4gpu-dual-socket-mlx4")
QUDA = os.path.join(FIX, "pcie-8gpu-dual-socket-interleaved")


def read(*parts):
    with open(os.path.join(*parts)) as handle:
        return handle.read()


# --- nvidia-smi --query-gpu CSV -------------------------------------------------------------

def test_query_csv_real_h200():
    rows = nvidia.parse_query_csv(read(H200, "nvidia-smi-query.csv"))
    assert len(rows) == 1
    gpu = nvidia.normalize_gpu(rows[0])
    assert gpu["index"] == 0
    assert gpu["name"] == "NVIDIA H200"
    assert gpu["sm"] == "9.0"
    assert gpu["driver_version"] == "580.159.04"
    assert gpu["memory_mib"] == 143771
    assert gpu["pcie_gen_max"] == 5
    assert gpu["pcie_gen_current"] == 5
    assert gpu["pcie_width_max"] == 16
    # that capture did not ask for the current width: absent, not invented
    assert gpu["pcie_width_current"] is None


def test_query_csv_blackwell_8gpu():
    gpus = [nvidia.normalize_gpu(r) for r in nvidia.parse_query_csv(read(RTX, "nvidia-smi-query.csv"))]
    assert [g["index"] for g in gpus] == list(range(8))
    assert {g["sm"] for g in gpus} == {"12.0"}
    assert {g["name"] for g in gpus} == {"NVIDIA RTX PRO 6000 Blackwell Server Edition"}
    assert all(g["memory_mib"] == 97887 for g in gpus)
    assert gpus[3]["bus_id"] == "00000000:5A:00.0"
    assert all(g["pcie_width_current"] == 16 for g in gpus)


def test_query_csv_na_values_and_nounits():
    text = ("index, name, compute_cap, memory.total [MiB], pcie.link.width.current\n"
            "0, NVIDIA X, 12.0, [N/A], [N/A]\n")
    gpu = nvidia.normalize_gpu(nvidia.parse_query_csv(text)[0])
    assert gpu["memory_mib"] is None
    assert gpu["pcie_width_current"] is None


def test_query_csv_rejects_error_text():
    with pytest.raises(nvidia.ParseError):
        nvidia.parse_query_csv("Field \"compute_cap\" is not a valid field to query.\n")


def test_query_csv_rejects_ragged_row():
    with pytest.raises(nvidia.ParseError):
        nvidia.parse_query_csv("index, name\n0, a, b\n")


def test_query_csv_empty():
    assert nvidia.parse_query_csv("") == []


# --- SM normalisation -----------------------------------------------------------------------

@pytest.mark.parametrize("raw,want", [
    ("12.0", "12.0"), ("120", "12.0"), ("sm_120", "12.0"), ("SM120", "12.0"),
    (12.0, "12.0"), ("9.0", "9.0"), ("90", "9.0"), ("10.0", "10.0"), ("", None), (None, None),
])
def test_normalize_sm(raw, want):
    assert nvidia.normalize_sm(raw) == want


@pytest.mark.parametrize("raw", ["blackwell", "12", "1.2.3", "sm_"])
def test_normalize_sm_rejects(raw):
    with pytest.raises(ValueError):
        nvidia.normalize_sm(raw)


# --- driver, CUDA, kernel module ------------------------------------------------------------

def test_cuda_and_driver_from_banner_real():
    text = read(H200, "nvidia-smi.txt")
    assert nvidia.parse_cuda_driver_version(text) == "13.0"
    assert nvidia.parse_banner_driver_version(text) == "580.159.04"


def test_cuda_from_dash_q_real():
    assert nvidia.parse_cuda_driver_version(read(H200, "nvidia-smi-q.txt")) == "13.0"


def test_cuda_missing():
    assert nvidia.parse_cuda_driver_version("no banner here") is None


def test_open_module_real_h200():
    first_line = read(H200, "host.txt").splitlines()[0]
    info = nvidia.parse_driver_version_file(first_line + "\n")
    assert info == {"driver_version": "580.159.04", "open_kernel_module": True}


def test_proprietary_module():
    info = nvidia.parse_driver_version_file(read(RTX, "proc-driver-nvidia-version-proprietary-570.txt"))
    assert info == {"driver_version": "570.86.15", "open_kernel_module": False}


def test_version_file_missing():
    assert nvidia.parse_driver_version_file(None)["open_kernel_module"] is None


@pytest.mark.parametrize("text,want", [
    ("filename: /x/nvidia.ko\nlicense:        Dual MIT/GPL\n", True),
    ("license:        NVIDIA\n", False),
    ("version: 1\n", None),
])
def test_modinfo_license(text, want):
    assert nvidia.parse_modinfo_license(text) is want


@pytest.mark.parametrize("version,branch", [("580.159.04", 580), ("570.86.15", 570),
                                            (None, None), ("", None)])
def test_driver_branch(version, branch):
    assert nvidia.driver_branch(version) == branch


# --- topology -------------------------------------------------------------------------------

def test_topo_real_h200_single_gpu():
    topo = interconnect.parse_topo_matrix(read(H200, "nvidia-smi-topo-m.txt"))
    assert topo["gpus"] == ["GPU0"]
    assert topo["matrix"] == {"GPU0": {}}
    assert topo["cpu_affinity"] == {"GPU0": "0-15"}
    summary = interconnect.summarize_interconnect(topo)
    assert summary["pair_count"] == 0
    assert summary["has_nvlink"] is False
    assert summary["worst_path"] is None
    assert interconnect.comm_profile(1, summary) == "single_gpu"


def test_topo_blackwell_all_pcie_with_nics():
    topo = interconnect.parse_topo_matrix(read(RTX, "nvidia-smi-topo-m.txt"))
    assert topo["gpus"] == ["GPU%d" % i for i in range(8)]
    assert topo["matrix"]["GPU0"]["GPU1"] == "PIX"
    assert topo["matrix"]["GPU0"]["GPU2"] == "NODE"
    assert topo["matrix"]["GPU3"]["GPU7"] == "SYS"
    assert "NIC0" not in topo["matrix"]["GPU0"]
    assert topo["numa_affinity"]["GPU6"] == "1"
    assert topo["cpu_affinity"]["GPU0"] == "0-47,96-143"
    summary = interconnect.summarize_interconnect(topo)
    assert summary["pair_count"] == 28
    assert summary["path_counts"] == {"PIX": 4, "NODE": 8, "SYS": 16}
    assert summary["has_nvlink"] is False
    assert summary["pcie_only"] is True
    assert summary["worst_path"] == "SYS"
    assert summary["best_path"] == "PIX"
    assert summary["cross_socket"] is True
    assert interconnect.comm_profile(8, summary) == "pcie"


def test_topo_nvlink():
    summary = interconnect.summarize_interconnect(interconnect.parse_topo_matrix(read(NVL, "nvidia-smi-topo-m.txt")))
    assert summary["has_nvlink"] is True
    assert summary["all_nvlink"] is True
    assert summary["worst_path"] == "NV"
    assert interconnect.comm_profile(8, summary) == "nvlink"


def test_topo_mixed_nvlink_pairs_is_pcie_profile():
    topo = {"matrix": {"GPU0": {"GPU1": "NV4", "GPU2": "SYS"}, "GPU1": {"GPU0": "NV4", "GPU2": "SYS"},
                       "GPU2": {"GPU0": "SYS", "GPU1": "SYS"}}}
    summary = interconnect.summarize_interconnect(topo)
    assert summary["has_nvlink"] is True and summary["all_nvlink"] is False
    assert summary["worst_path"] == "SYS"
    assert interconnect.comm_profile(3, summary) == "pcie"


def test_topo_older_layout_named_nic_columns_and_numa_affinity():
    """Public capture (README.md): mlx4_0/mlx4_1 NIC columns, CPU and NUMA Affinity, a legend,
    space separated as pasted, after the shell prompt line."""
    topo = interconnect.parse_topo_matrix(read(TITANX, "nvidia-smi-topo-m.txt"))
    assert topo["gpus"] == ["GPU0", "GPU1", "GPU2", "GPU3"]
    assert topo["matrix"] == {
        "GPU0": {"GPU1": "PHB", "GPU2": "SYS", "GPU3": "SYS"},
        "GPU1": {"GPU0": "PHB", "GPU2": "SYS", "GPU3": "SYS"},
        "GPU2": {"GPU0": "SYS", "GPU1": "SYS", "GPU3": "PHB"},
        "GPU3": {"GPU0": "SYS", "GPU1": "SYS", "GPU2": "PHB"},
    }
    assert topo["cpu_affinity"] == {"GPU0": "0-5", "GPU1": "0-5", "GPU2": "6-11", "GPU3": "6-11"}
    assert topo["numa_affinity"] == {"GPU0": "0", "GPU1": "0", "GPU2": "1", "GPU3": "1"}
    summary = interconnect.summarize_interconnect(topo)
    assert summary["path_counts"] == {"PHB": 2, "SYS": 4}
    assert summary["cross_socket"] is True and summary["best_path"] == "PHB"


def test_topo_older_layout_tab_separated_header_without_indent():
    """The same capture as nvidia-smi prints it (tabs) and as some pastes hold it (the header
    flush left, like its rows): the same result."""
    text = read(TITANX, "nvidia-smi-topo-m.txt")
    expected = interconnect.parse_topo_matrix(text)
    lines = text.splitlines()
    table = text[:text.index("Legend:")]
    tabbed = re.sub(r" {2,}", "\t", table) + text[len(table):]
    flush = "\n".join(line.lstrip() if line.lstrip().startswith("GPU0 ") else line for line in lines)
    assert flush != text and tabbed != text
    assert interconnect.parse_topo_matrix(tabbed) == expected
    assert interconnect.parse_topo_matrix(flush) == expected


def test_topo_oldest_layout_no_numa_column():
    """Public capture of an older driver (README.md): a named mlx5_0 column, CPU Affinity only."""
    topo = interconnect.parse_topo_matrix(read(QUDA, "nvidia-smi-topo-m-public.txt"))
    assert topo["cpu_affinity"]["GPU0"] == "0-13" and topo["cpu_affinity"]["GPU7"] == "14-27"
    assert topo["numa_affinity"] == {}
    assert "mlx5_0" not in topo["matrix"]["GPU4"] and topo["matrix"]["GPU4"]["GPU5"] == "PIX"


def test_topo_short_row_is_refused():
    text = read(TITANX, "nvidia-smi-topo-m.txt").replace("GPU3    SYS     SYS     PHB      X      SYS     PHB",
                                                         "GPU3    SYS     SYS     PHB")
    with pytest.raises(nvidia.ParseError, match="GPU3 has 5 cells for 6 device columns"):
        interconnect.parse_topo_matrix(text)


def test_topo_garbage():
    with pytest.raises(nvidia.ParseError):
        interconnect.parse_topo_matrix("Failed to initialize NVML: Driver/library version mismatch\n")


# --- IOMMU / ACS ----------------------------------------------------------------------------

def test_acs_enabled_on_one_bridge():
    acs = interconnect.parse_lspci_acs(read(RTX, "lspci-vvv-acs.txt"))
    assert acs == {"state": "enabled", "redirecting": ["0000:15:01.0"], "devices_with_acs": 2}


def test_acs_unknown_without_capabilities():
    assert interconnect.parse_lspci_acs("00:06.0 3D controller: NVIDIA Corporation GH100\n")["state"] == "unknown"


def test_acs_disabled():
    text = "00:01.0 PCI bridge: X\n\t\tACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir-\n"
    assert interconnect.parse_lspci_acs(text)["state"] == "disabled"


@pytest.mark.parametrize("bus,bdf", [("00000000:00:06.0", "0000:00:06.0"),
                                     ("00000000:5A:00.0", "0000:5a:00.0"),
                                     ("00000001:17:00.0", "0001:17:00.0"), ("junk", None)])
def test_sysfs_bdf(bus, bdf):
    assert interconnect.sysfs_bdf(bus) == bdf


def test_iommu_modes():
    assert interconnect.iommu_state("", [], {})["mode"] == "off"
    state = interconnect.iommu_state("BOOT_IMAGE=/vmlinuz intel_iommu=on iommu=pt quiet", ["dmar0"],
                                     {"0000:16:00.0": "identity"})
    assert state["mode"] == "passthrough"
    assert state["cmdline_flags"] == ["intel_iommu=on", "iommu=pt"]
    assert interconnect.iommu_state("", ["dmar0"], {"0000:16:00.0": "DMA-FQ"})["mode"] == "translated"
    assert interconnect.iommu_state("", ["dmar0"], {})["mode"] == "unknown"


def test_empty_facts_serialisable():
    facts = gather.empty_facts(cpu_test_host=True)
    assert facts["gpu_count"] == 0 and facts["cpu_test_host"] is True
    json.dumps(facts)


# --- the real device run (tests/device/run_gpu_host.sh on the lent H200) ---------------------

DEVICE = os.path.join(FIX, "h200-1gpu-device-run")


def test_device_run_query_matches_gathered_facts():
    """The exact query the module makes, re-parsed here, gives the gpus[] the role wrote there."""
    with open(os.path.join(DEVICE, "gpu_host.fact.json")) as handle:
        gathered = json.load(handle)
    gpus = [nvidia.normalize_gpu(r) for r in
            nvidia.parse_query_csv(read(DEVICE, "nvidia-smi-query-fields.csv"))]
    assert gpus == gathered["gpus"]
    assert gathered["sm"] == "9.0"
    assert gathered["driver_version"] == "580.159.04"
    assert gathered["open_kernel_module"] is True
    assert gathered["cuda_driver_version"] == "13.0"
    assert gathered["schema_version"] == gather.SCHEMA_VERSION
    assert set(gathered) == set(gather.empty_facts())


def test_device_run_refusal_log_names_expected_and_found():
    log = read(DEVICE, "run-expect-8xsm120.log")
    assert "gpu_host_expected_gpu_count: expected 8 GPU(s), found 1" in log
    assert "gpu_host_expected_sm: expected SM 12.0, found 9.0" in log
    assert "failed=1" in log
