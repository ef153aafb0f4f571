# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure parsers and checks for the gpu_host role.

Everything here is a plain function over text or dicts: no Ansible, no subprocess, no file
access except through the callables handed to ``gather()``. The module
``library/gpu_host_facts.py`` wires these to the real host; tests/unit/test_gpu_host_*.py feed
them the outputs captured on real hosts (tests/fixtures/gpu-host/).

Output formats parsed (as documented by NVIDIA and seen on the H200 fixture):
  * ``nvidia-smi --query-gpu=... --format=csv`` (header line, values with units such as "MiB")
  * the ``nvidia-smi`` banner / ``nvidia-smi -q`` header ("CUDA Version: 13.0")
  * ``nvidia-smi topo -m`` (GPU x GPU matrix of X, NV#, PIX, PXB, PHB, NODE, SYS)
  * ``/proc/driver/nvidia/version`` ("NVIDIA UNIX Open Kernel Module for x86_64 580.159.04" for
    the open module, "NVIDIA UNIX x86_64 Kernel Module 570.86.15" for the proprietary one)
  * ``modinfo nvidia`` license line ("Dual MIT/GPL" open, "NVIDIA" proprietary)
  * ``lspci -vvv`` ACSCtl lines, /proc/cmdline and /sys IOMMU group types
"""

from __future__ import absolute_import, division, print_function

import re

__metaclass__ = type

SCHEMA_VERSION = 1

# Fields asked of nvidia-smi, in this order. Every one exists on driver branch >= 510.
QUERY_FIELDS = (
    "index",
    "name",
    "compute_cap",
    "driver_version",
    "memory.total",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "pci.bus_id",
)

# Path types of `nvidia-smi topo -m`, best (fastest) first. NV# is any bonded NVLink set.
PATH_RANK = ("NV", "PIX", "PXB", "PHB", "NODE", "SYS")

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_NA_VALUES = ("", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]")


class ParseError(ValueError):
    """Raised when a command's output does not have the documented shape."""


def strip_ansi(text):
    """Remove terminal escape sequences (nvidia-smi topo -m underlines its header)."""
    return _ANSI_RE.sub("", text or "")


def _none_if_na(value):
    if value is None:
        return None
    value = value.strip()
    if value.lower() in _NA_VALUES:
        return None
    return value


def _leading_int(value):
    """'143771 MiB' -> 143771, '16x' -> 16, '5' -> 5, None/'N/A' -> None."""
    value = _none_if_na(value)
    if value is None:
        return None
    match = re.match(r"\s*(\d+)", value)
    return int(match.group(1)) if match else None


def _header_key(column):
    """'memory.total [MiB]' -> 'memory.total'."""
    return re.sub(r"\s*\[.*\]\s*$", "", column.strip())


def parse_query_csv(text):
    """Parse ``nvidia-smi --query-gpu=... --format=csv`` output into a list of dicts.

    The first non-empty line is the header; keys lose their unit suffix. Values stay strings
    (stripped); "[N/A]" and friends become None.
    """
    lines = [line for line in strip_ansi(text).splitlines() if line.strip()]
    if not lines:
        return []
    header = [_header_key(col) for col in lines[0].split(",")]
    if "index" not in header:
        raise ParseError("nvidia-smi CSV has no 'index' column in its header: %r" % lines[0])
    rows = []
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(header):
            # A GPU name never holds a comma; a different count means an error line.
            raise ParseError("nvidia-smi CSV row has %d cells, header has %d: %r"
                             % (len(cells), len(header), line))
        rows.append(dict((key, _none_if_na(cell)) for key, cell in zip(header, cells)))
    return rows


def normalize_sm(value):
    """Return an SM as "MAJOR.MINOR": '12.0', '120', 'sm_120', 'SM120', 9.0 -> '12.0'/'9.0'.

    Returns None for None/empty; raises ValueError for anything else.
    """
    if value is None:
        return None
    text = str(value).strip().lower()
    if text == "":
        return None
    match = re.match(r"^(\d+)\.(\d+)$", text)
    if match:
        return "%d.%d" % (int(match.group(1)), int(match.group(2)))
    match = re.match(r"^(?:sm_?)?(\d{2,3})$", text)
    if match:
        digits = match.group(1)
        # '12' would read as SM 1.2 (2007): ambiguous with "12.0", so refuse anything below 3.0.
        if int(digits[:-1]) >= 3:
            return "%d.%d" % (int(digits[:-1]), int(digits[-1]))
    raise ValueError("not an SM / compute capability: %r (use the form '12.0')" % (value,))


def normalize_gpu(row):
    """One CSV row -> the gpus[] entry of gpu_host_facts."""
    index = _leading_int(row.get("index"))
    sm = row.get("compute_cap")
    try:
        sm = normalize_sm(sm)
    except ValueError:
        sm = None
    return {
        "index": index,
        "name": row.get("name"),
        "sm": sm,
        "driver_version": row.get("driver_version"),
        "memory_mib": _leading_int(row.get("memory.total")),
        "pcie_gen_current": _leading_int(row.get("pcie.link.gen.current")),
        "pcie_gen_max": _leading_int(row.get("pcie.link.gen.max")),
        "pcie_width_current": _leading_int(row.get("pcie.link.width.current")),
        "pcie_width_max": _leading_int(row.get("pcie.link.width.max")),
        "bus_id": row.get("pci.bus_id"),
    }


def parse_cuda_driver_version(text):
    """'CUDA Version: 13.0' in the nvidia-smi banner (or ': 13.0' in -q) -> '13.0'."""
    match = re.search(r"CUDA Version\s*:\s*([0-9]+\.[0-9]+)", text or "")
    return match.group(1) if match else None


def parse_banner_driver_version(text):
    match = re.search(r"Driver Version\s*:\s*([0-9]+(?:\.[0-9]+)+)", text or "")
    return match.group(1) if match else None


def parse_driver_version_file(text):
    """Parse /proc/driver/nvidia/version.

    Returns {'driver_version': '580.159.04' or None, 'open_kernel_module': True/False/None}.
    """
    first = ""
    for line in (text or "").splitlines():
        if line.startswith("NVRM version:"):
            first = line
            break
    if not first:
        return {"driver_version": None, "open_kernel_module": None}
    version = re.search(r"\s(\d+\.\d+(?:\.\d+)?)\s", first + " ")
    is_open = "Open Kernel Module" in first
    return {
        "driver_version": version.group(1) if version else None,
        "open_kernel_module": bool(is_open),
    }


def parse_modinfo_license(text):
    """`modinfo nvidia` -> True (Dual MIT/GPL: open), False (NVIDIA: proprietary), None."""
    match = re.search(r"^license:\s*(.+)$", text or "", re.MULTILINE)
    if not match:
        return None
    lic = match.group(1).strip()
    if "MIT" in lic or "GPL" in lic:
        return True
    if lic == "NVIDIA":
        return False
    return None


def driver_branch(driver_version):
    """'580.159.04' -> 580; None -> None."""
    if not driver_version:
        return None
    match = re.match(r"^\s*(\d+)", str(driver_version))
    return int(match.group(1)) if match else None


def _path_kind(value):
    value = (value or "").strip().upper()
    if value.startswith("NV") and value[2:].isdigit():
        return "NV"
    return value


def parse_topo_matrix(text):
    """Parse ``nvidia-smi topo -m``.

    Returns {'gpus': ['GPU0', ...], 'matrix': {'GPU0': {'GPU1': 'PIX', ...}, ...},
             'cpu_affinity': {'GPU0': '0-15'}, 'numa_affinity': {'GPU0': '0'}}.
    NIC rows and columns are ignored; only GPU x GPU cells are kept.
    """
    lines = strip_ansi(text).splitlines()
    header = None
    for line in lines:
        if re.match(r"^\s+GPU0\b", line) or re.match(r"^\t+GPU0\b", line):
            header = line
            break
    if header is None:
        raise ParseError("no 'GPU0' header line in nvidia-smi topo -m output")
    # Header columns are tab separated; 'CPU Affinity' holds a space, so split on tabs/2+ spaces.
    columns = [col.strip() for col in re.split(r"\t+|\s{2,}", header.strip()) if col.strip()]
    gpu_cols = [col for col in columns if re.match(r"^GPU\d+$", col)]
    matrix = {}
    cpu_affinity = {}
    numa_affinity = {}
    for line in lines:
        match = re.match(r"^(GPU\d+)\s+(.*)$", line)
        if not match:
            continue
        row_name = match.group(1)
        cells = [cell.strip() for cell in re.split(r"\t+|\s{2,}|\s", match.group(2).strip())
                 if cell.strip()]
        if len(cells) < len(gpu_cols):
            raise ParseError("topo row %s has %d cells for %d GPU columns"
                             % (row_name, len(cells), len(gpu_cols)))
        row = {}
        for col, cell in zip(columns, cells):
            if col in gpu_cols and col != row_name:
                row[col] = cell
        matrix[row_name] = row
        rest = cells[len([c for c in columns if re.match(r"^(GPU|NIC)\d+$", c)]):]
        if rest:
            cpu_affinity[row_name] = rest[0]
        if len(rest) > 1:
            numa_affinity[row_name] = rest[1]
    if set(matrix) != set(gpu_cols):
        raise ParseError("topo rows %s do not match GPU columns %s"
                         % (sorted(matrix), gpu_cols))
    return {"gpus": gpu_cols, "matrix": matrix, "cpu_affinity": cpu_affinity,
            "numa_affinity": numa_affinity}


def summarize_interconnect(topo):
    """Summary of GPU pair paths: has_nvlink, worst/best path type and counts per type.

    Each unordered pair is counted once (the matrix is symmetric).
    """
    matrix = (topo or {}).get("matrix", {})
    counts = {}
    kinds = []
    names = sorted(matrix, key=lambda n: int(n[3:]))
    for i, left in enumerate(names):
        for right in names[i + 1:]:
            value = matrix[left].get(right)
            if value is None:
                continue
            kind = _path_kind(value)
            counts[kind] = counts.get(kind, 0) + 1
            kinds.append(kind)
    ranked = [kind for kind in kinds if kind in PATH_RANK]
    worst = max(ranked, key=PATH_RANK.index) if ranked else None
    best = min(ranked, key=PATH_RANK.index) if ranked else None
    pair_count = len(kinds)
    nvlink_pairs = counts.get("NV", 0)
    return {
        "pair_count": pair_count,
        "path_counts": counts,
        "has_nvlink": nvlink_pairs > 0,
        "all_nvlink": pair_count > 0 and nvlink_pairs == pair_count,
        "pcie_only": pair_count > 0 and nvlink_pairs == 0,
        "worst_path": worst,
        "best_path": best,
        "cross_socket": counts.get("SYS", 0) > 0,
    }


def comm_profile(gpu_count, summary):
    """Which communication profile a later role should offer: nvlink, pcie, single_gpu, none."""
    if not gpu_count:
        return "none"
    if gpu_count == 1:
        return "single_gpu"
    if summary.get("all_nvlink"):
        return "nvlink"
    return "pcie"


def parse_lspci_acs(text):
    """Devices whose ACS control redirects peer requests (ReqRedir+ or CmpltRedir+).

    Returns {'state': 'enabled'|'disabled'|'unknown', 'redirecting': ['0000:00:01.0', ...],
             'devices_with_acs': N}. 'unknown' when no ACSCtl line could be read (no lspci, or
    lspci run without root cannot read extended capabilities).
    """
    current = None
    redirecting = []
    seen = 0
    for line in (text or "").splitlines():
        head = re.match(r"^([0-9a-fA-F]{4}:)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s", line)
        if head:
            current = (head.group(1) or "0000:") + head.group(2)
            continue
        if "ACSCtl:" in line and current:
            seen += 1
            if "ReqRedir+" in line or "CmpltRedir+" in line:
                redirecting.append(current.lower())
    if not seen:
        state = "unknown"
    elif redirecting:
        state = "enabled"
    else:
        state = "disabled"
    return {"state": state, "redirecting": redirecting, "devices_with_acs": seen}


def sysfs_bdf(bus_id):
    """nvidia-smi '00000000:00:06.0' -> sysfs '0000:00:06.0'."""
    if not bus_id:
        return None
    match = re.match(r"^([0-9a-fA-F]+):([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])$", bus_id.strip())
    if not match:
        return None
    return "%04x:%s" % (int(match.group(1), 16), match.group(2).lower())


def iommu_state(cmdline, iommu_devices, gpu_group_types):
    """IOMMU summary from /proc/cmdline, /sys/class/iommu entries and the GPUs' group types.

    gpu_group_types: {bdf: 'identity'|'DMA'|'DMA-FQ'|None}.
    mode: 'off' (no IOMMU active), 'passthrough' (every GPU group is identity),
    'translated' (some GPU group translates DMA: P2P goes through the IOMMU), 'unknown'.
    """
    flags = [word for word in (cmdline or "").split()
             if word.split("=")[0] in ("iommu", "intel_iommu", "amd_iommu", "pcie_acs_override")]
    types = [t for t in (gpu_group_types or {}).values() if t]
    if any(t.upper().startswith("DMA") for t in types):
        mode = "translated"
    elif types and all(t == "identity" for t in types):
        mode = "passthrough"
    elif not iommu_devices and not types:
        mode = "off"
    else:
        mode = "unknown"
    return {
        "mode": mode,
        "enabled": mode in ("translated", "passthrough") or bool(iommu_devices),
        "hardware_units": sorted(iommu_devices or []),
        "gpu_group_types": dict(gpu_group_types or {}),
        "cmdline_flags": flags,
    }


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
                        "slows or hangs NCCL. Fix: boot with iommu=pt (or the IOMMU off)." % (
                            ", ".join(sorted(set(t for t in iommu.get("gpu_group_types", {})
                                                 .values() if t)))))
    acs = facts.get("acs") or {}
    if p2p_over_pcie and acs.get("state") == "enabled":
        warnings.append("PCIe ACS redirects peer requests on %d bridge(s) (%s): GPU P2P is sent "
                        "up to the root complex (slow, may hang). Fix: disable ACS in the BIOS "
                        "or with setpci at boot." % (
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
