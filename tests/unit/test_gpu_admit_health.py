"""The torch-free parts of the admission's measurement (roles/gpu_admit/files): PCIe link
figures, the ECC / retired pages / remapped rows parser, the Xid reader, DCGM present or not, and
the GEMM reference comparison, which must fail on a wrong reference. Inputs: the lent H200's
outputs (tests/fixtures/gpu-admit/) and lines written in NVIDIA's documented formats."""

import json
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures", "gpu-admit", "h200-1gpu")

from ansible_collections.sglang.deploy.roles.gpu_admit.files import gpu_admit_device as device  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.sglang.deploy.roles.gpu_admit.files import gpu_admit_health as health  # noqa: E402  pylint: disable=wrong-import-position


def fixture_text(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as handle:
        return handle.read()


def fixture_json(name):
    return json.loads(fixture_text(name))


@pytest.mark.parametrize("gen,width,gbps", [(5, 16, 63.0), (4, 16, 31.5), (5, 8, 31.5), (3, 16, 15.8),
                                            (1, 16, 4.0), (6, 16, 121.0), (None, 16, None), (5, 0, None)])
def test_link_gbps_per_generation_and_width(gen, width, gbps):
    assert health.link_gbps(gen, width) == gbps


def test_parse_links_reads_current_and_maximum():
    links = health.parse_links("0, 00000000:00:06.0, 5, 5, 16, 16\n1, 00000000:41:00.0, 1, 5, 8, 16\nbad line\n")
    assert links[0]["theoretical_gbps"] == 63.0 and links[0]["max_theoretical_gbps"] == 63.0
    assert links[1] == {"bus_id": "00000000:41:00.0", "gen_current": 1, "gen_max": 5, "width_current": 8,
                        "width_max": 16, "theoretical_gbps": 2.0, "max_theoretical_gbps": 63.0}


def test_parse_ecc_on_the_h200_output():
    (gpu,) = health.parse_ecc(fixture_text("nvidia-smi-q-ecc.txt"))
    assert gpu["bus_id"] == "00000000:00:06.0" and gpu["ecc_mode"] == "Enabled"
    assert gpu["uncorrectable_volatile"] == 0 and gpu["retired_pages"] == 0
    assert not gpu["pending_retirement"] and not gpu["remap_pending"] and not gpu["remap_failure"]


def test_parse_ecc_counts_errors_pending_pages_and_remap_failure():
    text = fixture_text("nvidia-smi-q-ecc.txt")
    text = text.replace("            DRAM Uncorrectable                         : 0",
                        "            DRAM Uncorrectable                         : 2", 1)
    text = text.replace("            SRAM L2                                    : 0",
                        "            SRAM L2                                    : 7")  # a source, not a count
    text = text.replace("Remapping Failure Occurred                     : No", "Remapping Failure Occurred                     : Yes")
    text = text.replace("        Pending                                        : No",
                        "        Pending                                        : Yes")
    (gpu,) = health.parse_ecc(text)
    assert gpu["uncorrectable_volatile"] == 2 and gpu["uncorrectable_aggregate"] == 0
    assert gpu["remap_failure"] and gpu["remap_pending"]


def test_parse_ecc_retired_pages_of_an_older_gpu():
    text = ("GPU 00000000:3B:00.0\n    Retired Pages\n        Single Bit ECC              : 2\n"
            "        Double Bit ECC              : 1\n        Pending Page Blacklist      : Yes\n")
    (gpu,) = health.parse_ecc(text)
    assert gpu["retired_pages"] == 3 and gpu["pending_retirement"]


XID_LOG = """[Mon Dec  1 10:00:00 2026] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.159.04
[Mon Dec  1 10:05:00 2026] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.
[Mon Dec  1 10:06:00 2026] NVRM: Xid (PCI:0000:41:00): 13, pid=123, name=python3, Graphics Exception
"""


def test_parse_xid_lines():
    lines = health.parse_xid(XID_LOG)
    assert [(x["pci"], x["xid"]) for x in lines] == [("PCI:0000:01:00", 79), ("PCI:0000:41:00", 13)]


def test_read_xid_falls_back_to_dmesg_and_says_when_nothing_is_readable(monkeypatch):
    monkeypatch.setattr(health.shutil, "which", lambda name: "/usr/bin/" + name)
    calls = []

    def run(argv):
        calls.append(argv[0])
        return (1, "", "No journal files were found.") if argv[0] == "journalctl" else (0, XID_LOG, "")
    out = health.read_xid(run)
    assert calls == ["journalctl", "dmesg"] and out["readable"] and out["source"] == "dmesg --ctime"
    assert out["count"] == 2 and out["codes"] == {"79": 1, "13": 1}
    monkeypatch.setattr(health.shutil, "which", lambda name: None)
    out = health.read_xid(run)
    assert not out["readable"] and "journalctl: not installed" in out["why"] and "dmesg: not installed" in out["why"]


def test_read_xid_on_the_h200_run_read_dmesg():
    xid = fixture_json("measure-run1.json")["xid"]
    assert xid == {"codes": {}, "count": 0, "lines": [], "readable": True, "source": "dmesg --ctime"}


def test_dcgm_absent_or_failing(monkeypatch):
    monkeypatch.setattr(health.shutil, "which", lambda name: None)
    assert health.read_dcgm(lambda argv: (0, "", "")) == {
        "available": False, "why": "dcgmi not found on PATH (DCGM is not installed)"}
    monkeypatch.setattr(health.shutil, "which", lambda name: "/usr/bin/dcgmi")
    out = health.read_dcgm(lambda argv: (0, "| Deployment | Pass |\n| Memory     | Fail - GPU 3 |\n", ""))
    assert out["available"] and not out["passed"] and out["failed_tests"] == ["| Memory     | Fail - GPU 3 |"]
    assert health.read_dcgm(lambda argv: (0, "| Deployment | Pass |\n", ""))["passed"]


def test_check_products_fails_on_a_wrong_reference():
    got, ref, scale = [1.0, -2.0, 3.0], [1.001, -2.0, 2.999], [10.0, 10.0, 10.0]
    assert device.check_products(got, ref, scale, 1e-2)[0]
    ok, worst, where = device.check_products(got, [r + 0.5 for r in ref], scale, 1e-2)
    assert not ok and worst == pytest.approx(0.0501) and where == 0
    assert not device.check_products([float("nan")], [1.0], [1.0], 1e-2)[0]


def test_the_device_runs_gemm_check_and_its_wrong_reference():
    for name in ("measure-run1.json", "measure-run2.json", "measure-run3.json"):
        gemm = fixture_json(name)["gpus"][0]["gemm"]
        assert gemm["ok"] and gemm["repeat_mismatches"] == 0 and gemm["max_normalised_error"] < 1e-3
    gemm = fixture_json("measure-gemm-fault.json")["gpus"][0]["gemm"]
    assert not gemm["ok"] and gemm["reference_fault"] == 0.05 and gemm["max_normalised_error"] > gemm["tolerance"]


def test_stats_keeps_runs_or_their_number():
    assert device.stats([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "runs": [3.0, 1.0, 2.0]}
    assert device.stats([1.0, 2.0], keep_runs=False)["n"] == 2
    assert device.stats([])["median"] is None
