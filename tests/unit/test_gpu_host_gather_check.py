"""gather() (plugins/module_utils/gpu/host_gather.py) against a faked host built from
fixtures, and evaluate() (gpu/host_verdict.py: the preflight's verdict)."""

import os

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import host_gather as gather
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import host_nvidia as nvidia
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import host_verdict as verdict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

FIX = os.path.join(ROOT, "tests", "fixtures", "gpu-host")
H200 = os.path.join(FIX, "h200-1gpu-ubuntu2404")
RTX = os.path.join(FIX, "rtxpro6000-8gpu-pcie")

BLACKWELL = {
    "gpu_name": "RTX PRO 6000 Blackwell",
    "gpu_count": 8,
    "sm": "12.0",
    "min_driver_branch": 580,
    "require_open_kernel_module": True,
}


def read(*parts):
    with open(os.path.join(*parts)) as handle:
        return handle.read()


class FakeHost:
    """A host whose commands and files come from a fixture folder."""

    def __init__(self, folder, query="nvidia-smi-query.csv", version_file=None, files=None,
                 dirs=None, links=None, lspci=None, query_rc=0):
        self.outputs = {
            "query": (query_rc, read(folder, query) if query_rc == 0 else "",
                      "" if query_rc == 0 else "NVIDIA-SMI has failed because it couldn't "
                      "communicate with the NVIDIA driver."),
            "banner": (0, read(folder, "nvidia-smi.txt"), ""),
            "topo": (0, read(folder, "nvidia-smi-topo-m.txt"), ""),
            "lspci": (0, lspci or "", ""),
        }
        self.files = dict(files or {})
        if version_file:
            self.files["/proc/driver/nvidia/version"] = version_file
        self.dirs = dirs or {}
        self.links = links or {}
        self.calls = []

    def run(self, argv):
        self.calls.append(argv)
        if argv[1:2] and argv[1].startswith("--query-gpu="):
            return self.outputs["query"]
        if argv[1:] == ["topo", "-m"]:
            return self.outputs["topo"]
        if argv[0].endswith("lspci"):
            return self.outputs["lspci"]
        if len(argv) == 1:
            return self.outputs["banner"]
        return (1, "", "unexpected command %r" % argv)

    def gather(self, **kwargs):
        return gather.gather(self.run, self.files.get, self.dirs.get, self.links.get,
                             kwargs.pop("smi", "/usr/bin/nvidia-smi"), "/proc/driver/nvidia/version",
                             **kwargs)


def h200_host():
    return FakeHost(H200, version_file=read(H200, "host.txt").splitlines()[0] + "\n")


def blackwell_host(**kw):
    kw.setdefault("version_file", read(RTX, "proc-driver-nvidia-version.txt"))
    return FakeHost(RTX, **kw)


def test_gather_h200_real_outputs():
    facts = h200_host().gather()
    assert facts["gpu_count"] == 1
    assert facts["gpus"][0]["name"] == "NVIDIA H200"
    assert facts["sm"] == "9.0"
    assert facts["driver_version"] == "580.159.04"
    assert facts["driver_branch"] == 580
    assert facts["open_kernel_module"] is True
    assert facts["cuda_driver_version"] == "13.0"
    assert facts["interconnect"]["comm_profile"] == "single_gpu"
    assert facts["iommu"]["mode"] == "off"


def test_gather_asks_documented_fields():
    host = h200_host()
    host.gather()
    query = host.calls[0][1]
    assert query == "--query-gpu=" + ",".join(nvidia.QUERY_FIELDS)
    assert host.calls[0][2] == "--format=csv"
    # one GPU: no topology call
    assert ["/usr/bin/nvidia-smi", "topo", "-m"] not in host.calls


def test_gather_blackwell_8gpu_pcie():
    group = {"/sys/bus/pci/devices/0000:%s:00.0/iommu_group" % b: "../../../kernel/iommu_groups/%d" % i
             for i, b in enumerate(["16", "38", "49", "5a", "98", "b8", "c8", "d8"])}
    files = {"/sys/kernel/iommu_groups/%d/type" % i: "DMA-FQ\n" for i in range(8)}
    files["/proc/cmdline"] = "BOOT_IMAGE=/vmlinuz-6.8 root=/dev/sda1 intel_iommu=on\n"
    host = blackwell_host(files=files, dirs={"/sys/class/iommu": ["dmar0", "dmar1"]},
                          links=group, lspci=read(RTX, "lspci-vvv-acs.txt"))
    facts = host.gather(lspci_path="/usr/bin/lspci")
    assert facts["gpu_count"] == 8
    assert facts["sm"] == "12.0"
    assert facts["interconnect"]["has_nvlink"] is False
    assert facts["interconnect"]["worst_path"] == "SYS"
    assert facts["interconnect"]["comm_profile"] == "pcie"
    assert facts["iommu"]["mode"] == "translated"
    assert facts["iommu"]["cmdline_flags"] == ["intel_iommu=on"]
    assert facts["acs"]["state"] == "enabled"
    errors, warnings = verdict.evaluate(facts, BLACKWELL)
    assert errors == []
    assert any("IOMMU translates DMA" in w for w in warnings)
    assert any("ACS redirects" in w for w in warnings)


def test_gather_cpu_test_host_runs_nothing():
    host = h200_host()
    facts = host.gather(cpu_test_host=True)
    assert host.calls == []
    assert facts["gpu_count"] == 0
    assert facts["cpu_test_host"] is True
    assert verdict.evaluate(facts, BLACKWELL, cpu_test_host=True) == ([], [])


def test_gather_no_nvidia_smi():
    facts = h200_host().gather(smi=None)
    assert facts["gpu_count"] == 0
    assert facts["nvidia_smi"]["error"] == "nvidia-smi not found on PATH"


def test_gather_driver_not_loaded():
    facts = FakeHost(H200, query_rc=9).gather()
    assert facts["gpu_count"] == 0
    assert "couldn't communicate with the NVIDIA driver" in facts["nvidia_smi"]["error"]


# --- evaluate: the preflight verdict --------------------------------------------------------

def test_h200_refused_when_inventory_expects_8_sm120():
    errors, _ = verdict.evaluate(h200_host().gather(), BLACKWELL)
    text = "\n".join(errors)
    assert "gpu_host_expected_gpu_count: expected 8 GPU(s), found 1" in text
    assert "gpu_host_expected_gpu_name: expected a GPU matching 'RTX PRO 6000 Blackwell', found 'NVIDIA H200'" in text
    assert "gpu_host_expected_sm: expected SM 12.0, found 9.0" in text
    assert len(errors) == 3


def test_h200_accepted_with_its_own_expectations():
    expected = {"gpu_name": "H200", "gpu_count": 1, "sm": "9.0", "min_driver_branch": 580,
                "require_open_kernel_module": True}
    assert verdict.evaluate(h200_host().gather(), expected) == ([], [])


def test_no_gpu_fails_with_clear_message():
    facts = h200_host().gather(smi=None)
    errors, _ = verdict.evaluate(facts, BLACKWELL)
    assert len(errors) == 1
    assert "no NVIDIA GPU found on this host (nvidia-smi not found on PATH)" in errors[0]
    assert "gpu_host_cpu_test_host: true" in errors[0]
    assert "8 GPU(s)" in errors[0]


def test_old_proprietary_driver_refused():
    facts = blackwell_host(
        version_file=read(RTX, "proc-driver-nvidia-version-proprietary-570.txt")).gather()
    facts["driver_version"], facts["driver_branch"] = "570.86.15", 570
    errors, _ = verdict.evaluate(facts, BLACKWELL)
    text = "\n".join(errors)
    assert "gpu_host_min_driver_branch: expected driver branch >= 580, found 570.86.15 (branch 570" in text
    assert "gpu_host_require_open_kernel_module: expected the open NVIDIA kernel module, found the proprietary one" in text


def test_open_module_not_required():
    facts = blackwell_host(
        version_file=read(RTX, "proc-driver-nvidia-version-proprietary-570.txt")).gather()
    expected = dict(BLACKWELL, require_open_kernel_module=False)
    assert verdict.evaluate(facts, expected)[0] == []


def test_degraded_pcie_links_warn_not_fail():
    facts = blackwell_host(query="nvidia-smi-query-degraded.csv").gather()
    errors, warnings = verdict.evaluate(facts, BLACKWELL)
    assert errors == []
    assert "GPU 5 PCIe link runs at x8, below its maximum x16" in " ".join(warnings)
    assert "GPU 2 PCIe link runs at Gen1, below its maximum Gen5" in " ".join(warnings)
    assert len(warnings) == 2


def test_blackwell_clean_host_passes_without_warnings():
    assert verdict.evaluate(blackwell_host().gather(), BLACKWELL) == ([], [])


def test_name_regex_and_substring():
    facts = blackwell_host().gather()
    assert verdict.evaluate(facts, dict(BLACKWELL, gpu_name=r"rtx pro 6000 .*server"))[0] == []
    assert verdict.evaluate(facts, dict(BLACKWELL, gpu_name="B200"))[0] != []


@pytest.mark.parametrize("key,value,needle", [
    ("gpu_name", "RTX (PRO", "gpu_host_expected_gpu_name: 'RTX (PRO' is not a valid regular expression"),
    ("sm", "blackwell", "gpu_host_expected_sm: 'blackwell' is not a compute capability"),
    ("gpu_count", -1, "gpu_host_expected_gpu_count: -1 must be an integer >= 0"),
    ("min_driver_branch", -5, "gpu_host_min_driver_branch: -5 must be an integer"),
])
def test_bad_expectations_name_the_variable(key, value, needle):
    errors, _ = verdict.evaluate(blackwell_host().gather(), dict(BLACKWELL, **{key: value}))
    assert len(errors) == 1 and needle in errors[0]


def test_mixed_sm_fails_expected_sm():
    facts = blackwell_host().gather()
    facts["gpus"][7]["sm"] = "10.0"
    facts["sms"] = ["10.0", "12.0"]
    errors, _ = verdict.evaluate(facts, BLACKWELL)
    assert errors == ["gpu_host_expected_sm: expected SM 12.0, found 10.0, 12.0. Fix: this host's "
                      "GPUs are not the model the inventory declares; move it to the group for "
                      "its GPUs (launch flags and kernels depend on the SM)."]
