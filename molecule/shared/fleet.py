"""Helpers shared by the multi-step Molecule verifiers: run playbooks against the scenario's
inventory, read unit state with `docker exec`, probe hosts with real chat requests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def figure(text):
    """Print a measured figure and append it to reports/test-figures.log (read by `make test`)."""
    print(text)
    (ROOT / "reports").mkdir(exist_ok=True)
    with open(ROOT / "reports" / "test-figures.log", "a", encoding="utf-8") as fh:
        fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {os.environ.get('MOLECULE_SCENARIO_NAME', '?')}: {text}\n")


def local_vars(name):
    """The local profile's group_vars file inventories/local/group_vars/all/<name>.yml."""
    import yaml

    with open(ROOT / "inventories/local/group_vars/all" / f"{name}.yml", encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def sh(host, cmd):
    return subprocess.run(
        ["docker", "exec", host, "bash", "-c", cmd], capture_output=True, text=True, check=True
    ).stdout.strip()


def unit_state(host):
    """(MainPID, start time on the monotonic clock) of the sglang unit."""
    out = sh(host, "systemctl show sglang -p MainPID -p ExecMainStartTimestampMonotonic")
    kv = dict(line.split("=", 1) for line in out.splitlines())
    return int(kv["MainPID"]), int(kv["ExecMainStartTimestampMonotonic"]) / 1e6


def ip_of(host):
    return subprocess.run(
        ["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", host],
        capture_output=True, text=True, check=True,
    ).stdout.strip()


def ask(ip, timeout=10.0):
    body = json.dumps({
        "model": "tiny-qwen2", "temperature": 0, "max_tokens": 4,
        "messages": [{"role": "user", "content": "Reply with OK."}],
    }).encode()
    req = urllib.request.Request(f"http://{ip}:30000/v1/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.load(resp)["choices"][0]["message"]["content"].strip()


class Prober:
    """Asks every host a real question every `period` s while the `with` block runs."""

    def __init__(self, hosts, period=0.5, max_seconds=900):
        self.hosts = list(hosts)
        self.ips = {h: ip_of(h) for h in self.hosts}
        self.period, self.max_seconds = period, max_seconds
        self.samples = []  # (monotonic time, {host: answered correctly})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _one(self, host):
        try:
            return ask(self.ips[host], timeout=5) == "OK"
        except Exception:  # noqa: BLE001 - any failure means "not serving"
            return False

    def _run(self):
        end = time.monotonic() + self.max_seconds
        while not self._stop.is_set() and time.monotonic() < end:
            t = time.monotonic()
            results = {}
            threads = [threading.Thread(target=lambda h=h: results.__setitem__(h, self._one(h)))
                       for h in self.hosts]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            self.samples.append((t, results))
            time.sleep(max(0.0, self.period - (time.monotonic() - t)))

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def playbook(path: str, extra: dict, expect_rc: int | None = 0, args=()):
    env = dict(os.environ)
    env.update({
        "ANSIBLE_ROLES_PATH": str(ROOT / "roles"),
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / "collections"),
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
    })
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(extra, fh)
    inventory = os.environ["MOLECULE_INVENTORY_FILE"]
    started = time.monotonic()
    proc = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", inventory, str(ROOT / path), "-e", f"@{fh.name}", *args],
        capture_output=True, text=True, env=env, cwd=str(ROOT),
    )
    took = time.monotonic() - started
    out = proc.stdout + proc.stderr
    print(f"{path} {' '.join(args)} rc={proc.returncode} in {took:.0f} s")
    print(out[-6000:])
    if expect_rc is not None:
        assert proc.returncode == expect_rc, out[-4000:]
    return proc.returncode, out, took


def unit_text(host):
    return sh(host, "systemctl cat sglang")
