# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the GPUs of a host reach each other, for the gpu_host role: the path between every
pair of GPUs, and what the PCIe bus does to peer-to-peer traffic (IOMMU, ACS).

Plain functions over text and dicts, like gpu/host_nvidia.py (whose ParseError they raise).
Output formats parsed:
  * ``nvidia-smi topo -m`` (GPU x GPU matrix of X, NV#, PIX, PXB, PHB, NODE, SYS)
  * ``lspci -vvv`` ACSCtl lines, /proc/cmdline and /sys IOMMU group types
"""

import re

from ansible_collections.sglang.deploy.plugins.module_utils.gpu.host_nvidia import ParseError, strip_ansi

# Path types of `nvidia-smi topo -m`, best (fastest) first. NV# is any bonded NVLink set.
PATH_RANK = ("NV", "PIX", "PXB", "PHB", "NODE", "SYS")


def _path_kind(value):
    value = (value or "").strip().upper()
    if value.startswith("NV") and value[2:].isdigit():
        return "NV"
    return value


# Columns that follow the device columns of the header, in the order nvidia-smi prints them;
# their names hold a space, so they are found by name, not by splitting the header.
_TRAILING_COLUMNS = re.compile(r"CPU Affinity|NUMA Affinity|GPU NUMA ID")
_TRAILING_KEYS = {"CPU Affinity": "cpu_affinity", "NUMA Affinity": "numa_affinity"}
_GPU_NAME = re.compile(r"^GPU\d+$")


def _header_index(lines):
    """Index of the header line: its first word is GPU0 and its second is not a cell ('X')."""
    for index, line in enumerate(lines):
        words = line.split()
        if words and words[0] == "GPU0" and (len(words) == 1 or words[1] != "X"):
            return index
    return None


def _split_header(header):
    """(device columns, trailing column names) of the header line.

    Device columns are every GPU and NIC, whatever a driver names the NICs (NIC0 on newer
    drivers, mlx5_0 or mlx4_0 on older ones); trailing columns are CPU Affinity, NUMA Affinity
    and GPU NUMA ID, those a driver prints.
    """
    text = header.strip()
    first = _TRAILING_COLUMNS.search(text)
    if first is None:
        return text.split(), []
    return text[:first.start()].split(), _TRAILING_COLUMNS.findall(text[first.start():])


def parse_topo_matrix(text):
    """Parse ``nvidia-smi topo -m``, tab separated as printed or space separated as pasted.

    Returns {'gpus': ['GPU0', ...], 'matrix': {'GPU0': {'GPU1': 'PIX', ...}, ...},
             'cpu_affinity': {'GPU0': '0-15'}, 'numa_affinity': {'GPU0': '0'}}.
    NIC rows and columns are ignored (NIC0 or a device name such as mlx5_0); only GPU x GPU
    cells are kept. The legends after the table are skipped. A trailing column the driver
    does not print (no NUMA Affinity on older drivers) is absent from the result.
    """
    lines = strip_ansi(text).splitlines()
    index = _header_index(lines)
    if index is None:
        raise ParseError("no 'GPU0' header line in nvidia-smi topo -m output")
    devices, trailing = _split_header(lines[index])
    gpu_cols = [col for col in devices if _GPU_NAME.match(col)]
    matrix = {}
    found = {"cpu_affinity": {}, "numa_affinity": {}}
    for line in lines[index + 1:]:
        words = line.split()
        if not words or not _GPU_NAME.match(words[0]):
            continue
        row_name, cells = words[0], words[1:]
        if len(cells) < len(devices):
            raise ParseError("topo row %s has %d cells for %d device columns"
                             % (row_name, len(cells), len(devices)))
        matrix[row_name] = dict((col, cell) for col, cell in zip(devices, cells)
                                if col in gpu_cols and col != row_name)
        for name, value in zip(trailing, cells[len(devices):]):
            if name in _TRAILING_KEYS:
                found[_TRAILING_KEYS[name]][row_name] = value
    if set(matrix) != set(gpu_cols):
        raise ParseError("topo rows %s do not match GPU columns %s"
                         % (sorted(matrix), gpu_cols))
    return {"gpus": gpu_cols, "matrix": matrix, "cpu_affinity": found["cpu_affinity"],
            "numa_affinity": found["numa_affinity"]}


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
             if word.split("=")[0] in ("iommu", "intel_iommu", "amd_iommu", "pcie_acs_override")
             or word == "pci=noacs"]
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
