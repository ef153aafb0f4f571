"""Helpers shared by the multi-step Molecule verifiers: run playbooks against the scenario's
inventory, read unit state with `docker exec`, probe hosts with real chat requests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# the longest playbook a test runs (a generation install, a 3-host rollout) takes ~3 min here
PLAYBOOK_TIMEOUT_S = int(os.environ.get("FLEET_PLAYBOOK_TIMEOUT_S", "1200"))
# Under every playbook a test runs (its own extra vars win): no speed figure becomes a baseline.
# `make test` runs two scenarios at once on the same 2 cores, so each figure is taken under
# whatever the other scenario does at that moment, and the regression gates must compare like
# with like (docs/speed-gates.md); with no accepted results they stay off, and the absolute
# floors, the probes, the drift check and the quality gate judge every change as before.
# Since no figure is kept, each gate's single-stream measurement is the shortest that still gives
# a median and a spread: 3 runs of 128 tokens instead of the profile's 5 of 256 (what the
# scenarios measure is the gate's behaviour, not the tiny model's speed): with its warm-up run,
# 512 tokens a gate instead of 1536, in each of the ~70 gates of `make test`.
# With no accepted results the throughput gate judges only the server's running-request
# bound, so the tests' gates leave out its sweep (8 requests at concurrency 4 in each
# gate); each scenario's converge (deploy.yml on the inventory alone) and `make demo` run it.
TEST_VARS = {"sglang_verify_update_baseline": False, "sglang_verify_bench_runs": 3,
             "sglang_verify_bench_max_tokens": 128, "sglang_verify_throughput_concurrency": 0}


def figure(text):
    """Print a measured figure and append it to reports/test-figures.log (read by `make test`)."""
    print(text)
    (ROOT / "reports").mkdir(exist_ok=True)
    with open(ROOT / "reports" / "test-figures.log", "a", encoding="utf-8") as fh:
        fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {os.environ.get('MOLECULE_SCENARIO_NAME', '?')}: {text}\n")


def scratch(prefix):
    """A new directory for a test's files under .cache/test-tmp (git-ignored, removed with the
    repository's other caches), not the controller's /tmp."""
    base = ROOT / ".cache" / "test-tmp"
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=base))


def local_vars(name):
    """The local profile's group_vars file inventories/local/group_vars/all/<name>.yml."""
    import yaml

    with open(ROOT / "inventories/local/group_vars/all" / f"{name}.yml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


# the local profile's model directory: /data/models/tiny-qwen2/<revision> (inventories/local)
TINY_MODEL = local_vars("sglang")["sglang_server_args"]["model-path"]


def sh(host, cmd):
    return subprocess.run(
        ["docker", "exec", host, "bash", "-c", cmd], capture_output=True, text=True, check=True
    ).stdout.strip()


def unit_state(host):
    """(MainPID, start time on the monotonic clock) of the sglang unit."""
    out = sh(host, "systemctl show sglang -p MainPID -p ExecMainStartTimestampMonotonic")
    kv = dict(line.split("=", 1) for line in out.splitlines())
    return int(kv["MainPID"]), int(kv["ExecMainStartTimestampMonotonic"]) / 1e6


def watchdog_state(host):
    """The liveness watchdog's state on ``host`` (`sglang-watchdog status`)."""
    return json.loads(sh(host, "sglang-watchdog status"))["state"] or {}


def wait(what, check, timeout, period=0.5):
    """Seconds until check() holds, polled every `period`; fails naming `what` past `timeout`."""
    start = time.monotonic()
    while not check():
        assert time.monotonic() - start < timeout, f"{what}: not within {timeout} s"
        time.sleep(period)
    return time.monotonic() - start


def stops_since(host, epoch):
    """Seconds each stop of the sglang unit took since `epoch` (host clock), from systemd's
    'Stopping sglang.service' to its 'Stopped sglang.service' in the journal."""
    out = sh(host, f"journalctl -u sglang --since @{int(epoch)} --no-pager -o short-unix")
    took, begun = [], None
    for line in out.splitlines():
        stamp, _, rest = line.partition(" ")
        if "systemd[1]: Stopping sglang.service" in rest:
            begun = float(stamp)
        elif "systemd[1]: Stopped sglang.service" in rest and begun is not None:
            took.append(float(stamp) - begun)
            begun = None
    return took


def controller_address(host):
    """The controller as `host` sees it: the gateway of the host's default route."""
    route = sh(host, "ip -4 route show default").split()
    return route[route.index("via") + 1]


def ip_of(host):
    return subprocess.run(
        ["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", host],
        capture_output=True, text=True, check=True,
    ).stdout.strip()


def ask(ip, timeout=10.0, base=None):
    """Ask the server at ip:30000 (or at the base URL, e.g. the gateway) a question with a known
    answer; returns the answer."""
    body = json.dumps({
        "model": "tiny-qwen2", "temperature": 0, "max_tokens": 4,
        "messages": [{"role": "user", "content": "Reply with OK."}],
    }).encode()
    req = urllib.request.Request(f"{base or f'http://{ip}:30000'}/v1/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.load(resp)["choices"][0]["message"]["content"].strip()


def every(period, stop, step, max_seconds=None):
    """Call step(monotonic time) every `period` s until `stop` is set (or max_seconds passed)."""
    end = None if max_seconds is None else time.monotonic() + max_seconds
    while not stop.is_set() and (end is None or time.monotonic() < end):
        t = time.monotonic()
        step(t)
        time.sleep(max(0.0, period - (time.monotonic() - t)))


class Prober:
    """Asks every host a real question every `period` s while the `with` block runs. With
    `models`, GET /v1/models instead: it answers while the server's process serves HTTP and holds
    nothing a drain or a stop waits for (a question in flight holds SGLang 0.5.23's stop, and
    /health is a generation of at least a second there: roles/sglang_server/README.md, "How long
    a stop takes")."""

    def __init__(self, hosts, period=0.5, max_seconds=900, models=False):
        self.hosts = list(hosts)
        self.ips = {h: ip_of(h) for h in self.hosts}
        self.period, self.max_seconds, self.models = period, max_seconds, models
        self.samples = []  # (monotonic time, {host: answered correctly})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _one(self, host):
        try:
            if self.models:
                with urllib.request.urlopen(f"http://{self.ips[host]}:30000/v1/models", timeout=5) as resp:
                    return resp.status == 200
            return ask(self.ips[host], timeout=5) == "OK"
        except Exception:  # noqa: BLE001 - any failure means "not serving"
            return False

    def _sample(self, t):
        results = {}
        threads = [threading.Thread(target=lambda h=h: results.__setitem__(h, self._one(h)))
                   for h in self.hosts]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.samples.append((t, results))

    def _run(self):
        every(self.period, self._stop, self._sample, self.max_seconds)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def playbook_command(path: str, extra: dict, args=(), timed=False):
    """(argv, env) of ansible-playbook running `path` on the scenario's inventory with `extra`
    as extra vars; `timed` adds ansible.posix.profile_tasks (a timestamp line per task)."""
    env = dict(os.environ)
    if timed:
        env["ANSIBLE_CALLBACKS_ENABLED"] = "ansible.posix.profile_tasks"
    env.update({
        "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
    })
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, dir=scratch("extra-vars-")) as fh:
        json.dump(dict(TEST_VARS, **extra), fh)
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    return [str(BIN / "ansible-playbook"), "-i", inventory, str(ROOT / path), "-e", f"@{fh.name}", *args], env


def playbook(path: str, extra: dict, expect_rc: int | None = 0, args=(), timed=False):
    """Run a playbook on the scenario's hosts; `timed` adds ansible.posix.profile_tasks (a
    timestamp line per task, read by batches())."""
    argv, env = playbook_command(path, extra, args, timed)
    started = time.monotonic()
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=PLAYBOOK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:  # a hang fails this test with its output, not CI
        partial = (exc.stdout or b"") + (exc.stderr or b"")
        text = partial.decode(errors="replace") if isinstance(partial, bytes) else partial
        raise AssertionError(f"{path} {' '.join(args)} still running after {PLAYBOOK_TIMEOUT_S} s; "
                             f"its output so far:\n{text[-4000:]}") from None
    took = time.monotonic() - started
    out = proc.stdout + proc.stderr
    print(f"{path} {' '.join(args)} rc={proc.returncode} in {took:.0f} s")
    print(out[-6000:])
    if expect_rc is not None:
        assert proc.returncode == expect_rc, out[-4000:]
    return proc.returncode, out, took


_ELAPSED = re.compile(r"\((\d+):(\d\d):(\d\d\.\d+)\)\s+(\d+):(\d\d):(\d\d\.\d+)")


def _seconds(h, m, s):
    return int(h) * 3600 + int(m) * 60 + float(s)


def batches(out: str, play: str):
    """The batches of `play` in a playbook(timed=True) output: a list of dicts with `start`
    (seconds since the playbook began), `seconds` (until the next batch, or the playbook's
    end) and `tasks` ([(banner, seconds)]). profile_tasks prints a line before each task:
    the time since the playbook began and, in parentheses, how long the task above it took."""
    found, batch, owner, banner, total = [], None, None, None, None
    for line in out.splitlines():
        if line.startswith("PLAY "):
            batch = {"start": None, "tasks": []} if line.startswith(f"PLAY [{play}]") else None
            found += [batch] if batch else []
        elif line.startswith(("TASK [", "RUNNING HANDLER [")):
            banner, owner = line[: line.index("]") + 1], batch
        elif m := _ELAPSED.search(line):
            total = _seconds(*m.groups()[3:])
            if owner is not None and banner:  # the task above ran in a batch of the play
                owner["tasks"].append((banner, _seconds(*m.groups()[:3])))
            if batch is not None and batch["start"] is None:
                batch["start"] = total
    for cur, nxt in zip(found, found[1:] + [None]):
        cur["seconds"] = (nxt["start"] if nxt else total) - cur["start"]
    return found


def unit_text(host):
    return sh(host, "systemctl cat sglang")
