#!/usr/bin/env bash
# The admission on the lent GPU machine (device tool), from a copy of the repo's root:
#   bash tests/device/run_gpu_admit.sh        (OUT=<dir> collects the outputs)
# Runs the measurement script 3 times (the spread, the wall time), once with a wrong GEMM
# reference (the check must fail), then the role: first run measures, second is changed=0,
# check mode, and a profile the machine cannot meet (refused, naming the figure, not measured again).
# Needs the Ansible wheels in .whl for the role part (see the device README).
set -u
OUT=${OUT:-/tmp/gpu_admit_out}
mkdir -p "$OUT"
M=roles/gpu_admit/files/gpu_admit_measure.py
status=0
{
  echo "## nvidia-smi"; nvidia-smi --query-gpu=index,name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv
  echo "## tools"; for t in dcgmi journalctl dmesg; do command -v $t || echo "$t: not installed"; done
  echo "## dmesg"; dmesg 2>&1 | tail -3
  echo "## python"; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())'
} >"$OUT/host.txt" 2>&1
nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER >"$OUT/nvidia-smi-q-ecc.txt" 2>&1
for i in 1 2 3; do
  t0=$(date +%s.%N)
  python3 $M --repeat 3 >"$OUT/measure-run$i.json" 2>"$OUT/measure-run$i.err" || { echo "FAIL: measure run $i"; status=1; }
  echo "measure run $i wall: $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s" | tee -a "$OUT/times.txt"
done
python3 $M --repeat 1 --burn-seconds 1 --no-collective --gemm-reference-fault 0.05 >"$OUT/measure-gemm-fault.json" 2>&1
if python3 -c "import json,sys; g=json.load(open(sys.argv[1]))['gpus'][0]['gemm']; print('gemm with a wrong reference: ok=%s, worst error %s' % (g['ok'], g['max_normalised_error'])); sys.exit(1 if g['ok'] else 0)" \
  "$OUT/measure-gemm-fault.json" >>"$OUT/times.txt"; then echo "OK: a wrong GEMM reference fails the check"; else echo "FAIL: a wrong reference passed"; status=1; fi
# the cross-GPU code with 2 ranks sharing the one GPU over gloo: it runs, it is not a measurement
python3 $M --repeat 1 --burn-seconds 1 --smoke-world 2 >"$OUT/measure-smoke.json" 2>"$OUT/measure-smoke.err" || { echo "FAIL: smoke run"; status=1; }

if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 \
    ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0
  PB="python3 /tmp/site/bin/ansible-playbook -i localhost, -c local tests/device/gpu_admit_local.yml"
  # the repository is the collection sglang.deploy: link it where ansible.cfg's collections_path looks
  # (scripts/collections.sh does the same on the controller; ./collections does not travel here)
  mkdir -p collections/ansible_collections/sglang && ln -sfn ../../.. collections/ansible_collections/sglang/deploy
  mkdir -p /var/lib/prometheus/node-exporter
  t0=$(date +%s.%N)
  $PB >"$OUT/role-run1.log" 2>&1 || { echo "FAIL: role first run"; status=1; }
  echo "role first run wall: $(python3 -c "print(round($(date +%s.%N)-$t0,1))") s" | tee -a "$OUT/times.txt"
  $PB >"$OUT/role-run2.log" 2>&1 || { echo "FAIL: role second run"; status=1; }
  grep -qE "^localhost .*changed=0 " "$OUT/role-run2.log" && echo "OK: second run changed=0" || { echo "FAIL: second run changed"; status=1; }
  $PB --check >"$OUT/role-check.log" 2>&1 || { echo "FAIL: check mode"; status=1; }
  $PB -e '{"gpu_admit_expect": {"h2d_gbps": {"expect": 200, "tolerance": 0.1}, "memory_gbps": {"expect": 9000, "tolerance": 0.1}}}' \
    >"$OUT/role-refused.log" 2>&1 && { echo "FAIL: unmeetable profile admitted"; status=1; }
  grep -q "host-to-device copy, pinned" "$OUT/role-refused.log" && grep -q "is refused" "$OUT/role-refused.log" \
    && echo "OK: unmeetable profile refused naming the figure" || { echo "FAIL: refusal message"; status=1; }
  $PB >"$OUT/role-run3.log" 2>&1 || { echo "FAIL: role run after the refusal"; status=1; }
  cp /etc/ansible/facts.d/gpu_admit.fact "$OUT/gpu_admit.fact.json"
  cp /var/lib/prometheus/node-exporter/gpu_admit.prom "$OUT/gpu_admit.prom"
  grep -hE "^localhost" "$OUT"/role-*.log
fi
exit $status
