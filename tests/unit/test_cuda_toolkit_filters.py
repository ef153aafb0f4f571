"""Unit tests of plugins/module_utils/gpu/cuda_toolkit.py."""

import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

from ansible_collections.sglang.deploy.plugins.filter.filters import FilterModule  # noqa: E402
from ansible_collections.sglang.deploy.plugins.module_utils.gpu import cuda_toolkit as ct  # noqa: E402
from ansible.errors import AnsibleFilterError  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures", "gpu-host", "h200-1gpu-ubuntu2404")


@pytest.mark.parametrize("dist,ver,want", [
    ("Ubuntu", "24.04", "ubuntu2404"),
    ("Ubuntu", "22.04", "ubuntu2204"),
    ("Debian", "12", "debian12"),
    ("Debian", "12.7", "debian12"),
])
def test_repo_distro(dist, ver, want):
    assert ct.repo_distro(dist, ver) == want


@pytest.mark.parametrize("dist,ver", [("Ubuntu", "20.04"), ("Debian", "11"), ("Rocky", "9.4"),
                                      ("Ubuntu", "24.10"), (None, None)])
def test_repo_distro_unsupported_names_the_variable(dist, ver):
    with pytest.raises(AnsibleFilterError) as exc:
        ct.repo_distro(dist, ver)
    assert "cuda_toolkit_repo_distro" in str(exc.value)
    assert "Fix:" in str(exc.value)


def test_nvcc_version_real_device_output():
    with open(os.path.join(FIX, "host.txt")) as handle:
        text = handle.read()
    assert ct.nvcc_version(text) == "13.0"


@pytest.mark.parametrize("text,want", [
    ("Cuda compilation tools, release 12.8, V12.8.93\n", "12.8"),
    ("bash: nvcc: command not found", ""),
    ("", ""),
    (None, ""),
])
def test_nvcc_version(text, want):
    assert ct.nvcc_version(text) == want


def test_config_ok():
    assert ct.config_errors("13.0", "cuda-toolkit-13-0", 580) == []
    assert ct.config_errors("13.0", "cuda-toolkit-13-0-custom", 580) == []


@pytest.mark.parametrize("version,package,branch,needle", [
    ("12.9", "cuda-toolkit-13-0", 580, "cuda_toolkit_package: 'cuda-toolkit-13-0' does not install CUDA 12.9"),
    ("13.0", "cuda-toolkit-13-01", 580, "cuda_toolkit_package: 'cuda-toolkit-13-01' does not install CUDA 13.0"),
    ("13", "cuda-toolkit-13", 580, "cuda_toolkit_version: '13' is not MAJOR.MINOR"),
    ("13.0", "cuda-toolkit-13-0", 570, "cuda_toolkit_min_driver_branch: 570 is below 580"),
    ("13.0", "cuda-toolkit-13-0", "abc", "cuda_toolkit_min_driver_branch: 'abc' is not a driver branch"),
])
def test_config_errors(version, package, branch, needle):
    errors = ct.config_errors(version, package, branch)
    assert len(errors) == 1 and needle in errors[0]


def test_driver_ok_real_h200():
    assert ct.driver_problem("580.159.04", 580, "13.0", "13.0") == ""


def test_driver_too_old_refused():
    msg = ct.driver_problem("570.124.06", 580, "12.8", "13.0")
    assert msg.startswith("cuda_toolkit_min_driver_branch: driver 570.124.06 (branch 570) cannot run CUDA 13.0")


def test_driver_cuda_major_too_low():
    msg = ct.driver_problem("580.10.01", 580, "12.9", "13.0")
    assert msg.startswith("cuda_toolkit_version: the driver supports CUDA 12.9")


def test_no_driver_refused_unless_allowed():
    assert "no NVIDIA driver found" in ct.driver_problem("", 580, "", "13.0", True)
    assert ct.driver_problem("", 580, "", "13.0", False) == ""


def test_bad_driver_string():
    assert ct.driver_problem("NVIDIA-SMI has failed", 580).startswith("cuda_toolkit_driver_version:")


def test_filters_registered():
    names = {name for name in FilterModule().filters() if name.startswith("cuda_toolkit_")}
    assert names == {"cuda_toolkit_repo_distro", "cuda_toolkit_nvcc_version",
                     "cuda_toolkit_config_errors", "cuda_toolkit_driver_problem"}
