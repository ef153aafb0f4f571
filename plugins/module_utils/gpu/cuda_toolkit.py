# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the cuda_toolkit role: NVIDIA repo distro names, nvcc output, driver rules.

Pure functions (unit tests: tests/unit/test_cuda_toolkit_filters.py).
"""

import re

from ansible.errors import AnsibleFilterError

# NVIDIA's apt repositories under developer.download.nvidia.com/compute/cuda/repos/ that this
# role supports: (ansible_distribution, major version) -> directory name.
REPO_DISTROS = {
    ("Ubuntu", "24.04"): "ubuntu2404",
    ("Ubuntu", "22.04"): "ubuntu2204",
    ("Debian", "12"): "debian12",
}

# The first driver branch whose CUDA driver API runs each toolkit major version.
MIN_BRANCH_FOR_MAJOR = {12: 525, 13: 580}


def repo_distro(distribution, version):
    """('Ubuntu', '24.04') -> 'ubuntu2404'; ('Debian', '12.7') -> 'debian12'."""
    dist = str(distribution or "")
    ver = str(version or "")
    key = (dist, ver if dist == "Ubuntu" else ver.split(".")[0])
    if key not in REPO_DISTROS:
        raise AnsibleFilterError(
            "cuda_toolkit_repo_distro: no NVIDIA CUDA apt repository is known for %s %s "
            "(supported: Ubuntu 24.04, Ubuntu 22.04, Debian 12; '? ?' means facts were not "
            "gathered). Fix: gather facts, or set cuda_toolkit_repo_distro (e.g. ubuntu2404) "
            "and, for a mirror, cuda_toolkit_repo_url."
            % (dist or "?", ver or "?"))
    return REPO_DISTROS[key]


def nvcc_version(text):
    """'Cuda compilation tools, release 13.0, V13.0.88' -> '13.0'; '' when absent."""
    match = re.search(r"release\s+(\d+\.\d+)\s*,\s*V\d", text or "")
    return match.group(1) if match else ""


def package_for_version(version):
    """'13.0' -> 'cuda-toolkit-13-0'."""
    return "cuda-toolkit-" + str(version).replace(".", "-")


def config_errors(version, package, min_driver_branch):
    """Errors in the role's own variables (empty list when they fit together)."""
    errors = []
    version = str(version or "")
    if not re.match(r"^\d+\.\d+$", version):
        errors.append("cuda_toolkit_version: %r is not MAJOR.MINOR. Fix: e.g. cuda_toolkit_version: "
                      "\"13.0\" (quoted, or YAML reads 13.0 as a number)." % version)
        return errors
    expected_pkg = package_for_version(version)
    if not re.match(r"^%s(?![0-9])" % re.escape(expected_pkg), str(package or "")):
        errors.append("cuda_toolkit_package: %r does not install CUDA %s (cuda_toolkit_version). "
                      "Fix: use %s, or change cuda_toolkit_version to the package's version."
                      % (package, version, expected_pkg))
    major = int(version.split(".")[0])
    floor = MIN_BRANCH_FOR_MAJOR.get(major)
    try:
        branch = int(min_driver_branch)
    except (TypeError, ValueError):
        branch = None
    if branch is None or branch < 0:
        errors.append("cuda_toolkit_min_driver_branch: %r is not a driver branch. Fix: an integer "
                      "such as 580." % (min_driver_branch,))
    elif floor and branch < floor:
        errors.append("cuda_toolkit_min_driver_branch: %d is below %d, the first driver branch "
                      "that runs CUDA %d. Fix: set it to %d or higher." % (branch, floor, major,
                                                                           floor))
    return errors


def driver_problem(driver_version, min_branch, cuda_driver_version="", toolkit_version="",
                   require_driver=True):
    """'' when the driver can run the toolkit; otherwise the error message.

    driver_version: '580.159.04' (or '' when no driver was found);
    cuda_driver_version: the CUDA version the driver reports (nvidia-smi), '' if unknown.
    """
    driver_version = str(driver_version or "").strip()
    if not driver_version:
        if not require_driver:
            return ""
        return ("cuda_toolkit_min_driver_branch: no NVIDIA driver found on this host (no "
                "gpu_host_facts.driver_version, no cuda_toolkit_driver_version, nvidia-smi "
                "missing or failing); CUDA %s needs driver branch >= %s. Fix: install the driver "
                "first, or set cuda_toolkit_require_driver: false to install the toolkit on a "
                "host without a GPU (a build host)." % (toolkit_version, min_branch))
    match = re.match(r"^(\d+)(?:\.\d+)*$", driver_version)
    if not match:
        return ("cuda_toolkit_driver_version: %r is not a driver version such as 580.159.04. "
                "Fix: leave it empty to read it from the host." % driver_version)
    branch = int(match.group(1))
    if branch < int(min_branch):
        return ("cuda_toolkit_min_driver_branch: driver %s (branch %d) cannot run CUDA %s, which "
                "needs branch >= %s. Fix: upgrade the NVIDIA driver (open kernel modules on "
                "Blackwell) before installing the toolkit." % (driver_version, branch,
                                                                toolkit_version, min_branch))
    cuda = str(cuda_driver_version or "")
    if cuda and toolkit_version:
        try:
            drv_major = int(cuda.split(".")[0])
            tk_major = int(str(toolkit_version).split(".")[0])
        except ValueError:
            return ""
        if drv_major < tk_major:
            return ("cuda_toolkit_version: the driver supports CUDA %s, the toolkit is CUDA %s. "
                    "Fix: upgrade the NVIDIA driver." % (cuda, toolkit_version))
    return ""
