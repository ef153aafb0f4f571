"""roles/sglang_gateway/files/smg_launcher.py: smg 1.13.0 gets its keys from the systemd
credential, in-process, never through its argv or environment.

The pure part (build_argv) runs in the project's venv. The real check starts the launcher under a
venv holding smg==1.13.0 (.cache/smg-venv, built by `make tools`: scripts/bootstrap.sh) with a
temporary credentials directory, as the unit's LoadCredential gives it, then reads
/proc/<pid>/cmdline and /proc/<pid>/environ of the launcher and its children from its start (smg
overwrites both with its process title as it starts: only early samples count, see Sampler), and
asks smg's /workers with and without the control-plane key. A control run of `smg launch
--api-key K` shows that the sampling does see a key on a command line."""

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import ROOT, SMG_LAUNCHER  # pylint: disable=wrong-import-order

SMG_PYTHON = os.path.join(ROOT, ".cache", "smg-venv", "bin", "python")
CLIENT_KEY, ADMIN_KEY = "client-key-3b1f0c9e77aa", "admin-key-5d2e8a41c0ff"


def test_build_argv_appends_the_keys_after_the_options(smg_launcher):
    argv = smg_launcher.build_argv(["--port", 30080], {"api_key": CLIENT_KEY, "admin_api_key": ADMIN_KEY})
    assert argv == ["--port", "30080", "--api-key", CLIENT_KEY,
                    "--control-plane-api-keys", "admin:ansible:admin:" + ADMIN_KEY]
    assert smg_launcher.build_argv(["--port", "1"], {"api_key": "", "admin_api_key": ""}) == ["--port", "1"]


@pytest.mark.parametrize("option", ["--api-key", "--control-plane-api-keys=x", "--tenant-api-key"])
def test_build_argv_refuses_a_key_among_the_options(smg_launcher, option):
    with pytest.raises(SystemExit, match="keys belong in the credential file"):
        smg_launcher.build_argv(["--port", "1", option, "k"], {})


@pytest.mark.parametrize("options", [["--api-k", "K"], ["--control-plane-api", "admin:x:admin:K"],
                                     ["--tenant-api", "t:K"], ["--jwt-role", "x=admin"]])
def test_smgs_own_parser_reads_a_prefix_as_the_key_and_the_launcher_refuses_it(options):
    # the options alone through smg 1.13's parse_router_args, then the launcher's check_parsed
    code = ("import sys; sys.path.insert(0, %r); import smg_launcher as L; "
            "from smg.launch_router import parse_router_args as P; L.check_parsed(P(%r))"
            % (os.path.dirname(SMG_LAUNCHER), ["--port", "1"] + options))
    proc = subprocess.run([smg_python(), "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode != 0 and "keys belong in the credential file" in proc.stderr, proc.stderr
    assert "K" not in proc.stderr.replace("KEY", "")


def smg_python():
    if not os.access(SMG_PYTHON, os.X_OK):
        pytest.fail("no smg venv at .cache/smg-venv: run `make tools` (scripts/bootstrap.sh installs "
                    "smg==sglang_gateway_version there)", pytrace=False)
    return SMG_PYTHON


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # local ports: no proxy


def get(url, key=None):
    """The HTTP status, or None while nothing listens."""
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + key} if key else {})
    try:
        with OPENER.open(req, timeout=5) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except urllib.error.URLError:
        return None


def process_tree(pid):
    """pid and every descendant's pid."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open("/proc/%s/stat" % entry, encoding="utf-8") as handle:
                        if int(handle.read().rsplit(")", 1)[1].split()[1]) == current:
                            todo.append(int(entry))
                except (OSError, IndexError, ValueError):
                    continue
    return found


class Sampler:
    """Reads /proc/<pid>/cmdline and environ of a process and its children every few ms from its
    start. smg calls setproctitle("smg::router") as it starts (smg/launch_router.py), which
    overwrites both areas: only samples taken before that show what the process was started
    with, so the sampler also records whether it saw the original argv."""

    def __init__(self, pid):
        self.pid, self.seen, self.stop = pid, set(), False
        # the process starts stopped (start()): its first sample is taken before it can run a
        # line, however busy the machine, then it is let go and sampled every few ms
        deadline = time.monotonic() + 30
        while not self.stopped():
            assert time.monotonic() < deadline, "the process did not stop itself at its start"
            time.sleep(0.01)
        self.sample()
        os.kill(pid, signal.SIGCONT)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def stopped(self):
        try:
            with open("/proc/%d/stat" % self.pid, encoding="utf-8") as handle:
                return handle.read().rsplit(")", 1)[1].split()[0] == "T"
        except OSError:
            return False

    def sample(self):
        for pid in process_tree(self.pid):
            for name in ("cmdline", "environ"):
                try:
                    with open("/proc/%d/%s" % (pid, name), "rb") as handle:
                        self.seen.add(handle.read())
                except OSError:
                    pass

    def run(self):
        while not self.stop:
            self.sample()
            time.sleep(0.002)

    def finish(self):
        self.stop = True
        self.thread.join(timeout=10)
        return self.seen


def start(tmp_path, argv, env):
    """Popen of argv, a Sampler on it (which saw it before its first line ran), and its log."""
    log = open(tmp_path / "smg.log", "w", encoding="utf-8")  # pylint: disable=consider-using-with
    # a shell that stops itself, then becomes argv (exec: the same process, argv and environment)
    proc = subprocess.Popen(["/bin/sh", "-c", 'kill -STOP $$; exec "$@"', "sh", *argv], env=env, stdout=log,  # pylint: disable=consider-using-with
                            stderr=subprocess.STDOUT, start_new_session=True)
    sampler = Sampler(proc.pid)
    return proc, sampler, log


def wait_healthy(proc, base, tmp_path):
    deadline = time.monotonic() + 60
    while get(base + "/health") != 200:
        assert proc.poll() is None, (tmp_path / "smg.log").read_text()
        assert time.monotonic() < deadline, "smg did not answer /health in 60 s: " + (tmp_path / "smg.log").read_text()
        time.sleep(0.2)


def stop(proc, log):
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    log.close()


def options(port, metrics):
    return ["--host", "127.0.0.1", "--port", str(port), "--prometheus-host", "127.0.0.1",
            "--prometheus-port", str(metrics), "--log-level", "warn"]


@pytest.fixture(name="launched")
def fixture_launched(tmp_path):
    """The launcher running smg on free local ports with keys from a credentials directory:
    (base URL, every cmdline and environ the sampler saw)."""
    creds = tmp_path / "credentials"
    creds.mkdir(mode=0o700)
    (creds / "keys").write_text(json.dumps({"api_key": CLIENT_KEY, "admin_api_key": ADMIN_KEY}))
    port, metrics = free_port(), free_port()
    (tmp_path / "args.json").write_text(json.dumps(options(port, metrics)))
    env = {"PATH": "/usr/bin:/bin", "CREDENTIALS_DIRECTORY": str(creds)}
    proc, sampler, log = start(tmp_path, [smg_python(), SMG_LAUNCHER, str(tmp_path / "args.json")], env)
    base = "http://127.0.0.1:%d" % port
    try:
        wait_healthy(proc, base, tmp_path)
        seen = sampler.finish()
        yield base, seen
    finally:
        sampler.finish()
        stop(proc, log)


def test_the_keys_are_in_no_argv_and_no_environment(launched):
    _, seen = launched
    # the sampler saw the process as it was started (before smg's setproctitle wiped it) ...
    assert any(SMG_LAUNCHER.encode() in data for data in seen), seen
    assert any(b"CREDENTIALS_DIRECTORY=" in data for data in seen), seen
    # ... and no key in any argv or environment of the launcher or a child, at any sample
    leaked = [data for data in seen if CLIENT_KEY.encode() in data or ADMIN_KEY.encode() in data]
    assert leaked == []


def test_the_sampler_sees_a_key_given_on_smgs_command_line(tmp_path):
    """The check above can fail: `smg launch --api-key K` (what a unit without the launcher would
    run) shows K in /proc/<pid>/cmdline until smg's setproctitle, and the sampler catches it."""
    port, metrics = free_port(), free_port()
    smg = os.path.join(os.path.dirname(smg_python()), "smg")
    proc, sampler, log = start(tmp_path, [smg, "launch", *options(port, metrics), "--api-key", CLIENT_KEY],
                               {"PATH": "/usr/bin:/bin"})
    try:
        wait_healthy(proc, "http://127.0.0.1:%d" % port, tmp_path)
        seen = sampler.finish()
    finally:
        sampler.finish()
        stop(proc, log)
    assert any(CLIENT_KEY.encode() in data for data in seen)


def test_smg_enforces_the_keys_it_read_from_the_credential(launched):
    base, _ = launched
    assert get(base + "/workers") == 401
    assert get(base + "/workers", "wrong-key") == 401
    assert get(base + "/workers", CLIENT_KEY) == 401  # the client key is no control-plane key
    assert get(base + "/workers", ADMIN_KEY) == 200
    req = urllib.request.Request(base + "/v1/chat/completions", data=b"{}",
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as exc:
        OPENER.open(req, timeout=5)  # pylint: disable=consider-using-with
    assert exc.value.code == 401  # the client routes need --api-key, which came from the credential
