# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_host_facts: every command and file the role reads on a host, parsed into one dict.

``gather()`` takes the host's I/O as callables (the module plugins/modules/gpu_host_facts.py hands it
the real ones, tests/unit/test_gpu_host_gather_check.py a host faked from fixtures) and the
parsers of gpu/host_nvidia.py and gpu/host_interconnect.py turn each output into facts.
"""

from ansible_collections.sglang.deploy.plugins.module_utils.gpu.host_interconnect import (
    comm_profile, iommu_state, parse_lspci_acs, parse_topo_matrix, summarize_interconnect, sysfs_bdf)
from ansible_collections.sglang.deploy.plugins.module_utils.gpu.host_nvidia import (
    QUERY_FIELDS, driver_branch, normalize_gpu, parse_banner_driver_version,
    parse_cuda_driver_version, parse_driver_version_file, parse_modinfo_license, parse_query_csv)

SCHEMA_VERSION = 1


def empty_facts(cpu_test_host=False, reason=None):
    return {
        "schema_version": SCHEMA_VERSION,
        "cpu_test_host": bool(cpu_test_host),
        "nvidia_smi": {"found": False, "path": None, "error": reason},
        "driver_version": None,
        "driver_branch": None,
        "open_kernel_module": None,
        "kernel_module_source": None,
        "cuda_driver_version": None,
        "gpu_count": 0,
        "gpus": [],
        "gpu_names": [],
        "sm": None,
        "sms": [],
        "interconnect": dict(summarize_interconnect({}), matrix={}, comm_profile="none"),
        "iommu": iommu_state("", [], {}),
        "acs": {"state": "unknown", "redirecting": [], "devices_with_acs": 0},
    }


def _first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def gather(run, read, listdir, readlink, nvidia_smi_path, version_file, lspci_path=None,
           modinfo_path=None, cpu_test_host=False):
    """Collect gpu_host_facts through injected callables (so tests can fake the host).

    run(argv) -> (rc, stdout, stderr); read(path) -> text or None; listdir(path) -> list or None;
    readlink(path) -> target or None. nvidia_smi_path None means nvidia-smi was not found.
    """
    facts = empty_facts(cpu_test_host)
    cmdline = read("/proc/cmdline") or ""
    iommu_devices = listdir("/sys/class/iommu") or []
    facts["iommu"] = iommu_state(cmdline, iommu_devices, {})
    if cpu_test_host:
        facts["nvidia_smi"]["error"] = "skipped: gpu_host_cpu_test_host is true"
        return facts
    if not nvidia_smi_path:
        facts["nvidia_smi"]["error"] = "nvidia-smi not found on PATH"
        return facts
    facts["nvidia_smi"]["path"] = nvidia_smi_path
    facts["nvidia_smi"]["found"] = True

    rc, out, err = run([nvidia_smi_path, "--query-gpu=" + ",".join(QUERY_FIELDS),
                        "--format=csv"])
    if rc != 0:
        facts["nvidia_smi"]["error"] = "nvidia-smi --query-gpu failed (rc %d): %s" % (
            rc, _first_line(err) or _first_line(out))
        return facts
    gpus = [normalize_gpu(row) for row in parse_query_csv(out)]
    gpus.sort(key=lambda g: g["index"] if g["index"] is not None else 0)
    facts["gpus"] = gpus
    facts["gpu_count"] = len(gpus)
    facts["gpu_names"] = sorted(set(g["name"] for g in gpus if g["name"]))
    sms = sorted(set(g["sm"] for g in gpus if g["sm"]))
    facts["sms"] = sms
    facts["sm"] = sms[0] if len(sms) == 1 else None
    versions = sorted(set(g["driver_version"] for g in gpus if g["driver_version"]))
    facts["driver_version"] = versions[0] if versions else None

    rc, out, err = run([nvidia_smi_path])
    if rc == 0:
        facts["cuda_driver_version"] = parse_cuda_driver_version(out)
        if not facts["driver_version"]:
            facts["driver_version"] = parse_banner_driver_version(out)

    module_info = parse_driver_version_file(read(version_file))
    if module_info["open_kernel_module"] is not None:
        facts["open_kernel_module"] = module_info["open_kernel_module"]
        facts["kernel_module_source"] = version_file
        if not facts["driver_version"]:
            facts["driver_version"] = module_info["driver_version"]
    elif modinfo_path:
        rc, out, err = run([modinfo_path, "nvidia"])
        if rc == 0:
            facts["open_kernel_module"] = parse_modinfo_license(out)
            facts["kernel_module_source"] = "modinfo nvidia"
    facts["driver_branch"] = driver_branch(facts["driver_version"])

    topo = {"gpus": [], "matrix": {}}
    if len(gpus) > 1:
        rc, out, err = run([nvidia_smi_path, "topo", "-m"])
        if rc == 0:
            topo = parse_topo_matrix(out)
    summary = summarize_interconnect(topo)
    summary["matrix"] = topo.get("matrix", {})
    summary["cpu_affinity"] = topo.get("cpu_affinity", {})
    summary["numa_affinity"] = topo.get("numa_affinity", {})
    summary["comm_profile"] = comm_profile(len(gpus), summary)
    facts["interconnect"] = summary

    group_types = {}
    for gpu in gpus:
        bdf = sysfs_bdf(gpu["bus_id"])
        if not bdf:
            continue
        group = readlink("/sys/bus/pci/devices/%s/iommu_group" % bdf)
        if group:
            group_name = group.rstrip("/").split("/")[-1]
            kind = read("/sys/kernel/iommu_groups/%s/type" % group_name)
            group_types[bdf] = kind.strip() if kind else None
    facts["iommu"] = iommu_state(cmdline, iommu_devices, group_types)

    if lspci_path and len(gpus) > 1:
        rc, out, err = run([lspci_path, "-vvv"])
        if rc == 0:
            facts["acs"] = parse_lspci_acs(out)
    return facts
