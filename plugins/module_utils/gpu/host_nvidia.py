# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the NVIDIA tools say about the GPUs and the driver, for the gpu_host role.

Plain functions over text (no Ansible, no subprocess, no file access): gpu/host_gather.py
runs the commands and hands their output here; tests/unit/test_gpu_host_parsers.py feeds them
the outputs captured on real hosts (tests/fixtures/gpu-host/).

Output formats parsed (as documented by NVIDIA and seen on the H200 fixture):
  * ``nvidia-smi --query-gpu=... --format=csv`` (header line, values with units such as "MiB")
  * the ``nvidia-smi`` banner / ``nvidia-smi -q`` header ("CUDA Version: 13.0")
  * ``/proc/driver/nvidia/version`` ("NVIDIA UNIX Open Kernel Module for x86_64 580.159.04" for
    the open module, "NVIDIA UNIX x86_64 Kernel Module 570.86.15" for the proprietary one)
  * ``modinfo nvidia`` license line ("Dual MIT/GPL" open, "NVIDIA" proprietary)
"""

import re

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
