"""playbooks/sweep.yml on one canary of the rollout scenario (runs before test_rollout.py, while
every host serves the inventory's flags): one candidate per outcome (molecule/rollout/vars/sweep.yml),
the sweep killed mid-way and resumed, and the canary back on its own configuration, serving,
with the other hosts untouched."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request

import yaml

from ansible_collections.sglang.deploy.molecule.shared.fleet import ROOT, TINY_MODEL, ask, figure, ip_of, playbook, playbook_command, sh, unit_state, unit_text  # noqa: E402

testinfra_hosts = ["molecule-rollout-1"]

HOSTS = ["molecule-rollout-1", "molecule-rollout-2", "molecule-rollout-3"]
CANARY = HOSTS[2]
SWEEP_FILE = ROOT / "molecule" / "rollout" / "vars" / "sweep.yml"
RESULTS = ROOT / "reports" / "sweeps" / "molecule-canary" / CANARY


# a credential in the dp 2 candidate's environment (molecule/rollout/vars/sweep.yml)
TOKEN = next(c["env"]["HF_TOKEN"] for c in yaml.safe_load(SWEEP_FILE.read_text())["sweep_candidates"]
             if c["name"] == "dp 2")
# both runs at -vvv: Ansible prints every module's arguments and results (invocation.module_args)
SWEEP_ARGS = ("-l", CANARY, "-e", f"@{SWEEP_FILE}", "-vvv")


def sweep(expect_rc=0):
    return playbook("playbooks/sweep.yml", {}, expect_rc, args=SWEEP_ARGS)


def finished_records():
    out = {}
    for path in RESULTS.glob("candidate-*.json"):
        record = json.loads(path.read_text())
        if record.get("status") == "finished":
            out[record["label"]] = record
    return out


def test_sweep_classifies_each_candidate_resumes_and_puts_the_canary_back():
    shutil.rmtree(RESULTS, ignore_errors=True)
    for h in HOSTS:  # config.json only: passes SGLang's parser, cannot load
        sh(h, f"mkdir -p /data/models/broken && cp {TINY_MODEL}/config.json /data/models/broken/")
    before = {h: unit_state(h) for h in HOSTS}
    unit_before = unit_text(CANARY)
    started = time.monotonic()

    # the first run, killed (SIGKILL, as a lost controller would be) once two candidates finished
    argv, env = playbook_command("playbooks/sweep.yml", {}, args=SWEEP_ARGS)
    with open(ROOT / "reports" / "sweep-first-run.log", "w", encoding="utf-8") as log:
        proc = subprocess.Popen(argv, env=env, cwd=str(ROOT), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        deadline = time.monotonic() + 900
        while len(finished_records()) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    # a record the killed run was already writing may still land (a candidate refused offline
    # finishes within a second of the one before it): what counts is what is on disk once settled
    first, settled = finished_records(), time.monotonic()
    while time.monotonic() - settled < 3:
        time.sleep(0.5)
        now = finished_records()
        if set(now) != set(first):
            first, settled = now, time.monotonic()
    assert len(first) >= 2, (ROOT / "reports" / "sweep-first-run.log").read_text()[-4000:]

    # the rerun runs only what had not finished
    _, out, took = sweep()
    records = finished_records()
    for label, record in first.items():
        assert records[label]["finished"] == record["finished"] and records[label]["attempts"] == record["attempts"], \
            f"{label} ran again although it had finished before the interruption"
    done = re.search(r"candidate\(s\),\s+(\d+)\s+done\s+earlier", out)  # the console may wrap the line
    assert done and int(done.group(1)) == len(first), (sorted(first), done and done.group(0))
    wall = time.monotonic() - started

    outcome = {label: r["outcome"] for label, r in records.items()}
    assert outcome["unknown schedule policy"] == "rejected", records["unknown schedule policy"]
    assert "fastest" in records["unknown schedule policy"]["reason"]
    assert outcome["model without weights"] == "crashed", records["model without weights"]
    crash = records["model without weights"]["details"]
    assert crash["journal_tail"] and "Cannot find any model weights" in crash["error"], crash
    assert outcome["RMSNorm epsilon 1000"] == "wrong", records["RMSNorm epsilon 1000"]
    assert "answered" in records["RMSNorm epsilon 1000"]["reason"]
    # the quiet failure: every probe passes, the quality reference does not
    degraded = records["RMSNorm epsilon 0.001"]
    assert outcome["RMSNorm epsilon 0.001"] == "degraded", degraded
    assert "diverge from the last-known-good reference" in degraded["reason"], degraded
    assert "continuation token" in degraded["reason"] and "reference token" in degraded["reason"], degraded
    assert degraded["details"]["summary"]["top1"] < 1.0, degraded
    working = {label: r for label, r in records.items() if r["outcome"] == "working"}
    assert set(working) == {"baseline", "dp 2"}, outcome
    medians = [r["figures"]["decode_tps"]["median"] for r in working.values()]
    assert all(m > 0 for m in medians) and medians[0] != medians[1], medians
    # the two replicas were measured at every level, as the baseline was
    assert [lv["concurrency"] for lv in working["dp 2"]["figures"]["throughput"]] == [1, 2], working["dp 2"]
    summary = json.loads((RESULTS / "sweep-summary.json").read_text())
    # the same records ranked by the objective not declared (throughput at 2, no target)
    other = summary["other_objective"]
    assert other["objective"]["name"] == "throughput" and other["objective"]["concurrency"] == 2, other
    assert {r["label"] for r in other["ranking"]} == {"baseline", "dp 2"}, other
    assert "## Under the other objective" in (RESULTS / "sweep.md").read_text()
    assert summary and (RESULTS / "sweep.md").is_file() and (RESULTS / "winner.yml").is_file()
    assert (RESULTS / "sweep.png").stat().st_size > 1000
    assert "baseline" in (RESULTS / "sweep.md").read_text()
    assert "0.001" not in (RESULTS / "winner.yml").read_text(), "the degraded candidate was picked"
    assert all(e["label"] != "RMSNorm epsilon 0.001" or e.get("rank") is None for e in summary.get("ranking", [])), summary

    # the canary is back on its own configuration and serves; the other hosts were not touched
    assert unit_text(CANARY) == unit_before
    assert ask(ip_of(CANARY)) == "OK"
    with urllib.request.urlopen(f"http://{ip_of(CANARY)}:30000/server_info", timeout=30) as resp:
        info = json.loads(resp.read())
    assert info.get("dp_size") == 1 and info.get("schedule_policy") != "fastest", info
    assert info["model_path"] == TINY_MODEL
    for h in HOSTS[:2]:
        assert unit_state(h)[0] == before[h][0], f"{h} was restarted by a sweep of {CANARY}"

    # the candidate's token: in neither run's -vvv output, no record or report, no file the
    # modules or an async job left on the canary (while it ran, it was in the candidate's
    # environment file only, which the canary's own configuration replaced)
    leaked = [name for name, text in (("first run", (ROOT / "reports" / "sweep-first-run.log").read_text()),
                                      ("resumed run", out)) if TOKEN in text]
    leaked += [str(p) for p in RESULTS.rglob("*") if p.is_file() and TOKEN.encode() in p.read_bytes()]
    leaked += sh(CANARY, f"grep -rlF {TOKEN} /etc /var/lib /root/.ansible /root/.ansible_async /tmp "
                         "2>/dev/null || true").split()
    assert leaked == [], leaked

    started_runs = [r for r in records.values() if r.get("stage") != "rules" and r["outcome"] != "rejected"]
    overhead = sorted(r["duration_s"] - (r.get("start_s") or 0) for r in started_runs)
    per_candidate = ", ".join(f"{r['label']} {r['duration_s']:.0f} s" for r in started_runs)
    figure(f"sweep of {len(records)} candidates on the canary (killed after {len(first)}, resumed): "
           f"wall {wall:.0f} s (resumed run {took:.0f} s); per started candidate {per_candidate}; "
           f"beyond the server's own start (judging, measuring, recording), median {overhead[len(overhead) // 2]:.0f} s")
