"""gpu_host's IOMMU and ACS verdicts on the two configurations of the December reports, through the
real gather path (FakeHost of test_gpu_host_gather_check.py) and the fixture
tests/fixtures/gpu-host/amd-acs-iommu-2gpu/ (written from the reports: README.md there):

* NVIDIA/nccl issue 2079: ACS redirect (ReqRedir+ CmpltRedir+) on AMD Starship/Matisse GPP root
  ports hung NCCL's all-reduce; fixed by clearing ACS with setpci or booting with pci=noacs;
* vLLM issue 33041 / NCCL issue 1999 (RTX PRO 6000 pairs): the AMD IOMMU translating the GPUs'
  DMA plus ACS ReqRedir; fixed by the IOMMU off or in passthrough.

Both are found and named with their fix; each fix as the reports applied it clears its warning."""

import os

from ansible_collections.sglang.deploy.plugins.module_utils.gpu import host_verdict as verdict
from test_gpu_host_gather_check import FIX, FakeHost, read

AMD = os.path.join(FIX, "amd-acs-iommu-2gpu")
EXPECT = {"gpu_name": "RTX PRO 6000 Blackwell", "gpu_count": 2, "sm": "12.0", "min_driver_branch": 580,
          "require_open_kernel_module": False}
GROUPS = {"/sys/bus/pci/devices/0000:%s:00.0/iommu_group" % b: "../../../kernel/iommu_groups/%d" % i
          for i, b in enumerate(["41", "61"])}


def gathered(cmdline, group_type, lspci="lspci-vvv-acs.txt", units=("ivhd0",)):
    files = {"/sys/kernel/iommu_groups/%d/type" % i: group_type + "\n" for i in range(2)} if group_type else {}
    files["/proc/cmdline"] = cmdline + "\n"
    host = FakeHost(AMD, files=files, dirs={"/sys/class/iommu": list(units)}, links=GROUPS if group_type else {},
                    lspci=read(AMD, lspci))
    return host.gather(lspci_path="/usr/bin/lspci")


def test_the_reports_configuration_gives_both_warnings_naming_reports_and_fixes():
    # an AMD host with its IOMMU on by default (no boot flag) and ACS on the root ports
    facts = gathered("BOOT_IMAGE=/vmlinuz-6.14 root=/dev/nvme0n1p2 ro", "DMA-FQ")
    assert facts["interconnect"]["pcie_only"] and facts["interconnect"]["worst_path"] == "NODE"
    assert facts["iommu"]["mode"] == "translated"
    assert facts["acs"]["state"] == "enabled" and len(facts["acs"]["redirecting"]) == 10
    assert "0000:00:03.1" in facts["acs"]["redirecting"]
    errors, warnings = verdict.evaluate(facts, EXPECT)
    assert errors == []
    iommu = [w for w in warnings if w.startswith("IOMMU translates DMA")]
    acs = [w for w in warnings if w.startswith("PCIe ACS redirects peer requests on 10 bridge(s)")]
    assert len(iommu) == 1 and len(acs) == 1, warnings
    for part in ("vLLM issue 33041", "NCCL issue 1999", "iommu=pt", "amd_iommu=off", "NCCL_P2P_DISABLE=1"):
        assert part in iommu[0]
    for part in ("NCCL issue 2079", "pci=noacs", "ECAP_ACS+6.w=0000"):
        assert part in acs[0]


def test_acs_cleared_with_setpci_leaves_the_iommu_warning_alone():
    facts = gathered("BOOT_IMAGE=/vmlinuz-6.14 root=/dev/nvme0n1p2 ro", "DMA")
    facts_cleared = gathered("BOOT_IMAGE=/vmlinuz-6.14 root=/dev/nvme0n1p2 ro", "DMA",
                             lspci="lspci-vvv-acs-cleared.txt")
    assert facts["acs"]["state"] == "enabled" and facts_cleared["acs"]["state"] == "disabled"
    _, warnings = verdict.evaluate(facts_cleared, EXPECT)
    assert [w[:22] for w in warnings] == ["IOMMU translates DMA f"]


def test_pci_noacs_and_passthrough_clear_both():
    facts = gathered("BOOT_IMAGE=/vmlinuz-6.14 root=/dev/nvme0n1p2 ro iommu=pt pci=noacs", "identity",
                     lspci="lspci-vvv-acs-cleared.txt")
    assert facts["iommu"]["mode"] == "passthrough"
    assert facts["iommu"]["cmdline_flags"] == ["iommu=pt", "pci=noacs"]
    assert verdict.evaluate(facts, EXPECT) == ([], [])


def test_the_iommu_off_clears_its_warning():
    facts = gathered("BOOT_IMAGE=/vmlinuz-6.14 root=/dev/nvme0n1p2 ro amd_iommu=off", "", units=())
    assert facts["iommu"]["mode"] == "off" and facts["iommu"]["cmdline_flags"] == ["amd_iommu=off"]
    _, warnings = verdict.evaluate(facts, EXPECT)
    assert len(warnings) == 1 and warnings[0].startswith("PCIe ACS redirects")
