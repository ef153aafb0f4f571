"""ml_env's FlashInfer-architecture check: the SMs a generation's prebuilt kernels carry, read
from the files installed (tests/fixtures/ml-env/: flashinfer-cubin 0.6.13's real file list; the
flashinfer-jit-cache 0.7.2 shim and its SM120 provider, and a pre-0.7.0 jit-cache, built from
FlashInfer's packaging and aot.py: README.md there), never from a version string."""

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
# before 0.7.0: one flashinfer-jit-cache wheel with every architecture's modules
JIT_SM120 = {"version": "0.6.18.post1+cu130", "files": files("flashinfer_jit_cache-0.6.18.post1+cu130.files.txt")}
JIT_NO_SM120 = {"version": "0.6.18.post1+cu130", "files": [f for f in JIT_SM120["files"] if "120" not in f]}
# from 0.7.0: the shim (no kernel) and one provider distribution per architecture
SHIM = {"version": "0.7.2+cu130", "files": files("flashinfer_jit_cache-0.7.2+cu130.files.txt")}
SM120F = {"version": "0.7.2+cu130", "files": files("flashinfer_jit_cache_sm120f-0.7.2+cu130.files.txt")}
# the same provider layout for another target (what the shim's dependencies would add beside it)
SM100A = {"version": "0.7.2+cu130", "files": [f.replace("sm120f", "sm100a").replace("_120", "_100")
                                              .replace("sm120", "sm100") for f in SM120F["files"]]}
FI_072 = {"version": "0.7.2", "files": ["flashinfer/__init__.py"]}


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
    assert "flashinfer-jit-cache 0.6.18.post1+cu130" in verdict["message"]
    # before the providers: the fix is the one wheel of flashinfer-python's version
    assert "Fix: install flashinfer-jit-cache==0.6.18.post1+cu130 from https://flashinfer.ai/whl/cu130" \
        in verdict["message"]


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
    write_dist(site, "flashinfer_jit_cache-0.6.18.post1+cu130.dist-info", JIT_SM120["files"])
    result = run_module(ml_env_flashinfer_arch, {"venv": str(tmp_path), "sm": "12.0"})
    # the cubin 0.6.13 and the jit-cache 0.6.18.post1 beside flashinfer-python 0.7.2: refused by version
    assert result["failed"] and "flashinfer-cubin 0.6.13 is not flashinfer-python's 0.7.2" in result["msg"]
    assert result["dists"]["flashinfer-jit-cache"]["with_sm"] == 6


def test_the_module_passes_a_generation_without_flashinfer(tmp_path, run_module):
    result = run_module(ml_env_flashinfer_arch, {"venv": str(tmp_path), "sm": "12.0"}, check_mode=True)
    assert not result.get("failed") and not result["judged"]


# --- flashinfer 0.7.x: the jit-cache shim and its per-architecture providers ---------------------

def test_the_sm120f_provider_carries_sm120_and_every_module_counts():
    verdict = judge({"flashinfer-python": FI_072, "flashinfer-jit-cache": SHIM,
                     "flashinfer-jit-cache-sm120f": SM120F}, "12.0", "13.0")
    assert verdict["ok"] and verdict["judged"], verdict["message"]
    provider = verdict["dists"]["flashinfer-jit-cache-sm120f"]
    # built for its one target: every module of the provider serves SM 12.0, norm and sampling too
    assert provider["kernels"] == provider["with_sm"] == 20
    assert provider["archs"] == ["12.0"]
    assert verdict["dists"]["flashinfer-jit-cache"]["kernels"] == 0


def test_the_family_provider_serves_sm121_but_not_another_major():
    installed = {"flashinfer-python": FI_072, "flashinfer-jit-cache": SHIM, "flashinfer-jit-cache-sm120f": SM120F}
    assert judge(installed, "12.1")["ok"]
    assert not judge(installed, "10.0")["ok"]


def test_the_generic_shim_alone_is_refused_naming_the_provider_to_install():
    verdict = judge({"flashinfer-python": FI_072, "flashinfer-jit-cache": SHIM}, "12.0", "13.0")
    assert verdict["judged"] and not verdict["ok"]
    for part in ("carry nothing for SM 12.0", "flashinfer-jit-cache 0.7.2+cu130: 0 kernel files",
                 "Fix: install flashinfer-jit-cache-sm120f==0.7.2+cu130 beside flashinfer-jit-cache==0.7.2+cu130",
                 "--no-deps from https://flashinfer.ai/whl/cu130", "FlashInfer PRs 4514 and 5096"):
        assert part in verdict["message"], verdict["message"]


def test_the_cuda_label_comes_from_the_shim_when_torch_cuda_is_not_given():
    shim = dict(SHIM, version="0.7.2+cu129")
    verdict = judge({"flashinfer-python": FI_072, "flashinfer-jit-cache": shim}, "12.0")
    assert "flashinfer-jit-cache-sm120f==0.7.2+cu129" in verdict["message"]


def test_another_architectures_provider_is_refused_on_sm120():
    verdict = judge({"flashinfer-python": FI_072, "flashinfer-jit-cache": SHIM,
                     "flashinfer-jit-cache-sm100a": SM100A}, "12.0", "13.0")
    assert not verdict["ok"]
    assert "flashinfer-jit-cache-sm100a 0.7.2+cu130" in verdict["message"]
    assert "architectures named 10.0" in verdict["message"]
    assert "install flashinfer-jit-cache-sm120f==0.7.2+cu130" in verdict["message"]


def test_a_provider_without_the_shim_is_refused():
    verdict = judge({"flashinfer-python": FI_072, "flashinfer-jit-cache-sm120f": SM120F}, "12.0", "13.0")
    assert not verdict["ok"]
    assert "installed without the flashinfer-jit-cache shim" in verdict["message"]
    assert "flashinfer-jit-cache==0.7.2+cu130" in verdict["message"]


@pytest.mark.parametrize("dist,version,needle", [
    ("flashinfer-jit-cache-sm120f", "0.7.2+cu129", "is not the shim's 0.7.2+cu130"),
    ("flashinfer-jit-cache-sm120f", "0.7.1+cu130", "is not flashinfer-python's 0.7.2"),
    ("flashinfer-jit-cache", "0.7.1+cu130", "is not flashinfer-python's 0.7.2"),
])
def test_kernel_packages_of_another_version_are_refused(dist, version, needle):
    installed = {"flashinfer-python": FI_072, "flashinfer-jit-cache": SHIM, "flashinfer-jit-cache-sm120f": SM120F}
    installed[dist] = dict(installed[dist], version=version)
    verdict = judge(installed, "12.0", "13.0")
    assert not verdict["ok"] and needle in verdict["message"], verdict["message"]


def test_a_mismatched_cubin_says_what_each_flashinfer_does():
    installed = {"flashinfer-jit-cache": SHIM, "flashinfer-jit-cache-sm120f": SM120F,
                 "flashinfer-cubin": dict(CUBIN, version="0.7.1")}
    message = judge(dict(installed, **{"flashinfer-python": FI_072}), "12.0")["message"]
    assert "ignores it with a warning" in message and "downloaded at first use" in message
    older = {"flashinfer-python": {"version": "0.7.1", "files": []},
             "flashinfer-jit-cache": dict(SHIM, version="0.7.1+cu130"),
             "flashinfer-jit-cache-sm120f": dict(SM120F, version="0.7.1+cu130"),
             "flashinfer-cubin": dict(CUBIN, version="0.7.0")}
    assert "refuses to import" in judge(older, "12.0")["message"]


def test_the_module_reads_provider_records(tmp_path, run_module):
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    write_dist(site, "flashinfer_python-0.7.2.dist-info", FI_072["files"])
    write_dist(site, "flashinfer_jit_cache-0.7.2+cu130.dist-info", SHIM["files"])
    args = {"venv": str(tmp_path), "sm": "12.0", "cuda": "13.0"}
    result = run_module(ml_env_flashinfer_arch, args)
    assert result["failed"] and "flashinfer-jit-cache-sm120f==0.7.2+cu130" in result["msg"]
    write_dist(site, "flashinfer_jit_cache_sm120f-0.7.2+cu130.dist-info", SM120F["files"])
    result = run_module(ml_env_flashinfer_arch, args)
    assert not result.get("failed"), result["msg"]
    assert result["versions"]["flashinfer-jit-cache-sm120f"] == "0.7.2+cu130"
