"""Smoke test of a new ml_env generation, run with that generation's python.

usage: python ml_env_smoke.py '{"imports": [...], "expect_torch_cuda": "13.0", "expect_sm": "12.0"}'
Prints one JSON line: {"ok": bool, "versions": {...}, "errors": [...]}; exits 1 when not ok.
"""
import importlib
import json
import sys
import traceback


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
