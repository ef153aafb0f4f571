"""Smoke test of a new ml_env generation, run with that generation's python.

usage: python ml_env_smoke.py '{"imports": [...], "expect_torch_cuda": "13.0", "expect_sm": "12.0",
                                "min_versions": {"nvidia-cudnn-cu13": "9.10.2"}}'
Prints one JSON line: {"ok": bool, "versions": {...}, "errors": [...]}; exits 1 when not ok.
min_versions: installed distributions (their metadata, not an import) that must be at least
that version; each one found is listed in versions as "dist:<name>".
"""
import importlib
import importlib.metadata
import json
import re
import sys
import traceback


def _release(version):
    """(9, 24, 0, 43) of "9.24.0.43": the release numbers, enough to order wheel versions.
    Not packaging.version: this runs alone with the new generation's python, which need not
    have packaging installed (the controller's filters use it: sglang_flags_requirements.py)."""
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
    print(json.dumps(out, sort_keys=True))
    sys.exit(0 if out["ok"] else 1)


if __name__ == "__main__":
    main()
