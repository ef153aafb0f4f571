#!/usr/bin/env bash
# On the lent GPU machine, from the repository root, after tests/device/carry_kernels.sh here
# (the device call names .devcarry in its carry): unpacks FlashInfer and sglang-kernel beside the
# machine's torch and runs the smoke test's kernels step twice, cold (FlashInfer JIT-compiles its
# norm module: the first call's ms is the build) and warm (from FlashInfer's JIT cache).
# OUT=<dir> collects the outputs.
set -u
OUT=${OUT:-/tmp/smoke_kernels_out}
mkdir -p "$OUT" /tmp/site
tar xJf .devcarry/flashinfer.tar.xz -C /tmp/site && tar xJf .devcarry/sgl-kernel.tar.xz -C /tmp/site || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
{
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  nvcc --version | tail -1
  nproc
} >"$OUT/machine.txt" 2>&1
status=0
for run in cold warm; do
  python3 tests/device/smoke_kernels.py >"$OUT/smoke-kernels-$run.txt" 2>&1 || status=1
done
find ~/.cache/flashinfer -name '*.so' -printf '%P\n' >>"$OUT/machine.txt" 2>&1
grep -h -m1 -o 'code=sm_[0-9a-z]*' -r ~/.cache/flashinfer --include=build.ninja >>"$OUT/machine.txt" 2>&1
cat "$OUT"/machine.txt "$OUT"/smoke-kernels-*.txt
exit $status
