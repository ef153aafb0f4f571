#!/usr/bin/env bash
# Runs the gpu_host role for real on the lent GPU machine (device tool), from the repo root:
#   bash tests/device/run_gpu_host.sh        (OUT=<dir> collects the outputs)
# Needs the Ansible wheels carried in .whl (see the device README). Exit 0 only if the H200 run
# passes, is idempotent and the 8x SM120 run is refused with the expected message.
set -u
OUT=${OUT:-/tmp/gpu_host_out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH ANSIBLE_FORCE_COLOR=0 \
  ANSIBLE_NOCOLOR=1 ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0
PB="python3 /tmp/site/bin/ansible-playbook -i localhost, -c local"
# the repository is the collection sglang.deploy: link it where ansible.cfg's collections_path looks
# (scripts/collections.sh does the same on the controller; ./collections does not travel here)
mkdir -p collections/ansible_collections/sglang && ln -sfn ../../.. collections/ansible_collections/sglang/deploy
status=0
{
  nvidia-smi --query-gpu=index,name,compute_cap,driver_version,memory.total,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,pci.bus_id --format=csv
} >"$OUT/nvidia-smi-query-fields.csv" 2>&1
{
  echo "## uname -r"; uname -r
  echo "## /proc/cmdline"; cat /proc/cmdline
  echo "## /sys/class/iommu"; ls /sys/class/iommu 2>&1
  echo "## /sys/kernel/iommu_groups"; ls /sys/kernel/iommu_groups 2>&1 | head
  echo "## lspci"; command -v lspci || echo "lspci: not installed"
  echo "## modinfo"; command -v modinfo || echo "modinfo: not installed"
  echo "## nvidia-smi"; command -v nvidia-smi
  echo "## ansible"; python3 /tmp/site/bin/ansible --version | head -1
} >"$OUT/host-extra.txt" 2>&1

t0=$(date +%s.%N)
$PB tests/device/gpu_host_local.yml >"$OUT/run-h200.log" 2>&1 || { echo "FAIL: H200 run"; status=1; }
t1=$(date +%s.%N)
$PB tests/device/gpu_host_local.yml >>"$OUT/run-h200.log" 2>&1 || { echo "FAIL: H200 second run"; status=1; }
grep -E "^localhost .*changed=0 " "$OUT/run-h200.log" | tail -1 | grep -q . \
  && echo "OK: second run changed=0" || { echo "FAIL: second run not changed=0"; status=1; }
$PB --check tests/device/gpu_host_local.yml >"$OUT/run-h200-check.log" 2>&1 \
  || { echo "FAIL: check mode"; status=1; }
cp /etc/ansible/facts.d/gpu_host.fact "$OUT/gpu_host.fact.json" 2>/dev/null \
  || { echo "FAIL: no local fact"; status=1; }

$PB tests/device/gpu_host_expect_blackwell.yml >"$OUT/run-expect-8xsm120.log" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q "gpu_host_expected_gpu_count: expected 8 GPU(s), found 1" "$OUT/run-expect-8xsm120.log" \
   && grep -q "gpu_host_expected_sm: expected SM 12.0, found 9.0" "$OUT/run-expect-8xsm120.log"; then
  echo "OK: 8x SM120 expectation refused (rc $rc)"
else
  echo "FAIL: 8x SM120 expectation not refused as expected (rc $rc)"; status=1
fi
echo "first run wall: $(python3 -c "print(round($t1-$t0,1))") s"
grep -E "^localhost" "$OUT"/run-*.log
exit $status
