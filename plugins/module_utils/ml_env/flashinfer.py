# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPU architectures a generation's prebuilt FlashInfer kernels carry, read from the files
the packages installed (their RECORD), never from a version string.

Plain functions (no Ansible, no file access beyond ``read_records``): the module
plugins/modules/ml_env_flashinfer_arch.py calls them on the host with a new generation's
installed file lists; tests/unit/test_ml_env_flashinfer.py feeds them tests/fixtures/ml-env/.

FlashInfer #3294: flashinfer-cubin 0.6.11 carried kernels for Sm100a, Sm100f and Sm103a only,
none for sm_120, and NVFP4 MoE produced garbage on RTX PRO 6000; flashinfer-python and
flashinfer-cubin are versioned separately. The layouts read (FlashInfer's repository and the
flashinfer-cubin 0.6.13 wheel's own file list):
  * flashinfer-cubin: ``flashinfer_cubin/cubins/<hash>/<group>/.../<kernel>_sm100f.cubin``,
    ``fmhaSm100aKernel_...cubin`` (trtllm-gen names the architecture in the file name);
  * flashinfer-jit-cache: ``flashinfer_jit_cache/jit_cache/<module>/<module>.so``, the SM-specific
    modules named ``gemm_sm120``, ``fp4_gemm_cutlass_sm120``, ``fused_moe_120``,
    ``fp4_quantization_120`` (flashinfer/aot.py and flashinfer/jit/).
A module without an architecture in its name (``norm``, ``sampling``) is built for the wheel's
whole architecture list and is not counted for any SM: only the names are read, not the
architectures inside each ``.so``'s fatbin.

From flashinfer 0.7.0 ``flashinfer-jit-cache`` is a shim without kernels and each architecture's
modules are a provider distribution, ``flashinfer-jit-cache-<tag>``
(``flashinfer_jit_cache/providers/sm120f/jit_cache/<module>/<module>.so``): a provider's modules
are built for its one target and count for every SM that target serves (ml_env/flashinfer_kernels.py,
FlashInfer's rule). A provider without the shim, or kernel packages whose versions do not match
flashinfer-python's, are refused too; the refusal names the distribution to install.
"""

import csv
import glob
import io
import os
import re

from ansible_collections.sglang.deploy.plugins.module_utils.ml_env import flashinfer_kernels as fk
from ansible_collections.sglang.deploy.plugins.module_utils.ml_env.cuda import canonical

KERNEL_DISTS = ("flashinfer-cubin", "flashinfer-jit-cache")
_KERNEL_SUFFIXES = (".cubin", ".so", ".fatbin")
# "Sm100a", "sm100f", "sm_120", "SM120": the architecture a kernel file names
_SM_IN_NAME = re.compile(r"sm_?(\d{2,3})[a-z]?(?![0-9])", re.I)
# jit-cache modules that end in a bare architecture: fused_moe_120, fp4_quantization_120f
_ARCH_SUFFIX_MODULE = re.compile(r"^(?:fused_moe|fp4_quantization)_(\d{2,3})[a-z]?$")
_DIST_INFO = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)-(?P<version>[^-]+)\.dist-info$")


def _sm(digits):
    number = int(digits)
    return "%d.%d" % (number // 10, number % 10)


def normalize_sm(value):
    """'12.0', 12, 'sm_120', '120' -> '12.0'; '' when empty."""
    text = str(value if value is not None else "").strip()
    if not text:
        return ""
    m = re.match(r"^(?:sm_?)?(\d+)(?:[._](\d+))?[a-z]?$", text, re.I)
    if not m:
        raise ValueError("%r is not a GPU compute capability (write it as major.minor, e.g. \"12.0\")" % value)
    if m.group(2) is not None:
        return "%d.%d" % (int(m.group(1)), int(m.group(2)))
    return _sm(m.group(1)) if int(m.group(1)) >= 20 else "%d.0" % int(m.group(1))


def archs_of(path):
    """The SMs ('12.0') a kernel file's path names; empty for a file that is no kernel."""
    path = str(path).replace("\\", "/")
    if not path.endswith(_KERNEL_SUFFIXES):
        return set()
    # SM numbers below 30 are no GPU of these toolkits: "sm12x" (cute_sm12x_gemm) names a family
    found = {_sm(m.group(1)) for m in _SM_IN_NAME.finditer(path) if int(m.group(1)) >= 30}
    parent = path.rsplit("/", 2)[-2] if "/" in path else ""
    m = _ARCH_SUFFIX_MODULE.match(parent)
    if m:
        found.add(_sm(m.group(1)))
    return found


def _kernel_dists(installed):
    """The kernel-bearing distributions installed: cubin, the jit-cache (or its shim), providers."""
    names = [n for n in KERNEL_DISTS if n in (installed or {})]
    return names + sorted(n for n in (installed or {}) if fk.provider_tag(n))


def _carried(name, info, want):
    """(kernel files, SMs named, files for ``want``) of one distribution's file list. A provider's
    modules are built for its one target: they count for every SM that target serves."""
    tag = fk.provider_tag(name)
    kernels, archs, with_sm = 0, set(), 0
    for path in info.get("files") or []:
        if not str(path).endswith(_KERNEL_SUFFIXES):
            continue
        kernels += 1
        named = archs_of(path)
        archs |= named
        with_sm += want in named or bool(tag and want and fk.serves(tag, want))
    if tag and kernels:
        archs.add(_sm(tag[2:].rstrip("af")))
    return kernels, archs, with_sm


def _fix(installed, want, cuda):
    fi = ((installed or {}).get(fk.PYTHON) or {}).get("version", "")
    shim = ((installed or {}).get(fk.SHIM) or {}).get("version", "")
    if not cuda and fk.label(shim).startswith("cu"):
        cuda = "%s.%s" % (fk.label(shim)[2:-1], fk.label(shim)[-1])
    return fk.install_hint(fi or shim, cuda, want)


def judge(installed, sm, cuda=""):
    """The verdict over ``installed`` ({distribution: {"version": str, "files": [path, ...]}}).

    Returns {ok, judged, sm, dists: {name: {version, kernels, archs, with_sm}}, message}. Refused
    (ok false) when a prebuilt kernel package is installed and none of their kernel files serves
    ``sm``, when a jit-cache provider is installed without the shim FlashInfer finds it through,
    and when the kernel packages' versions do not match flashinfer-python's; not judged when no
    SM is declared or no prebuilt kernel package is installed (FlashInfer then compiles its
    kernels for the GPU it runs on). ``cuda``: torch's CUDA ("13.0"), for the package to name.
    """
    want = normalize_sm(sm)
    dists = {}
    for name in _kernel_dists(installed):
        info = installed[name]
        kernels, archs, with_sm = _carried(name, info, want)
        dists[name] = {"version": info.get("version", "?"), "kernels": kernels,
                       "archs": sorted(archs, key=lambda s: tuple(int(x) for x in s.split("."))), "with_sm": with_sm}
    out = {"ok": True, "judged": False, "sm": want, "dists": dists}
    if not want:
        out["message"] = "ml_env: no SM declared (ml_env_expect_sm is empty): FlashInfer's kernels are not judged"
        return out
    if not dists:
        out["message"] = ("ml_env: no prebuilt FlashInfer kernels installed (%s): FlashInfer compiles its kernels "
                          "for the GPU at first use" % ", ".join(KERNEL_DISTS))
        return out
    out["judged"] = True
    tag = "sm_" + want.replace(".", "")
    carried = "; ".join("%s %s: %d kernel files, architectures named %s, %d for %s"
                        % (n, d["version"], d["kernels"], ", ".join(d["archs"]) or "none", d["with_sm"], tag)
                        for n, d in sorted(dists.items()))
    versions = {n: i.get("version", "") for n, i in (installed or {}).items()
                if n in (fk.PYTHON, fk.CUBIN, fk.SHIM) or fk.provider_tag(n)}
    problems = fk.version_problems(versions)
    providers = [n for n in dists if fk.provider_tag(n)]
    if providers and fk.SHIM not in dists:
        problems.insert(0, "%s is installed without the %s shim: FlashInfer finds providers only through the "
                        "shim (flashinfer/jit/env.py), which reads flashinfer_jit_cache.__version__: the "
                        "provider's namespace alone has none, and FlashInfer's import breaks"
                        % (", ".join(providers), fk.SHIM))
    if sum(d["with_sm"] for d in dists.values()) == 0:
        out["ok"] = False
        out["message"] = (
            "ml_env: FlashInfer's prebuilt kernels in this generation carry nothing for SM %s (%s): on these GPUs "
            "FlashInfer would load kernels built for another architecture or compile every module at first use "
            "(FlashInfer #3294: flashinfer-cubin 0.6.11 had no %s cubins and NVFP4 MoE produced garbage; from "
            "flashinfer 0.7.0 the %s wheel is a shim and each architecture's modules are a distribution of "
            "their own, FlashInfer PRs 4514 and 5096). Fix: install %s, or leave the prebuilt packages out so "
            "that FlashInfer compiles for the GPU."
            % (want, carried, tag, fk.SHIM, _fix(installed, want, cuda)))
    elif problems:
        out["ok"] = False
        out["message"] = ("ml_env: FlashInfer's prebuilt kernel packages do not fit together (%s). Fix: install %s."
                          % ("; ".join(problems), _fix(installed, want, cuda)))
    else:
        out["message"] = "ml_env: FlashInfer's prebuilt kernels carry SM %s (%s)" % (want, carried)
    return out


def read_records(site_packages_glob):
    """{distribution: {"version", "files"}} of the FlashInfer packages (flashinfer-python, the
    kernel packages and every jit-cache provider) under the site-packages directories matching
    ``site_packages_glob``, read from each ``*.dist-info/RECORD``."""
    found = {}
    for site in sorted(glob.glob(site_packages_glob)):
        for entry in sorted(os.listdir(site)):
            m = _DIST_INFO.match(entry)
            if not m:
                continue
            name = canonical(m.group("name"))
            if name not in KERNEL_DISTS and name != fk.PYTHON and not fk.provider_tag(name):
                continue
            record = os.path.join(site, entry, "RECORD")
            files = []
            if os.path.isfile(record):
                with open(record, encoding="utf-8") as handle:
                    files = [row[0] for row in csv.reader(io.StringIO(handle.read())) if row]
            found[name] = {"version": m.group("version"), "files": files}
    return found
