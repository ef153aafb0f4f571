"""ml_env's CUDA-runtime check: the CUDA version a spec's wheels need (a lock's pins, pip's
install report) against the driver's (nvidia-smi's "CUDA Version", gpu_host's facts). Lock
fixtures: tests/fixtures/ml-env/; driver figures: tests/fixtures/gpu-host/."""

import json
import os

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.ml_env.lock import ml_env_cuda_runtime_check
from ansible_collections.sglang.deploy.plugins.module_utils.gpu.host_nvidia import parse_cuda_driver_version
from ansible_collections.sglang.deploy.plugins.module_utils.ml_env.cuda import cuda_of, driver_cuda, runtime_needs

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures")


def fixture(name):
    with open(os.path.join(FIXTURES, "ml-env", name), encoding="utf-8") as handle:
        return json.load(handle) if name.endswith(".json") else [line.strip() for line in handle if line.strip()]


def h200_driver():
    """The H200 machine's nvidia-smi banner, read by gpu_host's own parser: '13.0'."""
    with open(os.path.join(FIXTURES, "gpu-host", "h200-1gpu-ubuntu2404", "nvidia-smi.txt"), encoding="utf-8") as handle:
        return parse_cuda_driver_version(handle.read())


@pytest.mark.parametrize("name,version,cuda", [
    ("nvidia-cuda-runtime", "13.0.96", "13.0"), ("nvidia_cuda_runtime_cu12", "12.8.90", "12.8"),
    ("cuda-toolkit", "13.0.3.0", "13.0"), ("nvidia-nvjitlink", "13.5.37", "13.5"),
    ("torch", "2.14.1+cu130", "13.0"), ("torch", "2.9.0+cu128", "12.8"), ("torch", "2.14.1", None),
    ("nvidia-cufft", "12.0.0.61", None), ("cuda-bindings", "13.5.0", None), ("numpy", "2.3.5", None)])
def test_which_wheels_name_a_cuda_version(name, version, cuda):
    assert cuda_of(name, version) == cuda


def test_torch_2_14_1_lock_fits_a_13_0_driver_and_says_the_newer_nvjitlink():
    assert h200_driver() == "13.0"
    verdict = ml_env_cuda_runtime_check(fixture("lock-torch-2.14.1-cu13.txt"), h200_driver())
    assert verdict["ok"] and verdict["judged"]
    assert verdict["wheels"]["nvidia-cuda-runtime"] == ["13.0.96", "13.0"]
    assert verdict["wheels"]["cuda-toolkit"] == ["13.0.3.0", "13.0"]
    assert verdict["newer_minor"] == ["nvidia-nvjitlink"] and verdict["newer_major"] == []
    assert "allowed" in verdict["message"] and "cudaErrorUnsupportedPtxVersion" in verdict["message"]


def test_torch_2_15_0_report_pulls_13_2_allowed_and_said_with_both_figures():
    verdict = ml_env_cuda_runtime_check(fixture("pip-report-torch-2.15.0-cu13.json"), "13.0")
    assert verdict["ok"] and verdict["runtime"] == "13.2" and verdict["driver"] == "13.0"
    assert verdict["newer_minor"] == ["nvidia-cuda-runtime"]
    for part in ("CUDA 13.2", "nvidia-cuda-runtime 13.2.51", "driver's CUDA 13.0", "allowed"):
        assert part in verdict["message"]


def test_a_cuda_14_runtime_is_refused_on_a_13_0_driver_with_both_figures_and_the_fix():
    verdict = ml_env_cuda_runtime_check(fixture("pip-report-cuda14.json"), h200_driver())
    assert not verdict["ok"] and verdict["runtime"] == "14.0"
    assert verdict["newer_major"] == ["nvidia-cuda-runtime", "torch"]
    for part in ("need CUDA 14.0", "nvidia-cuda-runtime 14.0.10", "torch 2.16.0+cu140", "supports CUDA 13.0",
                 "Fix: pin", "cu130", "nvidia-cuda-runtime<14", "driver that supports CUDA 14.0"):
        assert part in verdict["message"]


def test_a_13_x_runtime_on_a_12_x_driver_is_refused():
    verdict = ml_env_cuda_runtime_check(["torch==2.14.1+cu130 --hash=sha256:aa"], "12.8")
    assert not verdict["ok"] and verdict["newer_major"] == ["torch"]


def test_same_or_older_runtime_fits():
    verdict = ml_env_cuda_runtime_check(["nvidia-cuda-runtime-cu12==12.8.90", "torch==2.9.0+cu128"], "13.0")
    assert verdict["ok"] and verdict["judged"] and verdict["newer_minor"] == []
    assert "fits" in verdict["message"]


def test_not_judged_without_a_driver_or_without_a_pin_naming_cuda():
    # the local profile's CPU hosts: gpu_host reports no driver, ml_env_driver_cuda_version is ''
    verdict = ml_env_cuda_runtime_check(fixture("pip-report-cuda14.json"), "")
    assert verdict["ok"] and not verdict["judged"] and verdict["runtime"] == "14.0"
    verdict = ml_env_cuda_runtime_check(["torch==2.14.1", "sglang==0.5.23"], "13.0")
    assert verdict["ok"] and not verdict["judged"] and "what pip resolves" in verdict["message"]


def test_reads_lock_lines_reports_and_driver_spellings():
    assert runtime_needs(["torch[cuda]==2.14.1+cu130 --hash=sha256:aa ; sys_platform == 'linux'"]) == {
        "torch": ("2.14.1+cu130", "13.0")}
    assert runtime_needs(["# comment", "", "git+https://example.invalid/x"]) == {}
    assert driver_cuda(13.0) == "13.0" and driver_cuda("CUDA Version: 13.0") == "13.0" and driver_cuda(None) == ""
