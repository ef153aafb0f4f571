"""ml_env's smoke test (roles/ml_env/files/ml_env_smoke.py): ml_env_min_versions refuses a new
generation whose distribution is older than asked (cuDNN >= 9.10.2 for FlashInfer's cuDNN FP4
GEMM), or missing, and lists what it found."""

import importlib.metadata
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMOKE = os.path.join(ROOT, "roles", "ml_env", "files", "ml_env_smoke.py")
from ansible_collections.sglang.deploy.roles.ml_env.files import ml_env_smoke as m  # noqa: E402  after SMOKE, which the tests also run as a script


def run(wanted, installed):
    out = {"ok": True, "versions": {}, "errors": []}

    def version_of(dist):
        if dist not in installed:
            raise importlib.metadata.PackageNotFoundError(dist)
        return installed[dist]

    m.check_min_versions(wanted, out, version_of)
    return out


def test_new_enough_passes_and_is_listed():
    out = run({"nvidia-cudnn-cu13": "9.10.2"}, {"nvidia-cudnn-cu13": "9.24.0.43"})
    assert out == {"ok": True, "versions": {"dist:nvidia-cudnn-cu13": "9.24.0.43"}, "errors": []}


def test_older_or_missing_fails_naming_both_versions():
    out = run({"nvidia-cudnn-cu13": "9.10.2"}, {"nvidia-cudnn-cu13": "9.8.0.87"})
    assert not out["ok"] and out["errors"] == ["nvidia-cudnn-cu13 9.8.0.87 is installed; at least 9.10.2 is required"]
    out = run({"nvidia-cudnn-cu13": "9.10.2"}, {})
    assert not out["ok"] and "is not installed" in out["errors"][0]
    assert run({"x": "9.10.2"}, {"x": "9.10.2"})["ok"] and not run({"x": "9.10.2"}, {"x": "9.10.1"})["ok"]


def test_script_checks_real_distributions_of_its_interpreter():
    cfg = {"imports": [], "min_versions": {"pytest": "1.0", "packaging": "999"}}
    proc = subprocess.run([sys.executable, SMOKE, json.dumps(cfg)], capture_output=True, text=True, check=False)
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and "dist:pytest" in out["versions"]
    assert out["errors"] == [f"packaging {importlib.metadata.version('packaging')} is installed; at least 999 is required"]
