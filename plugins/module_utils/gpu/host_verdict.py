# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_host preflight's verdict: gathered facts (gpu/host_gather.py) against the
inventory's expectations, as the module plugins/modules/gpu_host_check.py gives it.

Errors name the variable, the expected and the found value, and the fix; warnings are
conditions that slow the host down.
"""

import re

from ansible_collections.sglang.deploy.plugins.module_utils.gpu.host_nvidia import normalize_sm


def validate_expectations(expected):
    """Check the inventory's expectations themselves. Returns a list of error strings."""
    errors = []
    name = expected.get("gpu_name")
    if name:
        try:
            re.compile(name)
        except re.error as exc:
            errors.append("gpu_host_expected_gpu_name: %r is not a valid regular expression (%s). "
                          "Fix: give a plain substring such as 'RTX PRO 6000 Blackwell' or a "
                          "valid Python regex." % (name, exc))
    count = expected.get("gpu_count")
    if count is not None and (not isinstance(count, int) or count < 0):
        errors.append("gpu_host_expected_gpu_count: %r must be an integer >= 0 (0 = any). "
                      "Fix: set it to the number of GPUs in the host, e.g. 8." % (count,))
    try:
        normalize_sm(expected.get("sm"))
    except ValueError:
        errors.append("gpu_host_expected_sm: %r is not a compute capability. Fix: use the "
                      "form MAJOR.MINOR, e.g. '12.0' for RTX PRO 6000 Blackwell, '9.0' for "
                      "H100/H200." % (expected.get("sm"),))
    branch = expected.get("min_driver_branch")
    if branch is not None and (not isinstance(branch, int) or branch < 0):
        errors.append("gpu_host_min_driver_branch: %r must be an integer driver branch such as "
                      "580." % (branch,))
    return errors


def evaluate(facts, expected, cpu_test_host=False):
    """Compare facts with the inventory's expectations.

    expected keys: gpu_name (regex/substring or ''), gpu_count (int, 0/None = any),
    sm ('12.0' or ''), min_driver_branch (int or None), require_open_kernel_module (bool).
    Returns (errors, warnings): lists of strings. Errors name the variable, the expected and the
    found value, and the fix.
    """
    errors = validate_expectations(expected)
    warnings = []
    if errors:
        return errors, warnings
    if cpu_test_host:
        return errors, warnings

    count = facts.get("gpu_count") or 0
    exp_count = expected.get("gpu_count") or 0
    if count == 0:
        reason = (facts.get("nvidia_smi") or {}).get("error") or "nvidia-smi listed no GPU"
        errors.append(
            "gpu_host: no NVIDIA GPU found on this host (%s); the inventory expects %s. "
            "Fix: install the NVIDIA driver and check that the GPUs are visible "
            "(nvidia-smi), or, for a CPU-only test host, set gpu_host_cpu_test_host: true."
            % (reason, "%d GPU(s) (gpu_host_expected_gpu_count)" % exp_count if exp_count
               else "at least one GPU"))
        return errors, warnings

    if exp_count and count != exp_count:
        errors.append("gpu_host_expected_gpu_count: expected %d GPU(s), found %d (%s). Fix: "
                      "check the host (a missing GPU: nvidia-smi, dmesg for Xid/fallen off the "
                      "bus) or correct the inventory." % (exp_count, count,
                                                           ", ".join(facts.get("gpu_names", []))))

    pattern = expected.get("gpu_name")
    if pattern:
        for gpu in facts.get("gpus", []):
            if not re.search(pattern, gpu.get("name") or "", re.IGNORECASE):
                errors.append("gpu_host_expected_gpu_name: expected a GPU matching %r, found %r "
                              "on GPU %s. Fix: put this host in the right inventory group or "
                              "correct gpu_host_expected_gpu_name." % (
                                  pattern, gpu.get("name"), gpu.get("index")))
                break

    exp_sm = normalize_sm(expected.get("sm"))
    sms = facts.get("sms") or []
    if exp_sm:
        found = [s for s in sms if s != exp_sm]
        if found or not sms:
            errors.append("gpu_host_expected_sm: expected SM %s, found %s. Fix: this host's GPUs "
                          "are not the model the inventory declares; move it to the group for "
                          "its GPUs (launch flags and kernels depend on the SM)." % (
                              exp_sm, ", ".join(sms) if sms else "no compute capability"))
    elif len(sms) > 1:
        warnings.append("GPUs of different SMs in one host (%s): tensor parallelism across them "
                        "is not supported by most kernels." % ", ".join(sms))

    min_branch = expected.get("min_driver_branch")
    branch = facts.get("driver_branch")
    if min_branch:
        if branch is None:
            errors.append("gpu_host_min_driver_branch: expected driver branch >= %d, found no "
                          "driver version. Fix: install the NVIDIA driver (>= %d, open kernel "
                          "modules on Blackwell)." % (min_branch, min_branch))
        elif branch < min_branch:
            errors.append("gpu_host_min_driver_branch: expected driver branch >= %d, found %s "
                          "(branch %d%s). Fix: upgrade the NVIDIA driver to branch %d or newer "
                          "(CUDA 13 needs 580+)." % (
                              min_branch, facts.get("driver_version"), branch,
                              ", CUDA %s" % facts["cuda_driver_version"]
                              if facts.get("cuda_driver_version") else "", min_branch))

    if expected.get("require_open_kernel_module"):
        is_open = facts.get("open_kernel_module")
        if is_open is False:
            errors.append("gpu_host_require_open_kernel_module: expected the open NVIDIA kernel "
                          "module, found the proprietary one (%s). Fix: install the -open driver "
                          "flavour (e.g. nvidia-driver-580-open); Blackwell GPUs need it." % (
                              facts.get("kernel_module_source") or "unknown source"))
        elif is_open is None:
            warnings.append("gpu_host_require_open_kernel_module: could not tell whether the "
                            "open kernel module is loaded (no /proc/driver/nvidia/version, no "
                            "modinfo).")

    summary = facts.get("interconnect") or {}
    p2p_over_pcie = count > 1 and not summary.get("all_nvlink")
    iommu = facts.get("iommu") or {}
    if p2p_over_pcie and iommu.get("mode") == "translated":
        warnings.append("IOMMU translates DMA for the GPUs (group type %s) on a host whose GPUs "
                        "talk over PCIe: peer-to-peer traffic goes through the IOMMU, which "
                        "slows NCCL or hangs its first all-reduce (vLLM issue 33041, NCCL issue "
                        "1999: RTX PRO 6000 pairs). Fix: boot with iommu=pt (or amd_iommu=off / "
                        "intel_iommu=off); until then NCCL_P2P_DISABLE=1 in sglang_server_env "
                        "(slow)." % (
                            ", ".join(sorted(set(t for t in iommu.get("gpu_group_types", {})
                                                 .values() if t)))))
    acs = facts.get("acs") or {}
    if p2p_over_pcie and acs.get("state") == "enabled":
        warnings.append("PCIe ACS redirects peer requests on %d bridge(s) (%s): GPU P2P is sent "
                        "up to the root complex, slow or hung (NCCL issue 2079: ACS on AMD root "
                        "ports hung NCCL's all-reduce). Fix: boot with pci=noacs, disable ACS in "
                        "the BIOS, or clear it at boot (setpci -s <bridge> ECAP_ACS+6.w=0000)." % (
                            len(acs.get("redirecting", [])),
                            ", ".join(acs.get("redirecting", [])[:4])))
    for gpu in facts.get("gpus", []):
        width, width_max = gpu.get("pcie_width_current"), gpu.get("pcie_width_max")
        if width and width_max and width < width_max:
            warnings.append("GPU %s PCIe link runs at x%d, below its maximum x%d: check the slot, "
                            "riser and BIOS lane settings." % (gpu.get("index"), width,
                                                                width_max))
        gen, gen_max = gpu.get("pcie_gen_current"), gpu.get("pcie_gen_max")
        if gen and gen_max and gen < gen_max:
            warnings.append("GPU %s PCIe link runs at Gen%d, below its maximum Gen%d (an idle GPU "
                            "lowers its link speed to save power: re-check under load)." % (
                                gpu.get("index"), gen, gen_max))
    return errors, warnings
