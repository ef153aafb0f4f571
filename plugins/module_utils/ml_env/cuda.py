# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CUDA runtime a generation's wheels need, against the CUDA version of the host's driver.

Plain functions (no Ansible): the filter ``ml_env_cuda_runtime_check`` (plugins/module_utils/ml_env/lock.py)
calls them on the controller with the spec's requirement lines (a lock's ``name==version``
lines) or pip's install reports, and tests/device/cuda_runtime_reading.py on a GPU machine with
what torch and the driver say there. Unit tests: tests/unit/test_ml_env_cuda.py.

What counts (NVIDIA's CUDA Compatibility guide, "Minor Version Compatibility"):
  * a runtime of a newer major version than the driver's cannot run: refused, with both figures
    and the fix (pin the wheels to the driver's major version, or a newer driver);
  * a newer minor version of the same major runs on the driver with a limited feature set, but
    PTX built by the newer toolchain cannot be JIT-compiled by the older driver
    (``cudaErrorUnsupportedPtxVersion``): allowed, and said, naming the wheels.

Wheels read, and the CUDA version each names: ``nvidia-cuda-runtime``, ``nvidia-cuda-nvrtc``,
``nvidia-nvjitlink`` (with or without a ``-cuNN`` suffix) and the ``cuda-toolkit`` metapackage
carry the CUDA version as their own (13.0.96 -> 13.0); torch names its build in its local
version (``+cu130`` -> 13.0). The CUDA math libraries (cuBLAS, cuFFT, ...) number their own
releases and are not read; nor is ``cuda-bindings`` (Python bindings, not a runtime).
"""

import re

_NAME_NORM = re.compile(r"[-_.]+")
# wheels whose version is the CUDA toolkit version they belong to
_VERSIONED_AS_CUDA = re.compile(r"^(?:nvidia-(?:cuda-runtime|cuda-nvrtc|nvjitlink)(?:-cu\d+)?|cuda-toolkit)$")
_RELEASE = re.compile(r"^\s*v?(\d+)\.(\d+)")
_TORCH_LOCAL = re.compile(r"\+cu(\d+)(\d)$")
_REQ_LINE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*===?\s*([^\s;,]+)")


def canonical(name):
    return _NAME_NORM.sub("-", str(name)).lower()


def cuda_of(name, version):
    """The CUDA version ("13.0") that wheel ``name`` at ``version`` names, or None."""
    name, version = canonical(name), str(version or "").strip()
    if _VERSIONED_AS_CUDA.match(name):
        m = _RELEASE.match(version)
        return "%d.%d" % (int(m.group(1)), int(m.group(2))) if m else None
    if name == "torch":
        m = _TORCH_LOCAL.search(version)
        return "%d.%d" % (int(m.group(1)), int(m.group(2))) if m else None
    return None


def _pairs(sources):
    """(name, version) of each requirement line ``name==version ...`` or pip report entry."""
    if isinstance(sources, (dict, str)):
        sources = [sources]
    for item in sources or []:
        if isinstance(item, dict) and "install" in item:
            for entry in item.get("install") or []:
                meta = (entry or {}).get("metadata") or {}
                if meta.get("name") and meta.get("version"):
                    yield meta["name"], meta["version"]
        elif isinstance(item, str):
            m = _REQ_LINE.match(item)
            if m:
                yield m.group(1), m.group(2)


def runtime_needs(sources):
    """{canonical name: (version, cuda)} of the wheels that name a CUDA version."""
    needs = {}
    for name, version in _pairs(sources):
        cuda = cuda_of(name, version)
        if cuda:
            needs[canonical(name)] = (str(version), cuda)
    return needs


def _key(cuda):
    major, minor = str(cuda).split(".")[:2]
    return int(major), int(minor)


def driver_cuda(value):
    """'13.0' from '13.0', 13.0 or 'CUDA Version: 13.0'; '' when unknown."""
    if value is None or value == "":
        return ""
    if isinstance(value, float):
        value = "%.1f" % value
    m = re.search(r"(\d+)\.(\d+)", str(value))
    return "%d.%d" % (int(m.group(1)), int(m.group(2))) if m else ""


def _named(items):
    return ", ".join("%s %s: CUDA %s" % (name, version, cuda) for name, (version, cuda) in items)


def check(sources, driver):
    """The verdict: {ok, judged, driver, runtime, wheels, newer_major, newer_minor, message}.

    ``driver``: the CUDA version the driver supports (nvidia-smi's "CUDA Version"); empty when
    unknown (a CPU host): nothing is judged. ``runtime`` is the highest CUDA version a wheel names.
    """
    needs = runtime_needs(sources)
    drv = driver_cuda(driver)
    out = {"ok": True, "judged": False, "driver": drv, "wheels": {k: list(v) for k, v in sorted(needs.items())},
           "runtime": max((c for _, c in needs.values()), key=_key, default=""),
           "newer_major": [], "newer_minor": []}
    if not drv:
        out["message"] = ("ml_env: the driver's CUDA version is unknown (no driver, or gpu_host did not run; "
                          "ml_env_driver_cuda_version is empty): the wheels' CUDA runtime (%s) is not compared"
                          % (out["runtime"] or "none named"))
        return out
    if not needs:
        out["message"] = ("ml_env: no wheel of the spec names its CUDA version yet (no nvidia-cuda-runtime, "
                          "cuda-toolkit or torch +cuNNN pin): compared again with what pip resolves")
        return out
    out["judged"] = True
    dmaj, dmin = _key(drv)
    major = sorted(((n, v) for n, v in needs.items() if _key(v[1])[0] > dmaj), key=lambda x: x[0])
    minor = sorted(((n, v) for n, v in needs.items() if _key(v[1])[0] == dmaj and _key(v[1])[1] > dmin),
                   key=lambda x: x[0])
    out["newer_major"], out["newer_minor"] = [n for n, _ in major], [n for n, _ in minor]
    if major:
        out["ok"] = False
        out["message"] = (
            "ml_env: the wheels need CUDA %s (%s); the driver supports CUDA %s (nvidia-smi): a runtime of a "
            "newer major version cannot run on it (NVIDIA's CUDA Compatibility guide). Fix: pin the wheels "
            "to a CUDA %d build (e.g. torch from the cu%d%d index and nvidia-cuda-runtime<%d), or install a "
            "driver that supports CUDA %s." % (out["runtime"], _named(major), drv, dmaj, dmaj, dmin, dmaj + 1,
                                               out["runtime"]))
    elif minor:
        out["message"] = (
            "ml_env: the wheels' CUDA %s (%s) is newer than the driver's CUDA %s: allowed (Minor Version "
            "Compatibility: a CUDA %d.x runtime runs on this driver with a limited feature set), but PTX "
            "built by the newer toolchain cannot be JIT-compiled by this driver "
            "(cudaErrorUnsupportedPtxVersion): the smoke test's kernels decide."
            % (out["runtime"], _named(minor), drv, dmaj))
    else:
        out["message"] = "ml_env: the wheels' CUDA runtime %s fits the driver's CUDA %s" % (out["runtime"], drv)
    return out
