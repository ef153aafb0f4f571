"""Where ml_env runs its CUDA-runtime and FlashInfer-architecture checks: before the install and
inside the build block, ahead of the record that makes a generation switchable (a refusal goes to
the rescue, which removes the generation and leaves the link); and why the local profile's CPU
hosts pass them by design."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "roles" / "ml_env" / "tasks" / "install.yml"


def names(tasks):
    return [t.get("name", "") for t in tasks]


def test_checks_run_before_the_install_and_before_the_generation_is_marked_complete():
    tasks = yaml.safe_load(INSTALL.read_text(encoding="utf-8"))
    top = names(tasks)
    pre = next(i for i, n in enumerate(top) if n.startswith("Compare the CUDA runtime the spec's wheels need"))
    build = top.index("Build the generation (only when the spec is new)")
    assert pre < build
    block = tasks[build]["block"]
    inner = names(block)
    after_pip = next(i for i, n in enumerate(inner) if n.startswith("Compare the CUDA runtime the installed wheels"))
    flashinfer = next(i for i, n in enumerate(inner) if n.startswith("Check that FlashInfer's prebuilt kernels"))
    pip = next(i for i, n in enumerate(inner) if n.startswith("Install the requirements with their dependencies"))
    smoke = next(i for i, n in enumerate(inner) if n.startswith("Smoke-test the generation"))
    mark = inner.index("Mark the generation complete")
    assert pip < after_pip < smoke < mark and pip < flashinfer < smoke
    assert block[flashinfer]["sglang.deploy.ml_env_flashinfer_arch"]["sm"] == "{{ ml_env_expect_sm }}"
    assert "Remove the failed generation so the next run retries it" in names(tasks[build]["rescue"])


def test_the_local_profiles_cpu_hosts_are_not_judged():
    local = ROOT / "inventories" / "local" / "group_vars"
    ml_env = yaml.safe_load((local / "all" / "ml_env.yml").read_text(encoding="utf-8"))
    gpu_host = yaml.safe_load((local / "local_cpu" / "gpu_host.yml").read_text(encoding="utf-8"))
    # no declared SM: the FlashInfer check is skipped; a CPU test host: gpu_host reports no driver,
    # so ml_env_driver_cuda_version is empty and the CUDA-runtime check is skipped
    assert not ml_env.get("ml_env_expect_sm") and "ml_env_driver_cuda_version" not in ml_env
    assert gpu_host["gpu_host_cpu_test_host"] is True
    defaults = yaml.safe_load((ROOT / "roles" / "ml_env" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    assert defaults["ml_env_expect_sm"] == ""
    assert "cuda_driver_version" in defaults["ml_env_driver_cuda_version"]
