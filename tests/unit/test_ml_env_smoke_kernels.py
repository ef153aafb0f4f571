"""ml_env's smoke test, its kernels step (roles/ml_env/files/ml_env_smoke.py): with expect_sm set,
a real kernel of torch, FlashInfer and sgl-kernel runs on the GPU against a float32 torch
reference. Here (no GPU) the decisions are tested: which libraries run, when no kernel can run,
the tolerance judgement and the errors it writes; the kernels themselves run in
tests/device/smoke_kernels.py (its reading: tests/fixtures/device/h100-smoke-kernels.txt)."""

import json
import math
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMOKE = os.path.join(ROOT, "roles", "ml_env", "files", "ml_env_smoke.py")
ROLE = os.path.join(ROOT, "roles", "ml_env")
from ansible_collections.sglang.deploy.roles.ml_env.files import ml_env_smoke as m  # noqa: E402  after SMOKE, which the tests also run as a script


def smoke(cfg):
    """The script as install.yml runs it, with no GPU visible to it."""
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, SMOKE, json.dumps(cfg)], capture_output=True, text=True,
                          check=False, env=env)
    return proc.returncode, json.loads(proc.stdout)


def test_cpu_profile_runs_no_kernel_and_adds_no_error():
    rc, out = smoke({"imports": [], "kernels": list(m.KERNELS)})
    assert rc == 0 and out["ok"] and out["errors"] == [] and "kernels" not in out
    rc, out = smoke({"imports": [], "expect_sm": "", "kernels": list(m.KERNELS)})
    assert rc == 0 and "kernels" not in out


def test_expected_gpu_without_cuda_is_an_error_naming_it():
    # torch absent here, or present without a visible GPU: either way no kernel can run
    rc, out = smoke({"imports": [], "expect_sm": "9.0"})
    assert rc == 1 and not out["ok"] and "kernels" not in out
    assert [e for e in out["errors"] if e.startswith("kernels: expect_sm 9.0 is set but torch")]


def test_gpu_gate():
    assert m.gpu_gate("", False, False) is None
    assert m.gpu_gate("12.0", True, True) is None
    assert "torch cannot be imported" in m.gpu_gate("12.0", False, False)
    assert "torch.cuda.is_available() is False" in m.gpu_gate("12.0", True, False)


def test_plan_runs_installed_skips_absent_and_refuses_listed_missing():
    def installed(name):
        return name in {"torch", "sgl_kernel"}

    assert m.plan(m.KERNELS, [], installed) == [("torch", "run"), ("flashinfer", "skip"), ("sgl_kernel", "run")]
    assert m.plan(m.KERNELS, ["torch", "flashinfer", "sglang"], installed) == [
        ("torch", "run"), ("flashinfer", "missing"), ("sgl_kernel", "run")]
    assert m.plan(["sgl_kernel", "vllm"], [], installed) == [("sgl_kernel", "run"), ("vllm", "unknown")]
    assert m.plan([], ["flashinfer"], installed) == []


def test_rel_err():
    assert m.rel_err(0.5, 4.0) == 0.125
    assert m.rel_err(0.5, 0.0) == 0.5
    assert math.isnan(m.rel_err(float("nan"), 4.0)) and math.isnan(m.rel_err(1.0, float("inf")))


def test_judgement_within_and_beyond_tolerance():
    assert m.judge("torch", "bf16 matmul", 0.0017, "12.0") is None
    assert m.judge("torch", "bf16 matmul", m.TOLERANCE["torch"], "12.0") is None
    err = m.judge("flashinfer", "flashinfer.norm.rmsnorm", 0.9, "12.0")
    assert err.startswith("kernel flashinfer (flashinfer.norm.rmsnorm): result differs from the float32 "
                          "torch reference by 0.9 (tolerance 0.01)")
    assert "SM 12.0" in err and "flashinfer-cubin" in err and "flashinfer-jit-cache" in err
    assert "another GPU arch" in m.judge("sgl_kernel", "sgl_kernel.rmsnorm", 0.02, "12.0")
    assert m.judge("sgl_kernel", "sgl_kernel.rmsnorm", 0.02, "12.0", tolerance=0.05) is None
    assert "by nan" in m.judge("torch", "bf16 matmul", float("nan"), "9.0")


def test_verdict_is_json_and_fails_on_nan():
    ok = m.verdict("torch", "bf16 matmul 256x256", 1.23456, 0.00171234, "9.0")
    assert ok == {"ok": True, "kernel": "bf16 matmul 256x256", "ms": 1.235, "max_err": 0.00171}
    bad = m.verdict("sgl_kernel", "sgl_kernel.rmsnorm fp16 (4, 1024)", 0.1, float("nan"), "12.0")
    assert bad["ok"] is False and bad["max_err"] == "nan" and "kernel sgl_kernel" in bad["error"]
    assert json.loads(json.dumps(bad, allow_nan=False)) == bad


def test_role_passes_the_kernels_list():
    defaults = yaml.safe_load(open(os.path.join(ROLE, "defaults", "main.yml"), encoding="utf-8"))
    spec = yaml.safe_load(open(os.path.join(ROLE, "meta", "argument_specs.yml"), encoding="utf-8"))
    option = spec["argument_specs"]["main"]["options"]["ml_env_smoke_kernels"]
    assert defaults["ml_env_smoke_kernels"] == option["default"] == option["choices"] == list(m.KERNELS)
    install = open(os.path.join(ROLE, "tasks", "install.yml"), encoding="utf-8").read()
    assert "'kernels': ml_env_smoke_kernels" in install


def test_h100_reading_passes_torch_and_names_the_missing_libraries():
    # tests/fixtures/device/h100-smoke-kernels.txt: the device script on the lent H100 (torch only)
    path = os.path.join(ROOT, "tests", "fixtures", "device", "h100-smoke-kernels.txt")
    lines = dict(line.split(": ", 1) for line in open(path, encoding="utf-8").read().splitlines())
    default, required = json.loads(lines["default"]), json.loads(lines["required"])
    torch_run = default["kernels"]["torch"]
    assert default["ok"] and m.judge("torch", torch_run["kernel"], torch_run["max_err"], "9.0") is None
    assert default["kernels"]["flashinfer"]["ok"] is None and default["kernels"]["sgl_kernel"]["ok"] is None
    assert not required["ok"] and [e.split(" (")[0] for e in required["errors"]] == ["kernel flashinfer",
                                                                                   "kernel sgl_kernel"]


def test_failure_cause_finds_the_undefined_symbol_in_the_chain():
    # sgl_kernel's loader (0.4.10) as it failed on the lent H100: the symbol is in the message of
    # an earlier attempt, the last line only says that the fallback import failed too
    chained = ("Traceback (most recent call last):\n  File \"/tmp/site/sgl_kernel/__init__.py\", line 19\n"
               "ImportError: \n[sgl_kernel] CRITICAL: Could not load any common_ops library!\n"
               "Error details from previous import attempts:\n"
               "- ImportError: /tmp/site/sgl_kernel/sm90/common_ops.abi3.so: undefined symbol: "
               "_ZN3c104cuda19CUDAErrorLogCaptureC1Ev\n- ModuleNotFoundError: No module named 'common_ops'\n")
    assert m.failure_cause(chained) == ("ImportError: /tmp/site/sgl_kernel/sm90/common_ops.abi3.so: undefined "
                                        "symbol: _ZN3c104cuda19CUDAErrorLogCaptureC1Ev")
    assert m.failure_cause("Traceback\nRuntimeError: CUDA error: no kernel image\n") == \
        "RuntimeError: CUDA error: no kernel image"
    assert m.failure_cause("") == "no traceback"


def _metadata(dists):
    def requires(dist):
        if dist not in dists:
            raise m.importlib.metadata.PackageNotFoundError(dist)
        return dists[dist][1]

    def version_of(dist):
        if dist not in dists:
            raise m.importlib.metadata.PackageNotFoundError(dist)
        return dists[dist][0]
    return requires, version_of


def test_torch_pin_hint_names_both_torch_versions():
    sk = _metadata({"sglang-kernel": ("0.4.10", ["torch==2.14.1"])})
    hint = m.torch_pin_hint("sgl_kernel", "2.11.0+cu130", *sk)
    assert hint == ("sglang-kernel 0.4.10 is built against torch 2.14.1 (it requires torch==2.14.1) and torch "
                    "2.11.0+cu130 is installed: install the torch it pins, or the sglang-kernel built for torch "
                    "2.11.0+cu130")
    # the pinned torch, with or without its local build label, is no mismatch
    assert m.torch_pin_hint("sgl_kernel", "2.14.1+cu130", *sk) is None
    assert m.torch_pin_hint("sgl_kernel", "2.14.1", *sk) is None
    # the older distribution name, a conditional or loose requirement, no distribution at all
    old = _metadata({"sgl-kernel": ("0.3.21", ["torch==2.9.1"])})
    assert "sgl-kernel 0.3.21 is built against torch 2.9.1" in m.torch_pin_hint("sgl_kernel", "2.11.0", *old)
    loose = _metadata({"sglang-kernel": ("0.4.10", ["torch>=2.14", "torch==2.9.1; extra == 'old'"])})
    assert m.torch_pin_hint("sgl_kernel", "2.11.0", *loose) is None
    assert m.torch_pin_hint("sgl_kernel", "2.11.0", *_metadata({})) is None
    # FlashInfer requires torch unpinned: its failures keep their own hint
    fi = _metadata({"flashinfer-python": ("0.7.2", ["torch", "apache-tvm-ffi<0.2,>=0.1.11"])})
    assert m.torch_pin_hint("flashinfer", "2.11.0", *fi) is None


def test_a_kernel_that_cannot_load_is_refused_naming_the_symbol_and_the_pin(monkeypatch):
    class FakeTorch:
        __version__ = "2.11.0+cu130"

        @staticmethod
        def manual_seed(_):
            return None

    def case(_torch, _dev):
        try:
            raise ImportError("/x/sm90/common_ops.abi3.so: undefined symbol: _ZN3c10")
        except ImportError as exc:
            raise ModuleNotFoundError("No module named 'common_ops'") from exc

    monkeypatch.setitem(m.CASES, "sgl_kernel", ("sgl_kernel.rmsnorm fp16 (4, 1024)", case))
    res = m.run_kernel("sgl_kernel", FakeTorch, "cpu", "9.0")
    assert res["ok"] is False and "undefined symbol: _ZN3c10" in res["error"]
    assert res["error"].startswith("kernel sgl_kernel (sgl_kernel.rmsnorm fp16 (4, 1024)) failed: ImportError")
    monkeypatch.setattr(m, "torch_pin_hint", lambda lib, version: f"{lib} pins another torch than {version}")
    res = m.run_kernel("sgl_kernel", FakeTorch, "cpu", "9.0")
    assert res["error"].endswith("sgl_kernel pins another torch than 2.11.0+cu130")


def _carried_reading():
    """tests/fixtures/device/h100-smoke-kernels-carried.txt by section: the lent H100 with
    FlashInfer 0.7.2 and sglang-kernel 0.4.10 carried (tests/device/carry_kernels.sh)."""
    path = os.path.join(ROOT, "tests", "fixtures", "device", "h100-smoke-kernels-carried.txt")
    sections, name = {}, None
    for line in open(path, encoding="utf-8").read().splitlines():
        if line.startswith("## "):
            name = line[3:]
            sections[name] = []
        else:
            sections[name].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


def test_h100_carried_reading_flashinfer_passes_cold_then_warm():
    reading = _carried_reading()
    runs = []
    for section in ("smoke-cold.txt", "smoke-warm.txt"):
        lines = dict(line.split(": ", 1) for line in reading[section].splitlines() if line[:8] in ("default:", "required"))
        runs += [json.loads(lines["default"]), json.loads(lines["required"])]
    for out in runs:
        fi = out["kernels"]["flashinfer"]
        assert fi["ok"] and m.judge("flashinfer", fi["kernel"], fi["max_err"], "9.0") is None, fi
    # the first call of the first process built FlashInfer's norm module (its JIT, for sm_90a);
    # every later process loaded it from the JIT cache
    cold, warm = runs[0]["kernels"]["flashinfer"]["ms"], [r["kernels"]["flashinfer"]["ms"] for r in runs[1:]]
    assert cold > 10_000 and max(warm) < 1_000, (cold, warm)
    assert "code=sm_90a" in reading["jit-flags.txt"] and "90a/cached_ops/norm/norm.so" in reading["jit-flags.txt"]


def test_h100_carried_reading_sgl_kernel_refused_naming_the_symbol_and_torch_pin():
    reading = _carried_reading()
    cold = json.loads([line for line in reading["smoke-cold.txt"].splitlines() if line.startswith("default:")][0][9:])
    assert cold["ok"] is False and cold["kernels"]["sgl_kernel"]["ok"] is False
    assert cold["kernels"]["torch"]["ok"] and cold["versions"]["torch"] == "2.11.0+cu130"
    # that run's step quoted the loader's last line only; the same traceback through today's step
    # names the undefined symbol, and sglang-kernel 0.4.10's own metadata (Requires-Dist:
    # torch==2.14.1) names the torch it pins against the one installed
    cause = m.failure_cause(reading["sgl-kernel-import.txt"])
    assert cause == ("ImportError: /tmp/site/sgl_kernel/sm90/common_ops.abi3.so: undefined symbol: "
                     "_ZN3c104cuda19CUDAErrorLogCaptureC1Ev")
    hint = m.torch_pin_hint("sgl_kernel", cold["versions"]["torch"],
                            *_metadata({"sglang-kernel": ("0.4.10", ["torch==2.14.1"])}))
    assert hint.startswith("sglang-kernel 0.4.10 is built against torch 2.14.1") and "torch 2.11.0+cu130 is installed" in hint


def test_h100_carried_reading_of_run_smoke_kernels_names_the_cause_and_the_pin():
    # the second reading, by tests/device/run_smoke_kernels.sh with today's step, on a fresh machine
    reading = _carried_reading()
    outs = []
    for run in ("cold", "warm"):
        text = reading[f"run_smoke_kernels.sh smoke-kernels-{run}.txt"]
        outs += [json.loads(line.split(": ", 1)[1]) for line in text.splitlines() if line[:8] in ("default:", "required")]
    assert len(outs) == 4
    assert outs[0]["kernels"]["flashinfer"]["ms"] > 10_000 and all(o["kernels"]["flashinfer"]["ms"] < 1_000 for o in outs[1:])
    for out in outs:
        assert out["kernels"]["flashinfer"]["ok"] and out["kernels"]["torch"]["ok"]
        assert out["errors"] == [out["kernels"]["sgl_kernel"]["error"]] == [
            "kernel sgl_kernel (sgl_kernel.rmsnorm fp16 (4, 1024)) failed: ImportError: "
            "/tmp/site/sgl_kernel/sm90/common_ops.abi3.so: undefined symbol: _ZN3c104cuda19CUDAErrorLogCaptureC1Ev: "
            "sglang-kernel 0.4.10 is built against torch 2.14.1 (it requires torch==2.14.1) and torch 2.11.0+cu130 "
            "is installed: install the torch it pins, or the sglang-kernel built for torch 2.11.0+cu130"]
    assert "code=sm_90a" in reading["run_smoke_kernels.sh machine.txt"]
