"""Smoke test of a new ml_env generation, run with that generation's python.

usage: python ml_env_smoke.py '{"imports": [...], "expect_torch_cuda": "13.0", "expect_sm": "12.0",
                                "min_versions": {"nvidia-cudnn-cu13": "9.10.2"},
                                "kernels": ["torch", "flashinfer", "sgl_kernel"]}'
Prints one JSON line: {"ok": bool, "versions": {...}, "errors": [...]}; exits 1 when not ok.
min_versions: installed distributions (their metadata, not an import) that must be at least
that version; each one found is listed in versions as "dist:<name>".
kernels: with expect_sm set, one real kernel of each of these libraries runs on the GPU and is
compared with a float32 torch reference ("kernels" in the output; roles/ml_env/README.md).
"""
import importlib
import importlib.metadata
import importlib.util
import json
import math
import re
import sys
import time
import traceback

KERNELS = ("torch", "flashinfer", "sgl_kernel")
EPS = 1e-6
# largest |kernel - reference| over the reference's largest |value|: bf16 keeps 8 significant
# bits (2**-8 = 0.004), fp16 11 (0.0005); a kernel built for another SM gives garbage or NaN
TOLERANCE = {"torch": 0.02, "flashinfer": 0.01, "sgl_kernel": 0.01}
HINTS = {
    "torch": "install a torch build for SM {sm} and the driver's CUDA (ml_env_expect_torch_cuda)",
    "flashinfer": "the FlashInfer packages lack kernels for SM {sm}: install flashinfer-cubin and "
                  "flashinfer-jit-cache of flashinfer-python's version built for it (from 0.7.0 the "
                  "shim and the provider for the SM, flashinfer-jit-cache-sm120f on SM 12.x), or a "
                  "CUDA toolkit for FlashInfer's JIT (docs/ml-env-checks.md)",
    "sgl_kernel": "sgl-kernel is built for another GPU arch or CUDA: install the sgl-kernel wheel "
                  "for SM {sm} and this torch's CUDA",
}
# the distributions that install the binaries of each library built on torch, in the order looked for
DISTS = {"flashinfer": ("flashinfer-python",), "sgl_kernel": ("sglang-kernel", "sgl-kernel")}


def _release(version):
    """(9, 24, 0, 43) of "9.24.0.43": the release numbers, enough to order wheel versions.
    Not packaging.version: this runs alone with the new generation's python, which need not
    have packaging installed (the controller's filters use it: flags/requirements.py)."""
    m = re.match(r"^\s*v?(\d+(?:\.\d+)*)", str(version))
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def check_min_versions(wanted, out, version_of=importlib.metadata.version):
    """Each distribution of `wanted` installed at `>=` its minimum, else an error in `out`."""
    for dist, minimum in sorted((wanted or {}).items()):
        try:
            found = version_of(dist)
        except importlib.metadata.PackageNotFoundError:
            out["ok"] = False
            out["errors"].append(f"{dist} is not installed; at least {minimum} is required")
            continue
        out["versions"][f"dist:{dist}"] = found
        if _release(found) < _release(minimum):
            out["ok"] = False
            out["errors"].append(f"{dist} {found} is installed; at least {minimum} is required")


def rel_err(diff_max, ref_max):
    """max|kernel - reference| / max|reference|; NaN or inf stays so (and fails the judgement)."""
    if not math.isfinite(diff_max) or not math.isfinite(ref_max):
        return float("nan")
    return diff_max / ref_max if ref_max > 0 else diff_max


def judge(lib, kernel, err, sm, tolerance=None):
    """None when `err` is within the library's tolerance, else the error naming all of it."""
    tol = TOLERANCE[lib] if tolerance is None else tolerance
    if err <= tol:  # False for NaN
        return None
    return (f"kernel {lib} ({kernel}): result differs from the float32 torch reference by {err:.3g} "
            f"(tolerance {tol}): {HINTS[lib].format(sm=sm)}")


def plan(names, imports, installed=lambda n: importlib.util.find_spec(n) is not None):
    """(library, action) for each library of `names`: "run" when installed (an import error is
    then a finding), "missing" when not installed but in `imports`, else "skip"; "unknown"."""
    def action(n):
        if n not in KERNELS:
            return "unknown"
        return "run" if installed(n) else "missing" if n in imports else "skip"
    return [(n, action(n)) for n in names]


def gpu_gate(sm, have_torch, cuda_available):
    """Why no kernel can run although `sm` expects a GPU; None when they can (or none is expected)."""
    if not sm:
        return None
    if not have_torch:
        return f"kernels: expect_sm {sm} is set but torch cannot be imported, so no GPU kernel can run"
    if not cuda_available:
        return (f"kernels: expect_sm {sm} is set but torch.cuda.is_available() is False: no GPU is "
                "visible to the generation's python (driver, CUDA_VISIBLE_DEVICES) or torch has no CUDA")
    return None


def failure_cause(text):
    """The line of a kernel's traceback that says why it failed: an undefined symbol (a binary
    linked against another torch) wherever it is in the exception chain, else the last line.
    sgl_kernel's loader ends on "No module named 'common_ops'" after its own attempts failed."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in lines:  # an exception's own line ("ImportError: ..."), not the source shown above it
        if "undefined symbol" in line and re.match(r"^(- )?[\w.]*(Error|Exception): ", line):
            return line.lstrip("- ")
    return lines[-1] if lines else "no traceback"


def torch_pin_hint(lib, torch_version, requires=importlib.metadata.requires,
                   version_of=importlib.metadata.version):
    """When the installed distribution of `lib` pins torch exactly (sglang-kernel 0.4.10:
    torch==2.14.1) and another torch is installed, the sentence that says so; else None. Its
    binaries use torch's C++ API, which changes between torch releases: a --no-deps install, or
    a torch changed after it, leaves a library that cannot load."""
    for dist in DISTS.get(lib, ()):
        try:
            reqs, version = requires(dist) or [], version_of(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        for req in reqs:
            pin = re.match(r"^torch\s*==\s*([^\s;,]+)\s*$", req)
            if pin and str(torch_version).split("+")[0] != pin.group(1):
                return (f"{dist} {version} is built against torch {pin.group(1)} (it requires "
                        f"torch=={pin.group(1)}) and torch {torch_version} is installed: install the torch it "
                        f"pins, or the {dist} built for torch {torch_version}")
        return None
    return None


def _rmsnorm_case(torch, dev):
    x = torch.randn(4, 1024, device=dev, dtype=torch.float16)
    w = (torch.rand(1024, device=dev) + 0.5).half()
    xf = x.float()
    return x, w, xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()


def case_torch(torch, dev):
    a = torch.randn(256, 256, device=dev).bfloat16()
    b = torch.randn(256, 256, device=dev).bfloat16()
    return lambda: a @ b, a.float() @ b.float()


def case_flashinfer(torch, dev):
    try:  # flashinfer.norm.rmsnorm, also exported as flashinfer.rmsnorm
        fn = importlib.import_module("flashinfer.norm").rmsnorm
    except (ImportError, AttributeError):
        fn = importlib.import_module("flashinfer").rmsnorm
    x, w, ref = _rmsnorm_case(torch, dev)
    return lambda: fn(x, w, EPS), ref


def case_sgl_kernel(torch, dev):
    fn = importlib.import_module("sgl_kernel").rmsnorm
    x, w, ref = _rmsnorm_case(torch, dev)
    return lambda: fn(x, w, EPS), ref


CASES = {"torch": ("bf16 matmul 256x256", case_torch),
         "flashinfer": ("flashinfer.norm.rmsnorm fp16 (4, 1024)", case_flashinfer),
         "sgl_kernel": ("sgl_kernel.rmsnorm fp16 (4, 1024)", case_sgl_kernel)}


def run_kernel(lib, torch, dev, sm):
    """{ok, kernel, ms, max_err} of one library's kernel on `dev`, or {ok: False, error}."""
    kernel, case = CASES[lib]
    try:
        torch.manual_seed(0)
        call, ref = case(torch, dev)
        sync = torch.cuda.synchronize if dev.startswith("cuda") else (lambda: None)
        sync()
        start = time.perf_counter()
        got = call()
        sync()
        ms = (time.perf_counter() - start) * 1e3
        err = rel_err((got.float() - ref).abs().max().item(), ref.abs().max().item())
    except BaseException:  # noqa: BLE001 - any failure of the kernel is the finding
        cause = failure_cause(traceback.format_exc())
        hint = torch_pin_hint(lib, getattr(torch, "__version__", "")) or HINTS[lib].format(sm=sm)
        return {"ok": False, "kernel": kernel, "error": f"kernel {lib} ({kernel}) failed: {cause}: {hint}"}
    return verdict(lib, kernel, ms, err, sm)


def verdict(lib, kernel, ms, err, sm):
    """The JSON result of a kernel that ran: {ok, kernel, ms, max_err[, error]}."""
    error = judge(lib, kernel, err, sm)
    res = {"ok": error is None, "kernel": kernel, "ms": round(ms, 3),
           "max_err": float(f"{err:.3g}") if math.isfinite(err) else str(err)}
    return dict(res, error=error) if error else res


def check_kernels(cfg, out, dev="cuda"):
    """The kernels step: only with expect_sm set; adds out["kernels"] and its errors."""
    sm = cfg.get("expect_sm") or ""
    if not sm:
        return
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            torch = importlib.import_module("torch")
        except BaseException:  # noqa: BLE001 - gpu_gate names it
            torch = None
    gate = gpu_gate(sm, torch is not None, torch is not None and torch.cuda.is_available())
    if gate:
        out["ok"] = False
        out["errors"].append(gate)
        return
    out["kernels"] = {}
    for lib, action in plan(cfg.get("kernels", KERNELS), cfg.get("imports", [])):
        if action == "unknown":
            res = {"ok": False, "error": f"kernels: unknown library {lib!r} (known: {', '.join(KERNELS)})"}
        elif action == "skip":
            res = {"ok": None, "skipped": f"{lib} is not installed in this generation"}
        elif action == "missing":
            res = {"ok": False, "error": f"kernel {lib} ({CASES[lib][0]}) cannot run: {lib} is in the "
                                        "smoke imports but not installed: add it to ml_env_packages"}
        else:
            res = run_kernel(lib, torch, dev, sm)
        out["kernels"][lib] = res
        if res["ok"] is False:
            out["ok"] = False
            out["errors"].append(res["error"])


def main():
    cfg = json.loads(sys.argv[1])
    out = {"ok": True, "python": sys.version.split()[0], "versions": {}, "errors": []}
    for name in cfg.get("imports", []):
        try:
            mod = importlib.import_module(name)
            out["versions"][name] = str(getattr(mod, "__version__", "unknown"))
        except BaseException:  # noqa: BLE001 - any import failure is the finding
            out["ok"] = False
            last = traceback.format_exc().strip().splitlines()[-1]
            out["errors"].append(f"import {name} failed: {last}")
    check_min_versions(cfg.get("min_versions"), out)
    torch = sys.modules.get("torch")
    want_cuda = cfg.get("expect_torch_cuda") or ""
    if torch is not None:
        out["torch_cuda"] = getattr(torch.version, "cuda", None)
        if want_cuda and out["torch_cuda"] != want_cuda:
            out["ok"] = False
            out["errors"].append(
                f"torch {torch.__version__} is built for CUDA {out['torch_cuda']}, "
                f"the toolkit is CUDA {want_cuda}: install a cu{want_cuda.replace('.', '')} build"
            )
        want_sm = cfg.get("expect_sm") or ""
        if want_sm:
            arch = f"sm_{want_sm.replace('.', '')}"
            try:
                archs = torch.cuda.get_arch_list()
            except Exception as exc:  # noqa: BLE001
                archs = []
                out["errors"].append(f"torch.cuda.get_arch_list() failed: {exc}")
            out["torch_arch_list"] = archs
            if arch not in archs:
                out["ok"] = False
                out["errors"].append(
                    f"{arch} is not in torch's arch list {archs}: this torch build cannot run "
                    "on the host's GPUs (use a build that includes it, e.g. a cu130 nightly)"
                )
    elif want_cuda:
        out["ok"] = False
        out["errors"].append("torch is not installed, but a CUDA version was expected")
    check_kernels(cfg, out)
    print(json.dumps(out, sort_keys=True))
    sys.exit(0 if out["ok"] else 1)


if __name__ == "__main__":
    main()
