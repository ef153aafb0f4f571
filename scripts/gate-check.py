#!/usr/bin/env python3
"""Prove the speed gates on the demo hosts: they never fail unchanged hosts, and they catch a
real slowdown.

  1. `--runs` runs of playbooks/verify.yml against the unchanged demo hosts: every gate that
     failed is counted (the target is 0).
  2. One host is slowed down for real (`docker update --cpus 0.5` on its container), verify.yml
     runs `--slow-runs` times: each run must fail that host on the regression gate, with its
     figure and baseline quoted.
  3. The throttle is lifted and verify.yml runs once more: every host passes again.

Exit 0 only if all three hold. Run by `make gate-check` (after `make demo`).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGRESSION = "regression limit"


def verify(args, run_id):
    """One verify.yml run; returns (rc, seconds, {host: host report})."""
    cmd = [args.ansible_playbook, "-i", args.inventory, "playbooks/verify.yml",
           "-e", "sglang_verify_run_id=%s" % run_id, "-e", "sglang_verify_plot=false"]
    t = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    took = time.monotonic() - t
    path = os.path.join(args.report_dir, run_id, "report.json")
    hosts = {}
    if os.path.exists(path):
        with open(path) as fh:
            hosts = json.load(fh).get("hosts") or {}
    if not hosts:
        sys.stdout.write(proc.stdout[-4000:])
        raise SystemExit("gate-check: verify.yml wrote no report for run %s (rc %d)" % (run_id, proc.returncode))
    return proc.returncode, took, hosts


def figure(rep):
    s = (rep.get("result") or {}).get("single_stream") or {}
    base = (rep.get("baseline_stats") or {}).get("decode_tps") or {}
    load = [v for v in rep.get("verdicts") or [] if v.get("gate") == "throughput_at_load"]
    return "%s tok/s (runs %s), baseline %s%s" % (
        s.get("decode_tps"), s.get("decode_tps_runs"),
        "median %s of %s" % (base.get("median"), base.get("n")) if base else "collecting",
        "; throughput_at_load %s: %s" % (load[0]["level"], "; ".join(
            "%s %s (limit %s%s)" % (r["gate"], r["value"], r["limit"], ", " + r["note"] if r.get("note") else "")
            for r in load[0]["figures"])) if load else "")


def docker_cpus(container, cpus):
    subprocess.run(["docker", "update", "--cpus", str(cpus), container], check=True,
                   stdout=subprocess.DEVNULL)


def docker_nano_cpus(container):
    """The container's CPU limit in billionths of a CPU (0: no limit)."""
    out = subprocess.run(["docker", "inspect", "-f", "{{.HostConfig.NanoCpus}}", container], check=True,
                         stdout=subprocess.PIPE, text=True).stdout
    return int(out.strip() or 0)


def lift_throttle(container, nano_before):
    """Put the CPU limit back as it was. `docker update --cpus 0` leaves a limit in place (seen
    with Docker 20.10), so a container that had none gets every CPU of this machine, which is the
    same as none; the limit is read back to be sure."""
    cpus = nano_before / 1e9 if nano_before else os.cpu_count()
    docker_cpus(container, "%g" % cpus)
    now = docker_nano_cpus(container)
    if now != int(round(cpus * 1e9)):
        raise SystemExit("gate-check: %s still has a CPU limit of %g CPUs after lifting the throttle" % (
            container, now / 1e9))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--slow-runs", type=int, default=2)
    ap.add_argument("--slow-host", default="sglang-local-1")
    ap.add_argument("--slow-cpus", default="0.5")
    ap.add_argument("--inventory", default="inventories/local")
    ap.add_argument("--ansible-playbook", default=os.path.join(ROOT, ".venv", "bin", "ansible-playbook"))
    ap.add_argument("--report-dir", default=os.path.join(ROOT, "reports"))
    args = ap.parse_args()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    problems = []

    print("== %d verify.yml runs on the unchanged demo hosts" % args.runs)
    false_failures = 0
    for i in range(args.runs):
        rc, took, hosts = verify(args, "gatecheck-%s-unchanged-%02d" % (stamp, i + 1))
        for host, rep in sorted(hosts.items()):
            verdict = "PASS" if rep.get("passed") else "FAIL"
            print("run %2d  %-16s %s  %5.1f s  %s" % (i + 1, host, verdict, took, figure(rep)))
            for f in rep.get("failures") or []:
                print("        FAIL: %s" % f)
            false_failures += 0 if rep.get("passed") else 1
        if rc != 0 and all(rep.get("passed") for rep in hosts.values()):
            problems.append("run %d: verify.yml exited %d with every gate passed" % (i + 1, rc))
    print("gate failures on unchanged hosts: %d of %d host runs" % (false_failures, args.runs * len(hosts)))
    if false_failures:
        problems.append("%d gate failure(s) on unchanged hosts" % false_failures)

    print("== %s throttled to %s CPU (docker update --cpus)" % (args.slow_host, args.slow_cpus))
    caught = 0
    nano_before = docker_nano_cpus(args.slow_host)
    docker_cpus(args.slow_host, args.slow_cpus)
    try:
        for i in range(args.slow_runs):
            _rc, took, hosts = verify(args, "gatecheck-%s-throttled-%02d" % (stamp, i + 1))
            rep = hosts.get(args.slow_host) or {}
            hit = [f for f in rep.get("failures") or [] if REGRESSION in f]
            caught += 1 if hit else 0
            print("run %2d  %-16s %s  %5.1f s  %s" % (i + 1, args.slow_host, "caught" if hit else "MISSED",
                                                       took, figure(rep)))
            for f in hit:
                print("        FAIL: %s" % f)
            for host, other in sorted(hosts.items()):
                if host != args.slow_host and not other.get("passed"):
                    problems.append("throttled run %d: %s (not throttled) failed: %s" % (
                        i + 1, host, other.get("failures")))
    finally:
        lift_throttle(args.slow_host, nano_before)
    print("regression gate caught the throttled host in %d of %d runs" % (caught, args.slow_runs))
    if caught != args.slow_runs:
        problems.append("the regression gate missed the throttled host in %d of %d runs" % (
            args.slow_runs - caught, args.slow_runs))

    print("== throttle lifted")
    _rc, took, hosts = verify(args, "gatecheck-%s-restored" % stamp)
    for host, rep in sorted(hosts.items()):
        print("        %-16s %s  %5.1f s  %s" % (host, "PASS" if rep.get("passed") else "FAIL", took, figure(rep)))
        if not rep.get("passed"):
            problems.append("after the throttle was lifted, %s failed: %s" % (host, rep.get("failures")))

    for p in problems:
        print("gate-check: " + p)
    print("gate-check: %s" % ("FAILED" if problems else "passed"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
