#!/usr/bin/env bash
# Builds, on the controller, what the lent GPU machine lacks for the smoke test's kernels step
# (tests/device/smoke_kernels.py), within the device tool's 64 MiB: the production profile's
# flashinfer-python and sglang-kernel (inventories/production/group_vars/blackwell/ml_env.yml)
# cut down to what one rmsnorm needs, as two archives in .devcarry/ (ignored by git; name it in
# the device call's carry):
#   flashinfer.tar.xz  every .py of flashinfer-python, its headers (include, cutlass, cccl,
#                      spdlog), the norm sources of its JIT and apache-tvm-ffi (the wheel is
#                      65 MB; the JIT builds norm from these, as on a host without the jit-cache)
#   sgl-kernel.tar.xz  sglang-kernel's python and its sm90 common_ops only (the wheel is 373 MB,
#                      342 of them flash_ops, which rmsnorm does not load)
# Then on the GPU machine: bash tests/device/run_smoke_kernels.sh
# usage: bash tests/device/carry_kernels.sh [FLASHINFER_VERSION] [SGLANG_KERNEL_VERSION] [PYTHON_VERSION]
set -euo pipefail
FI=${1:-0.7.2} SK=${2:-0.4.10} PY=${3:-3.12}
DEST=.devcarry
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux_2_17_x86_64 -d "$WORK/whl" \
  "flashinfer-python==$FI" "sglang-kernel==$SK" "apache-tvm-ffi>=0.1.11,<0.2"
mkdir -p "$WORK/fi" "$WORK/sk" "$DEST"
(cd "$WORK/fi" && unzip -q "$WORK"/whl/flashinfer_python-*.whl && unzip -q -o "$WORK"/whl/apache_tvm_ffi-*.whl)
(cd "$WORK/fi" && {
  find flashinfer -name '*.py'
  find flashinfer/data/include flashinfer/data/cutlass/include flashinfer/data/cutlass/tools/util/include \
    flashinfer/data/cccl/cub flashinfer/data/cccl/libcudacxx/include flashinfer/data/cccl/thrust \
    flashinfer/data/spdlog/include -type f
  ls flashinfer/data/csrc/*.h flashinfer/data/csrc/norm.cu flashinfer/data/csrc/flashinfer_norm_binding.cu
  find flashinfer_python-*.dist-info tvm_ffi apache_tvm_ffi-*.dist-info -type f
} | sort -u >"$WORK/fi.list" && tar cJf "$OLDPWD/$DEST/flashinfer.tar.xz" -T "$WORK/fi.list")
(cd "$WORK/sk" && unzip -q "$WORK"/whl/sglang_kernel-*.whl -x 'sgl_kernel/flash_ops*' 'sgl_kernel/sm100/*' \
  'sgl_kernel/infllm_ops*' 'sgl_kernel/flashmla_ops*' && tar cJf "$OLDPWD/$DEST/sgl-kernel.tar.xz" .)
ls -l "$DEST"
