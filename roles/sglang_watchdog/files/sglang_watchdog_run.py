#!/usr/bin/python3
# Installed by roles/sglang_watchdog in /usr/local/lib/sglang-watchdog, beside the module_utils it
# imports (found through PYTHONPATH, set by /usr/local/sbin/sglang-watchdog); run by the timer
# sglang-watchdog.timer (`run`) and by the rollout (`hold`, `release`). It reads the host (the
# unit, a generation probe, the token counter of /metrics, every gateway's listing, the kernel
# log; every sentinel interval the answers to a batch of quality prompts against the current
# release's reference), lets plugins/module_utils/watchdog/decide.py and sentinel.py decide,
# carries out what they decided and keeps the state in <state_dir>/state.json. Its config (/etc/sglang-watchdog/config.json, root 0600)
# and gateways.json hold the gateways' admin key; the server's key is read from the server's own
# keys file when needed. Nothing here prints either. HTTP, /metrics and the gateway's API are the project's own
# module_utils, installed beside this file (roles/sglang_watchdog/tasks/main.yml).
"""sglang-watchdog: the liveness watchdog of one SGLang unit (docs/operations.md, Healing)."""

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time

from ansible_collections.sglang.deploy.plugins.module_utils.watchdog import decide as wd
from ansible_collections.sglang.deploy.plugins.module_utils.watchdog import sentinel as sen
from ansible_collections.sglang.deploy.plugins.module_utils.quality.batch import QualityError, run_staggered
from ansible_collections.sglang.deploy.plugins.module_utils.release.state import current_quality
from ansible_collections.sglang.deploy.plugins.module_utils.gateway.api import Gateway, GatewayError
from ansible_collections.sglang.deploy.plugins.module_utils.gateway.listing import find_worker, serving
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_http import JSON_HEADERS, public_url, request
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_prometheus import parse_prometheus_sums
from ansible_collections.sglang.deploy.plugins.module_utils.watchdog.metrics import render

CONFIG = "/etc/sglang-watchdog/config.json"
PROGRESS = ("sglang:realtime_tokens_total", "sglang:prompt_tokens_total", "sglang:generation_tokens_total")


def log(text):
    print("sglang-watchdog: " + text, flush=True)


def sh(argv, timeout=30):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        return done.returncode, done.stdout + done.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, str(exc)


def write_json(path, data, mode=0o600):
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w") as out:
        json.dump(data, out, indent=1, sort_keys=True)
    os.replace(tmp, path)


def read_json(path):
    try:
        with open(path) as src:
            return json.load(src)
    except (OSError, ValueError):
        return None


class Host:
    """What the watchdog reads and does on its host."""

    def __init__(self, config):
        self.c = config
        self.gateways = [Gateway(u, config.get("gateway_admin_key") or None) for u in config.get("gateways", [])]

    def unit(self):
        _, out = sh(["systemctl", "show", self.c["service"], "-p", "ActiveState",
                     "-p", "MainPID", "-p", "ActiveEnterTimestampMonotonic"])
        props = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
        age = time.monotonic() - int(props.get("ActiveEnterTimestampMonotonic") or 0) / 1e6
        return props.get("ActiveState", "unknown"), int(props.get("MainPID") or 0), time.time() - age

    def api_key(self):
        """The server's key from its own keys file (`api-key: "<JSON string>"`), or None."""
        try:
            with open(self.c.get("keys_file") or "/nonexistent") as src:
                for line in src:
                    if line.startswith("api-key:"):
                        return json.loads(line.split(":", 1)[1].strip())
        except (OSError, ValueError):
            pass
        return None

    def probe(self):
        """(ok, answered_but_refused, why) of one generation through the local endpoint."""
        key = self.api_key()
        headers = {"Authorization": "Bearer " + key} if key else {}
        start = time.monotonic()
        status, text = request(self.c["probe_url"], None, "GET", headers, float(self.c["probe_timeout"]))
        took = time.monotonic() - start
        if status == 200:
            return True, False, "answered in %.1f s" % took
        why = ("no answer in %.0f s (%s)" % (took, text[:120])) if status == 0 else "HTTP %s" % status
        return False, status in (401, 403), why

    def progress(self):
        # a server whose HTTP side hangs does not answer this either: no longer than the probe
        status, text = request(self.c["metrics_url"], None, "GET", {"Accept": "text/plain"},
                               min(5.0, float(self.c["probe_timeout"])))
        if status != 200:
            return None
        sums = parse_prometheus_sums(text, PROGRESS)
        values = [v for v in sums.values() if v is not None]
        return sum(values) if values else None

    def listings(self):
        """{gateway url: the worker as it lists it, or None}; a gateway that does not answer is left out."""
        seen = {}
        for gw in self.gateways:
            try:
                seen[gw.url] = find_worker(gw.workers(), self.c["worker_url"])
            except GatewayError as exc:
                log("gateway %s: %s" % (public_url(gw.url), str(exc)[:200].replace(gw.url, public_url(gw.url))))
        return seen

    def remove(self, seen):
        for gw in self.gateways:
            worker = seen.get(gw.url)
            if worker is not None:
                try:
                    gw.remove(worker["id"])
                    log("removed %s from gateway %s" % (public_url(self.c["worker_url"]), public_url(gw.url)))
                except GatewayError as exc:
                    log("could not remove from %s: %s" % (public_url(gw.url), str(exc)[:200].replace(gw.url, public_url(gw.url))))

    def add(self, seen):
        for gw in self.gateways:
            if gw.url in seen and seen[gw.url] is None:
                try:
                    gw.add(self.c["worker_url"], self.api_key())
                    log("added %s to gateway %s" % (public_url(self.c["worker_url"]), public_url(gw.url)))
                except GatewayError as exc:
                    log("could not add to %s: %s" % (public_url(gw.url), str(exc)[:200].replace(gw.url, public_url(gw.url))))

    def xid_lines(self, since):
        _, out = sh(["journalctl", "-k", "-q", "--no-pager", "-o", "cat", "--since", "@%d" % since])
        return [line for line in out.splitlines() if "NVRM: Xid" in line]

    def pid_state(self, pid):
        try:
            with open("/proc/%d/stat" % pid) as src:
                return src.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError, ValueError):
            return ""

    def capture(self, now, state):
        """What an operator needs after the fact: <state_dir>/incidents/<time>/ (root, 0700)."""
        base = os.path.join(self.c["state_dir"], "incidents")
        path = os.path.join(base, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)))
        os.makedirs(path, mode=0o700, exist_ok=True)
        files = {"journal.txt": ["journalctl", "-u", self.c["service"], "-n", str(self.c["journal_lines"]), "--no-pager"],
                 "kernel-xid.txt": ["sh", "-c", "journalctl -k -q --no-pager -o short-iso | grep -i 'NVRM: Xid' | tail -n 50"]}
        if shutil.which("nvidia-smi"):
            files["nvidia-smi.txt"] = ["nvidia-smi", "-q"]
        py_spy = self.c.get("py_spy") or shutil.which("py-spy")
        pids = self.unit_pids()
        if py_spy and os.path.exists(py_spy):
            for pid in pids:
                files["py-spy-%d.txt" % pid] = [py_spy, "dump", "--pid", str(pid)]
        for name, argv in files.items():
            _, out = sh(argv, timeout=60)
            with open(os.open(os.path.join(path, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as dst:
                dst.write(out)
        write_json(os.path.join(path, "state.json"), dict(state, pids=pids))
        for old in sorted(os.listdir(base))[:-int(self.c["keep_incidents"])]:
            shutil.rmtree(os.path.join(base, old), ignore_errors=True)
        log("captured the journal, the kernel's Xid lines%s in %s"
            % (", py-spy dumps" if py_spy else "", path))

    def unit_pids(self):
        _, out = sh(["systemctl", "show", self.c["service"], "-p", "ControlGroup", "--value"])
        try:
            with open("/sys/fs/cgroup%s/cgroup.procs" % out.strip()) as src:
                return [int(p) for p in src.read().split()]
        except (OSError, ValueError):
            return []

    def post_json(self, path, body):
        """(status, decoded JSON) of a POST to the server, with its key: the client the
        sentinel's batch (plugins/module_utils/quality/batch.py) asks through."""
        key = self.api_key()
        headers = dict(JSON_HEADERS, **({"Authorization": "Bearer " + key} if key else {}))
        status, text = request(self.c["base_url"] + path, body, "POST", headers, float(self.c["sentinel_timeout"]))
        try:
            return status, json.loads(text) if 200 <= status < 300 else {"error": text[:300]}
        except ValueError as exc:
            return 0, {"error": str(exc)}

    def ask(self, refs, top_k):
        """The sentinel's verdict on one batch of its prompts (plugins/module_utils/watchdog/sentinel.py),
        or (None, why) when the batch got no answer to judge (a hang is the probe's business)."""
        start = time.monotonic()
        try:
            rows, _ = run_staggered(self, refs, sen.lengths(refs), int(top_k),
                                    float((self.c.get("sentinel_tolerance") or {}).get("divergence_margin", 0.0)))
        except (QualityError, KeyError, TypeError, ValueError) as exc:
            return None, str(exc)[:300]
        verdict = sen.judge(rows, refs, self.c.get("sentinel_tolerance"))
        verdict["seconds"] = round(time.monotonic() - start, 3)
        return verdict, None

    def incident(self, now, state, record):
        """The capture of a hang plus wrong-answer.json: the sentinel's verdicts, the release,
        the server's /metrics (its sglang: lines) and the unit's journal lines. Its path."""
        self.capture(now, state)
        folder = os.path.join(self.c["state_dir"], "incidents", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)))
        os.makedirs(folder, mode=0o700, exist_ok=True)
        path = os.path.join(folder, "wrong-answer.json")
        status, text = request(self.c["metrics_url"], None, "GET", {"Accept": "text/plain"}, 5.0)
        _, journal = sh(["journalctl", "-u", self.c["service"], "-n", str(self.c["journal_lines"]), "--no-pager",
                         "-o", "short-iso"])
        record.update(metrics=[line for line in text.splitlines() if line.startswith("sglang:")] if status == 200
                      else ["/metrics answered %s" % status], journal=journal.splitlines())
        write_json(path, record)
        log("wrong answers: incident in %s" % path)
        return path

    def incident_outcome(self, path, outcome, verdict, now):
        """The incident says what the restart did."""
        data = read_json(path) if path else None
        if data is None:
            return
        data["after_restart"] = {"outcome": outcome, "at": now, "verdict": verdict}
        write_json(path, data)

    def restart(self):
        sh(["systemctl", "reset-failed", self.c["service"]])
        rc, out = sh(["systemctl", "restart", "--no-block", self.c["service"]])
        log("restart of %s %s" % (self.c["service"], "queued" if rc == 0 else "failed: " + out.strip()))


def run(config, host, now):
    paths = paths_of(config)
    state = read_json(paths["state"]) or wd.new_state()
    before = state.get("note")
    hold = read_json(paths["hold"])
    held = wd.hold_active(hold, now)
    obs = {"held": held, "hold_reason": (hold or {}).get("reason")}
    seen = {}
    if not held:
        active, pid, since = host.unit()
        obs.update(active=active, main_pid=pid, active_since=since)
        if active == "active":
            obs["probe_ok"], obs["probe_busy_ok"], obs["probe_why"] = host.probe()
            obs["progress"] = host.progress()
        seen = host.listings()
        obs["listed_everywhere"] = len(seen) == len(host.gateways) and all(serving(w) for w in seen.values())
        obs["listed_anywhere"] = any(w is not None for w in seen.values())
        old = int(state.get("restart_pid") or 0)
        obs["old_pid_alive"] = bool(old and old != pid and os.path.exists("/proc/%d" % old))
        obs["old_pid_state"] = host.pid_state(old) if obs["old_pid_alive"] else ""
        if not obs.get("probe_ok") and state.get("failures", 0) + 1 >= config["threshold"]:
            obs["xid_lines"] = host.xid_lines(now - config["threshold"] * config["interval"] - 60)
    state, actions = wd.decide(state, obs, config, now)
    carry_out(host, seen, state, actions, now)
    if sen.due(state, obs, actions, now, config.get("sentinel_interval")):
        state, more, record = sentinel(config, host, state, obs, now)
        carry_out(host, seen, state, more, now, record)
        actions = actions + more
    write_json(paths["state"], state)
    listed = {u: (serving(w) and wd.ADD not in actions and wd.REMOVE not in actions) for u, w in seen.items()}
    write_textfile(config, render(config["service"], state, now, bool(obs.get("probe_ok")), held, listed))
    # a line when something was done or the verdict changed (not one per run of a long hold)
    if actions or (state.get("note") != before and not state.get("note", "").startswith("serving")) \
            or state.get("failures"):
        log("%s%s" % (state.get("note"), ("; did: " + ", ".join(actions)) if actions else ""))
    return 0


def carry_out(host, seen, state, actions, now, record=None):
    """The actions in their order; ``record``: the sentinel's incident, written at INCIDENT."""
    s = state.get("sentinel") or {}
    for action in actions:
        if action == wd.REMOVE:
            host.remove(seen)
        elif action == wd.CAPTURE:
            host.capture(now, state)
        elif action == wd.RESTART:
            host.restart()
        elif action == wd.ADD:
            host.add(seen)
        elif action == sen.INCIDENT:
            s["incident"] = host.incident(now, state, record)
        elif action in (sen.CLEARED, sen.STILL_WRONG):
            host.incident_outcome(s.get("incident"), "cleared by the restart" if action == sen.CLEARED
                                  else "still wrong after the restart: given up, out of every gateway",
                                  s.get("last_verdict"), now)


def sentinel(config, host, state, obs, now):
    """One ask of the serving sentinel (plugins/module_utils/watchdog/sentinel.py), repeated at
    once when wrong; (state, actions, the incident's record where one is to be written)."""
    ref, rid = current_quality(config["release_dir"], config["release_fact"])
    refs = sen.pick(ref, config["sentinel_prompts"])
    s = dict(sen.new_sentinel(), **(state.get("sentinel") or {}))
    state["sentinel"] = s
    if len(refs) < 2:
        s.update(last_at=now, note="nothing to ask: release %s keeps no quality reference with 2 prompts or more" % rid)
        return state, [], None
    top_k = (ref or {}).get("top_k") or 5
    first, why = host.ask(refs, top_k)
    retry = None
    if first is not None and not first["ok"]:
        retry, why = host.ask(refs, top_k)
    if first is None or (retry is None and not first["ok"]):
        s.update(last_at=now, note="asked, no answer to judge: %s" % why)
        return state, [], None
    state, actions = sen.decide(state, first, retry, obs, config, now)
    s = state["sentinel"]
    s.update(last_seconds=first["seconds"], last_verdict=retry or first)
    record = None
    if sen.INCIDENT in actions:
        record = {
            "at": now, "host_unit": config["service"], "release": rid,
            "reference": {"recorded_at": (ref or {}).get("recorded_at"), "kept_since": (ref or {}).get("kept_since"),
                          "prompt_set": (ref or {}).get("prompt_set")},
            "main_pid": obs.get("main_pid"), "first": first, "retry": retry,
            "wrong": retry["wrong"][0], "summary": sen.describe(retry),
            "action": "given up (%s)" % state["given_up"]["detail"] if state.get("given_up")
            else "out of every gateway, restarted once"}
    return state, actions, record


def write_textfile(config, text):
    folder = config.get("textfile_dir")
    if not folder:
        return
    if not os.path.isdir(folder):
        mask = os.umask(0o022)  # the unit's umask is 0077; node_exporter runs as its own user
        try:
            os.makedirs(folder)
        finally:
            os.umask(mask)
    path = os.path.join(folder, "sglang_watchdog.prom")
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), "w") as out:
        out.write(text)
    os.chmod(tmp, 0o644)  # world-readable: figures only, no key
    os.replace(tmp, path)


def paths_of(config):
    return {k: os.path.join(config["state_dir"], k + ".json") for k in ("state", "hold")}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="sglang-watchdog", description=__doc__)
    parser.add_argument("--config", default=CONFIG)
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("run", help="one run (the timer's)")
    hold = sub.add_parser("hold", help="do nothing until released or for SECONDS (0: until released)")
    hold.add_argument("--for", dest="seconds", type=int, default=0)
    hold.add_argument("--reason", default="held by an operator")
    sub.add_parser("release", help="end a hold and start afresh (failures, back-off, give-up cleared)")
    sub.add_parser("reset", help="the same as release")
    sub.add_parser("status", help="print the state and the hold")
    args = parser.parse_args(argv)
    config = read_json(args.config)
    if config is None:
        sys.exit("sglang-watchdog: no config at %s (roles/sglang_watchdog writes it)" % args.config)
    # the gateways, their admin key and this worker's URL (roles/sglang_gateway, tasks_from: watch)
    config.update(read_json(os.path.join(os.path.dirname(args.config), "gateways.json")) or {})
    os.makedirs(config["state_dir"], mode=0o700, exist_ok=True)
    paths = paths_of(config)
    with open(os.path.join(config["state_dir"], "lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        now = time.time()
        if args.cmd == "hold":
            write_json(paths["hold"], {"reason": args.reason, "until": now + args.seconds if args.seconds else 0})
            print("held")
        elif args.cmd in ("release", "reset"):
            held = os.path.exists(paths["hold"])
            state = read_json(paths["state"]) or wd.new_state()
            if held or state.get("given_up"):
                if held:
                    os.remove(paths["hold"])
                # the restart counter keeps counting (a Prometheus counter); the rest starts afresh
                counted = state.get("sentinel") or {}
                write_json(paths["state"], dict(wd.new_state(), restarts_total=state.get("restarts_total", 0),
                                                restarted_at=state.get("restarted_at", 0.0),
                                                sentinel=dict(sen.new_sentinel(), runs_total=counted.get("runs_total", 0),
                                                              wrong_total=counted.get("wrong_total", 0))))
            print("released" if held or state.get("given_up") else "unchanged")
        elif args.cmd == "status":
            print(json.dumps({"state": read_json(paths["state"]), "hold": read_json(paths["hold"])}, indent=1))
        else:
            return run(config, Host(config), now)
    return 0


if __name__ == "__main__":
    sys.exit(main())
