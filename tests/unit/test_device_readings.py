"""The readings of tests/device/ on the lent GPU machine (tests/fixtures/device/README.md), read
again by the project's checks: ml_env's CUDA-runtime check gives the verdicts the machine printed
for its own wheels and driver, and the batch-variance figures are what docs/quality-gate.md says."""

import json
import re
from pathlib import Path

from ansible_collections.sglang.deploy.plugins.module_utils.ml_env import cuda

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "device"


def reading():
    text = (FIXTURES / "h100-cuda-runtime-reading.txt").read_text(encoding="utf-8")
    return json.loads(re.search(r"^reading: (\{.*\})$", text, re.M).group(1)), text


def test_the_h100_reading_passes_the_runtime_check_as_it_did_on_the_machine():
    found, text = reading()
    assert found["driver_cuda_nvidia_smi"] == found["driver_cuda_libcuda"] == "13.0"
    sources = ["torch==%s" % found["torch"]] + found["cuda_wheels"]
    verdict = cuda.check(sources, found["driver_cuda_nvidia_smi"])
    assert verdict["ok"] and verdict["runtime"] == "13.0"
    assert "check, this environment: ok=True runtime=13.0 driver=13.0" in text


def test_a_cuda_14_runtime_is_refused_on_that_driver_and_13_2_allowed():
    found, _ = reading()
    assert not cuda.check(["nvidia-cuda-runtime==14.0.10"], found["driver_cuda_nvidia_smi"])["ok"]
    assert cuda.check(["nvidia-cuda-runtime==13.2.51"], found["driver_cuda_nvidia_smi"])["ok"]


def test_the_gemm_on_the_gpu_was_finite_and_close_to_float32():
    _, text = reading()
    gemm = json.loads(re.search(r"^matmul bf16 on the GPU: (\{.*\})$", text, re.M).group(1))
    assert gemm["finite"] and gemm["rel_err_vs_fp32"] < 0.01


def test_torch_gemms_on_the_h100_were_batch_invariant_at_8_24_48():
    text = (FIXTURES / "h100-batch-variance.txt").read_text(encoding="utf-8")
    rows = re.findall(r"^batch\s+(\d+): (\d+)/(\d+) generations as alone; \|d logprob\| of shared tokens max (\S+),",
                      text, re.M)
    assert [int(r[0]) for r in rows] == [8, 24, 48]
    assert all(r[1] == r[2] and float(r[3]) == 0.0 for r in rows), rows
