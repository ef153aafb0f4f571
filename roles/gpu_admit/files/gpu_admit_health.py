"""What the host says about its GPUs' health and links, for the admission measurement.

No torch here: the parsers are plain functions over command output (unit-tested on the
controller, tests/unit/test_gpu_admit_health.py), and the readers take a `run(argv)` callable
returning (rc, stdout, stderr) so that a test can fake the host.

Read: the PCIe link of each GPU (nvidia-smi --query-gpu), ECC counters, retired pages and
remapped rows (nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER), the kernel log's
"NVRM: Xid" lines (journalctl -k, else dmesg), and DCGM's quick diagnostic (dcgmi diag -r 1)
where dcgmi is installed. What cannot be read is reported as such, with the reason.
"""

import re
import shutil

LINK_FIELDS = ("index", "pci.bus_id", "pcie.link.gen.current", "pcie.link.gen.max",
               "pcie.link.width.current", "pcie.link.width.max")
# GT/s per lane and line encoding of each PCIe generation (PCI-SIG base specifications):
# 8b/10b up to Gen2, 128b/130b for Gen3 to Gen5, FLIT mode for Gen6 (242 of 256 bytes carry data).
PCIE_GEN = {1: (2.5, 0.8), 2: (5.0, 0.8), 3: (8.0, 128 / 130), 4: (16.0, 128 / 130),
            5: (32.0, 128 / 130), 6: (64.0, 242 / 256)}
XID_RE = re.compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<xid>\d+)(?P<rest>.*)$")
XID_KEEP = 50


def link_gbps(gen, width):
    """GB/s (1e9 bytes) one direction of a PCIe link carries before protocol overhead."""
    if gen not in PCIE_GEN or not width:
        return None
    rate, encoding = PCIE_GEN[gen]
    return round(rate * width * encoding / 8, 1)


def _int(value):
    match = re.match(r"\s*(\d+)", value or "")
    return int(match.group(1)) if match else None


def parse_links(text):
    """{index: {bus_id, gen_current, gen_max, width_current, width_max, theoretical_gbps}}."""
    out = {}
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(LINK_FIELDS) or not cells[0].isdigit():
            continue
        gen_c, gen_m, width_c, width_m = (_int(c) for c in cells[2:])
        out[int(cells[0])] = {
            "bus_id": cells[1], "gen_current": gen_c, "gen_max": gen_m,
            "width_current": width_c, "width_max": width_m,
            "theoretical_gbps": link_gbps(gen_c, width_c),
            "max_theoretical_gbps": link_gbps(gen_m, width_m),
        }
    return out


def read_links(run, smi):
    if not smi:
        return {}
    rc, out, _ = run([smi, "--query-gpu=" + ",".join(LINK_FIELDS), "--format=csv,noheader"])
    return parse_links(out) if rc == 0 else {}


def _sections(text):
    """[(gpu bus id, [(path tuple, value)])] of `nvidia-smi -q` output, by indentation."""
    gpus, current, stack = [], None, []
    for raw in (text or "").splitlines():
        if raw.startswith("GPU ") and ":" in raw:
            current = (raw[4:].strip(), [])
            gpus.append(current)
            stack = []
            continue
        if current is None or not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip())
        key, sep, value = raw.strip().partition(":")
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if sep and value.strip():
            current[1].append((tuple(s[1] for s in stack) + (key.strip(),), value.strip()))
        else:
            stack.append((indent, key.strip()))
    return gpus


def parse_ecc(text):
    """Per GPU: uncorrectable ECC errors (volatile, aggregate), retired and pending pages,
    remapped rows and remap failure, from `nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER`.
    A counter the GPU does not have (N/A) is left out."""
    out = []
    for bus_id, items in _sections(text):
        gpu = {"bus_id": bus_id, "ecc_mode": None, "uncorrectable_volatile": 0,
               "uncorrectable_aggregate": 0, "correctable_volatile": 0, "retired_pages": 0,
               "pending_retirement": False, "remapped_uncorrectable": 0, "remap_pending": False,
               "remap_failure": False}
        for path, value in items:
            joined, number = " / ".join(path), _int(value)
            if path[-1] == "Current" and "ECC Mode" in path:
                gpu["ecc_mode"] = value
            elif "ECC Errors" in path and "Uncorrectable" in path[-1] and number is not None:
                kind = "volatile" if "Volatile" in path else "aggregate" if "Aggregate" in path else None
                if kind and "Sources" not in joined:
                    gpu["uncorrectable_" + kind] += number
            elif "ECC Errors" in path and "Volatile" in path and "Correctable" in path[-1] and number is not None:
                gpu["correctable_volatile"] += number
            elif "Retired Pages" in path and path[-1].endswith("ECC") and number is not None:
                gpu["retired_pages"] += number
            elif "Retired Pages" in path and path[-1].startswith("Pending"):
                gpu["pending_retirement"] = value.lower() == "yes"
            elif "Remapped Rows" in path and path[-1] == "Uncorrectable Error" and number is not None:
                gpu["remapped_uncorrectable"] += number
            elif "Remapped Rows" in path and path[-1] == "Pending":
                gpu["remap_pending"] = value.lower() == "yes"
            elif "Remapped Rows" in path and path[-1].startswith("Remapping Failure"):
                gpu["remap_failure"] = value.lower() == "yes"
        out.append(gpu)
    return out


def read_ecc(run, smi):
    if not smi:
        return {"readable": False, "why": "nvidia-smi not found"}
    rc, out, err = run([smi, "-q", "-d", "ECC,PAGE_RETIREMENT,ROW_REMAPPER"])
    gpus = parse_ecc(out) if rc == 0 else []
    if not gpus:
        return {"readable": False, "why": "nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER: rc %s %s"
                % (rc, (err or out or "").strip()[:200])}
    return {"readable": True, "gpus": gpus}


def parse_xid(text):
    """Every "NVRM: Xid (PCI:...): N, ..." line: [{pci, xid, line}]."""
    found = []
    for line in (text or "").splitlines():
        match = XID_RE.search(line)
        if match:
            found.append({"pci": match.group("pci"), "xid": int(match.group("xid")), "line": line.strip()[:300]})
    return found


def read_xid(run):
    """The kernel log's Xid lines since boot: journalctl -k, else dmesg."""
    tried = []
    for argv in (["journalctl", "-k", "-b", "--no-pager", "-q", "-o", "short-iso"], ["dmesg", "--ctime"]):
        if not shutil.which(argv[0]):
            tried.append("%s: not installed" % argv[0])
            continue
        rc, out, err = run(argv)
        if rc == 0 and out.strip():
            lines = parse_xid(out)
            codes = {}
            for item in lines:
                codes[str(item["xid"])] = codes.get(str(item["xid"]), 0) + 1
            return {"readable": True, "source": " ".join(argv), "count": len(lines), "codes": codes,
                    "lines": lines[-XID_KEEP:]}
        tried.append("%s: rc %s %s" % (" ".join(argv), rc, (err or "empty output").strip()[:120]))
    return {"readable": False, "why": "; ".join(tried)}


def read_dcgm(run, level=1):
    """`dcgmi diag -r LEVEL` where dcgmi exists: passed when rc is 0 and no test says Fail."""
    dcgmi = shutil.which("dcgmi")
    if not dcgmi:
        return {"available": False, "why": "dcgmi not found on PATH (DCGM is not installed)"}
    rc, out, err = run([dcgmi, "diag", "-r", str(level)])
    failed = [line.strip()[:200] for line in (out or "").splitlines() if re.search(r"\bFail\b", line)]
    return {"available": True, "level": level, "rc": rc, "passed": rc == 0 and not failed,
            "failed_tests": failed, "tail": ((out or "") + (err or "")).strip().splitlines()[-20:]}
