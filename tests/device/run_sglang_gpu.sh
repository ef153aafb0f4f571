#!/usr/bin/env bash
# On the lent GPU machine, from the repository root, after tests/device/carry_sglang.sh here (the
# device call names .devcarry/sglang in its carry): unpacks the carried SGLang and ansible-core
# beside the machine's torch, makes this checkout the collection sglang.deploy on the path, and
# runs the readings (tests/device/sglang_gpu_readings.py, arguments passed on) or, with
# VERIFY=1, the project's verify_endpoint.yml against a server started by hand.
# Into OUT (at most 8 files come back): readings.json, env.txt, run.tgz (server logs and the real
# server's fixtures), jitcache.tgz (the JIT caches, to carry next time as .devcarry/sglang/).
set -u
OUT=${OUT:-/tmp/sglang_gpu_out}
mkdir -p "$OUT" /tmp/site /tmp/ac/ansible_collections/sglang
T0=$(date +%s)
for t in .devcarry/sglang/site.tar.xz .devcarry/sglang/ansible.tar.xz; do
  tar xJf "$t" -C /tmp/site || { echo "cannot unpack $t"; exit 1; }
done
[ -f .devcarry/sglang/jitcache.tgz ] && tar xzf .devcarry/sglang/jitcache.tgz -C /tmp
ln -sfn "$PWD" /tmp/ac/ansible_collections/sglang/deploy
echo "unpacked in $(( $(date +%s) - T0 )) s"
export PYTHONPATH=/tmp/site:/tmp/ac PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# the lent machine's rule (NVLink multicast off), also for every process the server starts
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export TVM_FFI_CACHE_DIR=/tmp/jitcache/tvm-ffi TRITON_CACHE_DIR=/tmp/jitcache/triton \
  FLASHINFER_WORKSPACE_BASE=/tmp/jitcache/flashinfer
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader
  nvcc --version | tail -1
  nproc
  python3 - <<'EOF'
import importlib.metadata as m, sys
print(sys.version.split()[0])
for p in ("torch", "triton", "sglang", "sglang-kernel", "flashinfer-python", "transformers", "tokenizers",
          "xgrammar", "apache-tvm-ffi", "ansible-core"):
    try:
        print(p, m.version(p))
    except m.PackageNotFoundError:
        print(p, "missing")
EOF
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
status=0
python3 tests/device/sglang_gpu_readings.py --out "$OUT/run" "$@" || status=$?
mv "$OUT/run/readings.json" "$OUT/" 2>/dev/null
tar czf "$OUT/run.tgz" -C "$OUT" run && rm -rf "$OUT/run"
[ -d /tmp/jitcache ] && tar czf "$OUT/jitcache.tgz" -C /tmp jitcache
ls -l "$OUT"
exit $status
