"""ml_env's FlashInfer-architecture check: the SMs a generation's prebuilt kernels carry, read
from the files installed (tests/fixtures/ml-env/: flashinfer-cubin 0.6.13's real file list, a
jit-cache list written from FlashInfer's aot.py), never from a version string."""

import os

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.ml_env.flashinfer import (
    archs_of, judge, normalize_sm, read_records)
from ansible_collections.sglang.deploy.plugins.modules import ml_env_flashinfer_arch

FIXTURES = os.path.join(os.path.dirname(os.path.dirname(__file__)), "fixtures", "ml-env")


def files(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


CUBIN = {"version": "0.6.13", "files": files("flashinfer_cubin-0.6.13.files.txt")}
JIT_SM120 = {"version": "0.7.2+cu130", "files": files("flashinfer_jit_cache-cu130-sm120.files.txt")}
JIT_NO_SM120 = {"version": "0.7.2+cu130", "files": [f for f in JIT_SM120["files"] if "120" not in f]}


def test_reads_the_architectures_from_kernel_file_names():
    assert archs_of("flashinfer_cubin/cubins/ab/fmha/trtllm-gen/fmhaSm100aKernel_QE4m3H128.cubin") == {"10.0"}
    assert archs_of("flashinfer_cubin/cubins/ab/gemm-x/Gemm_Bfloat16_t128_schedS_sm100f.cubin") == {"10.0"}
    assert archs_of("flashinfer_jit_cache/jit_cache/gemm_sm120/gemm_sm120.so") == {"12.0"}
    assert archs_of("flashinfer_jit_cache/jit_cache/fused_moe_120/fused_moe_120.so") == {"12.0"}
    assert archs_of("flashinfer_jit_cache/jit_cache/fp4_quantization_103/fp4_quantization_103.so") == {"10.3"}
    # no kernel, or a kernel built for the whole arch list: no SM of its own
    assert archs_of("flashinfer_cubin/cubins/ab/fmha/cute-dsl/x86_64/sm_100a/checksums.txt") == set()
    assert archs_of("flashinfer_jit_cache/jit_cache/norm/norm.so") == set()
    assert archs_of("flashinfer_cubin/cubins/ab/deep-gemm/kernel.fp8_m_grouped_gemm.007404769193.cubin") == set()


def test_flashinfer_cubin_0_6_13_alone_is_refused_on_sm120_naming_what_it_carries():
    verdict = judge({"flashinfer-cubin": CUBIN}, "12.0")
    assert verdict["judged"] and not verdict["ok"]
    assert verdict["dists"]["flashinfer-cubin"]["archs"] == ["10.0", "10.3"]
    assert verdict["dists"]["flashinfer-cubin"]["with_sm"] == 0
    for part in ("SM 12.0", "flashinfer-cubin 0.6.13", "10.0, 10.3", "FlashInfer #3294", "Fix:"):
        assert part in verdict["message"]


def test_the_same_files_pass_on_the_sm_they_carry():
    assert judge({"flashinfer-cubin": CUBIN}, "10.0")["ok"]
    assert judge({"flashinfer-cubin": CUBIN}, "sm_103")["ok"]


def test_a_jit_cache_with_sm120_modules_carries_the_environment():
    verdict = judge({"flashinfer-cubin": CUBIN, "flashinfer-jit-cache": JIT_SM120}, "12.0")
    assert verdict["ok"] and verdict["judged"]
    assert verdict["dists"]["flashinfer-jit-cache"]["with_sm"] == 6
    assert "flashinfer-cubin 0.6.13" in verdict["message"] and ", 0 for sm_120" in verdict["message"]


def test_a_jit_cache_without_them_is_refused_whatever_its_version_says():
    verdict = judge({"flashinfer-cubin": CUBIN, "flashinfer-jit-cache": JIT_NO_SM120}, "12.0")
    assert not verdict["ok"]
    assert "flashinfer-jit-cache 0.7.2+cu130" in verdict["message"]


def test_not_judged_without_a_declared_sm_or_without_prebuilt_kernels():
    # the local profile's CPU hosts: ml_env_expect_sm is empty
    verdict = judge({"flashinfer-cubin": CUBIN}, "")
    assert verdict["ok"] and not verdict["judged"]
    verdict = judge({"flashinfer-python": {"version": "0.7.2", "files": []}}, "12.0")
    assert verdict["ok"] and not verdict["judged"] and "compiles its kernels" in verdict["message"]


@pytest.mark.parametrize("value,expected", [("12.0", "12.0"), (12, "12.0"), ("sm_120", "12.0"), ("SM120", "12.0"),
                                            ("120", "12.0"), ("9.0", "9.0"), ("sm_103a", "10.3"), ("", "")])
def test_normalize_sm(value, expected):
    assert normalize_sm(value) == expected


def write_dist(site, dist_info, names):
    path = site / dist_info
    path.mkdir(parents=True)
    (path / "RECORD").write_text("".join("%s,sha256=x,1\n" % n for n in names), encoding="utf-8")


def test_the_module_reads_the_generations_records_and_refuses(tmp_path, run_module):
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    write_dist(site, "flashinfer_cubin-0.6.13.dist-info", CUBIN["files"])
    write_dist(site, "flashinfer_python-0.7.2.dist-info", ["flashinfer/__init__.py"])
    write_dist(site, "numpy-2.3.5.dist-info", ["numpy/__init__.py"])
    assert set(read_records(str(tmp_path / "lib*" / "python*" / "site-packages"))) == {
        "flashinfer-cubin", "flashinfer-python"}
    result = run_module(ml_env_flashinfer_arch, {"venv": str(tmp_path), "sm": "12.0"})
    assert result["failed"] and result["judged"] and not result["changed"]
    assert result["versions"] == {"flashinfer-cubin": "0.6.13", "flashinfer-python": "0.7.2"}
    write_dist(site, "flashinfer_jit_cache-0.7.2+cu130.dist-info", JIT_SM120["files"])
    result = run_module(ml_env_flashinfer_arch, {"venv": str(tmp_path), "sm": "12.0"})
    assert not result.get("failed") and result["dists"]["flashinfer-jit-cache"]["with_sm"] == 6


def test_the_module_passes_a_generation_without_flashinfer(tmp_path, run_module):
    result = run_module(ml_env_flashinfer_arch, {"venv": str(tmp_path), "sm": "12.0"}, check_mode=True)
    assert not result.get("failed") and not result["judged"]
