"""The admission verdict (plugins/module_utils/gpu/admit_verdict.py), its key, summary
and textfile (gpu/admit_summary.py) and the module gpu_admit_record: on the lent H200's real
measurements (tests/fixtures/gpu-admit/), on the production profile
(inventories/production/group_vars/blackwell/admission.yml), and on an 8-GPU host derived from
them for what one GPU cannot show (peer copies, all-reduce, ACS)."""

import copy
import json
import os
import subprocess

from ansible_collections.sglang.deploy.plugins.modules import gpu_admit_record
import pytest
import yaml
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import admit_summary as summary
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import admit_verdict as verdict
from ansible_collections.sglang.deploy.plugins.module_utils.verify import render
from sglang_monitoring_support import promtool

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures", "gpu-admit", "h200-1gpu")
HOST_FACTS = os.path.join(ROOT, "tests", "fixtures", "gpu-host", "h200-1gpu-device-run", "gpu_host.fact.json")
PROFILE = os.path.join(ROOT, "inventories", "production", "group_vars", "blackwell", "admission.yml")
DEFAULT_XIDS = yaml.safe_load(open(os.path.join(ROOT, "roles", "gpu_admit", "defaults", "main.yml"),
                                   encoding="utf-8"))["gpu_admit_refuse_xids"]


def load(name):
    with open(os.path.join(FIX, name), encoding="utf-8") as handle:
        return json.load(handle)


def host_facts():
    with open(HOST_FACTS, encoding="utf-8") as handle:
        return json.load(handle)


def profile():
    with open(PROFILE, encoding="utf-8") as handle:
        return yaml.safe_load(handle)["gpu_admit_expect"]


def eight_gpus(p2p=48.0, small_us=25.0, busbw=24.0, peer_access=True):
    """The H200 run with 8 copies of its GPU and cross-GPU figures as an 8-GPU host reports them."""
    one = load("measure-run1.json")
    out = copy.deepcopy(one)
    out["world_size"] = 8
    out["gpus"] = [dict(copy.deepcopy(one["gpus"][0]), index=i) for i in range(8)]
    sizes = [{"bytes": b, "latency_us": {"median": small_us if b == 32768 else 100.0},
              "busbw_gbps": {"median": busbw if b == 268435456 else 1.0}} for b in (4096, 32768, 268435456)]
    out["all_reduce"] = {"measured": True, "correct": True, "world_size": 8, "nccl": {"sizes": sizes},
                         "symm_mem": {"available": False, "why": "x"},
                         "sglang_custom_all_reduce": {"available": True, "sizes": [
                             {"bytes": 32768, "latency_us": {"median": small_us / 2}, "busbw_gbps": {"median": 1}}]}}
    out["peer"] = {"measured": True, "world_size": 8, "min_gbps": p2p, "median_gbps": p2p,
                   "all_peer_access": peer_access, "pairs": []}
    return out


def judge(measured, expect=None, facts=None, **kw):
    return verdict.judge(measured, expect or {}, facts if facts is not None else host_facts(),
                         refuse_xids=DEFAULT_XIDS, **kw)


@pytest.mark.parametrize("name", ["measure-run1.json", "measure-run2.json", "measure-run3.json"])
def test_the_h200_runs_are_admitted_without_and_with_the_production_profile(name):
    measured = load(name)
    for expect in ({}, profile()):
        out = judge(measured, expect)
        assert out["admitted"], out["lines"]
        assert any(n.startswith("world size 1 is not a measurement of the bus") for n in out["notes"])
        assert any("DCGM diagnostics: not available" in n for n in out["notes"])
    # the cross-GPU expectations of the profile could not be judged on one GPU: said, not refused
    out = judge(measured, profile())
    assert out["not_measured"] == [] and "p2p_gbps" in profile()


def test_an_expectation_the_h200_cannot_meet_is_refused_naming_the_figure():
    out = judge(load("measure-run2.json"), {"h2d_gbps": {"expect": 200, "tolerance": 0.1}})
    assert not out["admitted"]
    (ref,) = out["refusals"]
    assert ref["figure"] == "h2d_gbps" and ref["gpu"] == 0 and ref["limit"] == 180.0 and ref["expected"] == 200
    assert ref["line"].startswith("GPU 0 host-to-device copy, pinned 55.34 GB/s, expected 200 (refused under 180.0)")
    assert "likely cause" in ref["line"]


def test_a_link_trained_narrow_is_refused_against_the_link_and_named_as_the_cause():
    measured = load("measure-run1.json")
    gpu = measured["gpus"][0]
    gpu["pcie"].update(width_current=8, theoretical_gbps=31.5)
    gpu["host_copies"]["h2d_gbps"]["median"] = 27.0
    out = judge(measured)  # no profile: the link check alone
    (ref,) = out["refusals"]
    assert ref["figure"] == "h2d_gbps" and ref["limit"] == 37.8
    assert "link width/gen: the link runs at Gen5 x8 under load, below its Gen5 x16" in ref["line"]
    out = judge(measured, link_min_ratio=0)
    assert out["admitted"]


def test_iommu_translation_is_named_when_the_link_is_fine():
    measured = load("measure-run1.json")
    measured["gpus"][0]["host_copies"]["d2h_gbps"]["median"] = 20.0
    facts = dict(host_facts(), iommu={"mode": "translated"})
    (ref,) = judge(measured, facts=facts)["refusals"]
    assert ref["figure"] == "d2h_gbps" and "IOMMU: it translates GPU DMA" in ref["line"]


def test_acs_redirection_is_found_by_its_effect_on_peer_copies():
    expect = profile()
    assert judge(eight_gpus(), expect)["admitted"]
    out = judge(eight_gpus(p2p=9.0), expect)
    (ref,) = out["refusals"]
    assert ref["figure"] == "p2p_gbps" and ref["limit"] == 22.5
    assert "ACS or IOMMU by its effect" in ref["line"]
    facts = dict(host_facts(), acs={"state": "redirect", "redirecting": ["0000:40:01.1"]})
    assert "ACS: bridges 0000:40:01.1 redirect peer requests" in judge(eight_gpus(p2p=9.0), expect, facts)["lines"][0]
    assert "no peer access" in judge(eight_gpus(p2p=9.0, peer_access=False), expect)["lines"][0]


def test_latency_is_refused_above_its_limit_and_bandwidth_below():
    expect = profile()
    out = judge(eight_gpus(small_us=75.0, busbw=12.0), expect)
    assert sorted(r["figure"] for r in out["refusals"]) == ["allreduce_busbw_gbps", "allreduce_small_us"]
    small = next(r for r in out["refusals"] if r["figure"] == "allreduce_small_us")
    assert small["limit"] == 60.0 and "(refused over 60.0)" in small["line"]


def test_cross_gpu_failures_refuse():
    broken = eight_gpus()
    broken["all_reduce"] = {"measured": False, "world_size": 8, "error": "rank 3: DistBackendError: NCCL timeout"}
    assert "the all-reduce failed: rank 3" in judge(broken)["lines"][0]
    wrong = eight_gpus()
    wrong["all_reduce"]["correct"] = False
    assert "wrong sum" in judge(wrong)["lines"][0]
    missing = eight_gpus()
    del missing["peer"]
    out = judge(missing, profile())
    assert out["admitted"] is True and out["not_measured"] == [
        "peer-to-peer copy, slowest GPU pair: expected 45 GB/s, not measured"]


def test_the_wrong_gemm_reference_run_is_refused():
    out = judge(load("measure-gemm-fault.json"))
    (ref,) = out["refusals"]
    assert ref["figure"] == "gemm" and "disagrees with its reference" in ref["line"]


def test_health_refusals_ecc_xid_dcgm_and_failed_steps():
    measured = load("measure-run1.json")
    measured["ecc"]["gpus"][0]["pending_retirement"] = True
    measured["xid"]["lines"] = [{"pci": "PCI:0000:01:00", "xid": 13, "line": "NVRM: Xid (PCI:0000:01:00): 13, app"}]
    out = judge(measured)
    assert [r["figure"] for r in out["refusals"]] == ["ecc"]  # Xid 13 is an application's error
    measured["xid"]["lines"].append({"pci": "PCI:0000:01:00", "xid": 79, "line": "NVRM: Xid (PCI:0000:01:00): 79, off the bus"})
    measured["dcgm"] = {"available": True, "passed": False, "level": 1, "rc": 0, "failed_tests": ["Memory Fail"]}
    measured["gpus"][0]["errors"] = ["gemm: RuntimeError: CUDA error: an illegal memory access"]
    figures = [r["figure"] for r in judge(measured)["refusals"]]
    assert figures == ["measurement", "ecc", "xid", "dcgm"]
    assert judge({"errors": ["torch does not import: x"]})["lines"] == ["the measurement failed: torch does not import: x"]


def test_key_inputs_and_what_changes_them():
    facts = host_facts()
    inputs = summary.admission_inputs(facts, "gen-a")
    key = summary.admission_key(inputs)
    idle = copy.deepcopy(facts)
    idle["gpus"][0]["pcie_gen_current"] = 1  # an idle GPU lowers its link: not an input
    assert summary.admission_key(summary.admission_inputs(idle, "gen-a")) == key
    assert summary.admission_key(summary.admission_inputs(facts, "gen-b")) != key
    newer = dict(facts, driver_version="590.10.01")
    assert summary.changed_inputs(inputs, summary.admission_inputs(newer, "gen-b")) == [
        "driver_version", "ml_env_generation"]
    assert summary.changed_inputs(None, inputs) == ["never admitted"]


def test_summary_text_and_textfile_pass_promtool():
    measured = load("measure-run1.json")
    out = judge(measured)
    s = summary.summarize(measured, out, 32768, 268435456)
    assert s["h2d_gbps_min"] == 55.29 and s["links"] == ["Gen5 x16"] and s["gemm_ok"] is True
    assert s["text"].startswith("admitted: 1x NVIDIA H200 Gen5 x16 (63.0 GB/s), H2D 55.29 GB/s")
    assert "cross-GPU not measured (world size 1)" in s["text"] and s["xid"] == 0 and s["dcgm"] == "not available"
    eight = eight_gpus()
    s8 = summary.summarize(eight, judge(eight), 32768, 268435456)
    assert s8["allreduce_small_us"] == {"nccl": 25.0, "sglang_custom_all_reduce": 12.5}
    assert "all-reduce 32 KiB 25.0 us, 256 MiB busbw 24.0 GB/s, P2P min 48.0 GB/s" in s8["text"]
    page = summary.textfile(eight, s8, "abc", 32768)
    proc = subprocess.run([promtool(), "check", "metrics"], input=page, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'gpu_admit_allreduce_latency_seconds{bytes="32768",impl="nccl"} 2.5e-05' in page
    assert 'gpu_admit_h2d_bytes_per_second{gpu="7"} 5.529e+10' in page


def record_args(tmp_path, **kw):
    args = {"host_facts": host_facts(), "ml_env_generation": "gen-a", "fact_dir": str(tmp_path / "facts"),
            "state_dir": str(tmp_path / "state"), "textfile_dir": str(tmp_path / "textfile"),
            "refuse_xids": DEFAULT_XIDS}
    args.update(kw)
    return args


def test_record_module_due_measured_kept_and_judged_again(tmp_path, run_module):
    (tmp_path / "textfile").mkdir()
    first = run_module(gpu_admit_record, record_args(tmp_path))
    assert first["due"] and first["reason"] == ["never admitted"] and not first["changed"]
    assert not (tmp_path / "facts").exists()
    measured = load("measure-run1.json")
    checked = run_module(gpu_admit_record, record_args(tmp_path, measured=measured), check_mode=True)
    assert checked["changed"] and not (tmp_path / "facts").exists()
    done = run_module(gpu_admit_record, record_args(tmp_path, measured=measured))
    assert done["changed"] and done["verdict"]["admitted"] and (tmp_path / "textfile" / "gpu_admit.prom").exists()
    fact = json.loads((tmp_path / "facts" / "gpu_admit.fact").read_text())
    assert fact["key"] == done["key"] and fact["summary"]["h2d_gbps_min"] == 55.29
    again = run_module(gpu_admit_record, record_args(tmp_path))
    assert not again["due"] and not again["changed"] and again["verdict"]["admitted"]
    refused = run_module(gpu_admit_record, record_args(tmp_path, expect={"memory_gbps": {"expect": 9000, "tolerance": 0.1}}))
    assert refused["changed"] and not refused["verdict"]["admitted"] and not refused["due"]
    assert run_module(gpu_admit_record, record_args(tmp_path, force=True))["due"]
    moved = run_module(gpu_admit_record, record_args(tmp_path, ml_env_generation="gen-b"))
    assert moved["due"] and moved["reason"] == ["ml_env_generation"]


def test_the_verification_summary_shows_the_bus_beside_tok_s():
    one = load("measure-run1.json")
    eight = eight_gpus()
    hosts = {
        "h200": {"passed": True, "flag_hash": "a", "context": {"bus": summary.summarize(one, judge(one), 32768, 268435456)},
                 "result": {"single_stream": {"decode_tps": 71.6, "decode_tps_runs": [71.0, 72.0]}}},
        "rtx": {"passed": True, "flag_hash": "b", "context": {"bus": summary.summarize(eight, judge(eight), 32768, 268435456)},
                "result": {"single_stream": {"decode_tps": 80.0, "decode_tps_runs": [80.0]}}},
        "none": {"passed": True, "flag_hash": "c", "result": {}},
    }
    md = render.render_summary_md({"run_id": "R", "hosts": hosts})
    assert "| 71.6 (71.0-72.0) | Gen5 x16, H2D 55.3 GB/s, 1 GPU: bus not measured |" in md
    assert "| 80.0 (80.0-80.0) | Gen5 x16, H2D 55.3 GB/s, AR 32 KiB 25.0 us, P2P 48.0 GB/s |" in md
    assert "| - | - |" in md  # a host never admitted
    refused = dict(summary.summarize(one, judge(one), 32768, 268435456), admitted=False)
    assert render.bus_cell(refused).startswith("REFUSED Gen5 x16")
