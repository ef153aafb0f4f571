"""The server's subreaper (roles/sglang_server/files/sglang_subreaper.py), with real processes: a
server's orphan is adopted and reaped by it (never by PID 1), an orphan's SIGQUIT is absorbed and
passed to the server, SIGTERM/SIGINT/SIGHUP reach the server, the subreaper ends as the server
ended (exit code or signal), leftover processes are ended, systemd hears MAINPID= both ways (a
stand-in notify socket), and --stop (ExecStop=) waits for the drain."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REAPER = Path(__file__).resolve().parents[2] / "roles" / "sglang_server" / "files" / "sglang_subreaper.py"
PY = sys.executable


def start(tmp_path, server, *extra, env=None):
    """The subreaper running `python -c server` (cwd tmp_path); its stderr to tmp_path/log."""
    log = open(tmp_path / "log", "w", encoding="utf-8")  # pylint: disable=consider-using-with
    proc = subprocess.Popen([PY, "-I", "-S", str(REAPER), *extra, "--", PY, "-c", server], cwd=tmp_path,
                            stderr=log, env=env)
    proc.log = tmp_path / "log"
    return proc


def wait_for(what, check, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def read(path):
    return path.read_text() if path.exists() else ""


# A server whose child starts a grandchild and exits at once: the grandchild is orphaned. It
# writes its parent after the orphaning to ppid, then does `ORPHAN` (a statement).
ORPHANING = """
import os, subprocess, sys, time
grandchild = '''
import os, signal, sys, time
time.sleep(0.5)
open("ppid", "w").write(str(os.getppid()))
ORPHAN
'''
subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.Popen([sys.executable, '-c', sys.argv[1]])",
                  grandchild]).wait()
SERVER
"""


def test_an_orphan_of_the_server_is_adopted_and_reaped_by_the_subreaper(tmp_path):
    proc = start(tmp_path, ORPHANING.replace("ORPHAN", "open('gc', 'w').write(str(os.getpid())); sys.exit(7)")
                 .replace("SERVER", "time.sleep(60)"))
    gc = int(wait_for("the orphan", lambda: read(tmp_path / "gc")))
    assert int(read(tmp_path / "ppid")) == proc.pid  # adopted by the subreaper, not by PID 1
    wait_for("the orphan reaped", lambda: f"reaped orphan {gc} (exit code 7)" in read(proc.log))
    assert not alive(gc) and proc.poll() is None  # reaped (no zombie); the server goes on
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM


def test_an_orphans_sigquit_is_absorbed_and_passed_to_the_server(tmp_path):
    server = ("import signal, sys, time\n"
              "signal.signal(signal.SIGQUIT, lambda *a: (open('quit', 'w').write('1'), sys.exit(5)))\n"
              "time.sleep(60)")
    proc = start(tmp_path, ORPHANING.replace("ORPHAN", "open('gc', 'w').write(str(os.getpid())); "
                                             "os.kill(os.getppid(), signal.SIGQUIT)").replace("SERVER", server))
    assert proc.wait(30) == 5  # the server's SIGQUIT handler ended it; the subreaper was not killed
    gc = read(tmp_path / "gc")
    assert read(tmp_path / "quit") == "1"
    assert f"SIGQUIT from pid {gc} (python" in read(proc.log) and "absorbed" in read(proc.log)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_the_subreaper_reaches_the_server(tmp_path, sig):
    server = (f"import signal, sys, time\nsignal.signal({int(sig)}, lambda *a: sys.exit(10 + {int(sig)}))\n"
              "open('ready', 'w').write('1')\ntime.sleep(60)")
    proc = start(tmp_path, server)
    wait_for("the server", lambda: read(tmp_path / "ready"))
    proc.send_signal(sig)
    assert proc.wait(30) == 10 + sig


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV])
def test_the_subreaper_ends_as_the_server_did(tmp_path, sig):
    proc = start(tmp_path, "import time; open('ready', 'w').write('1'); time.sleep(60)")
    wait_for("the server", lambda: read(tmp_path / "ready"))
    (server,) = children(proc.pid)
    os.kill(server, sig)
    assert proc.wait(30) == -sig
    assert f"the server ({server}) ended: killed by {sig.name}" in read(proc.log)


def test_the_exit_code_is_the_servers(tmp_path):
    assert start(tmp_path, "import sys; sys.exit(3)").wait(30) == 3


def test_what_the_server_leaves_running_is_ended(tmp_path):
    """A process left by the server that ignores SIGTERM is killed after the grace."""
    server = ("import signal, subprocess, sys\n"
              "p = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
              "signal.signal(signal.SIGTERM, signal.SIG_IGN); open(\"left\", \"w\").write(\"1\"); time.sleep(60)'])\n"
              "import time\nwhile True:\n    try:\n        open('left').read(); break\n"
              "    except OSError:\n        time.sleep(0.05)\n"
              "open('pid', 'w').write(str(p.pid))")
    proc = start(tmp_path, server, "--grace", "0.5")
    assert proc.wait(30) == 0
    left = int(read(tmp_path / "pid"))
    assert not alive(left)
    log = read(proc.log)
    assert "sending SIGTERM to 1 remaining" in log and "sending SIGKILL to 1 remaining" in log


def test_systemd_hears_the_servers_pid_then_the_subreapers_with_a_barrier(tmp_path):
    address = str(tmp_path / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    heard = []

    def listen():
        while len(heard) < 3:
            msg, fds, _, _ = socket.recv_fds(sock, 4096, 4)
            heard.append(msg.decode())
            for fd in fds:  # as systemd does: the barrier's pipe closed once read
                os.close(fd)

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    env = dict(os.environ, NOTIFY_SOCKET=address)
    proc = start(tmp_path, "import os, sys; open('env', 'w').write(os.environ.get('NOTIFY_SOCKET', '-')); sys.exit(4)",
                 env=env)
    assert proc.wait(30) == 4
    thread.join(10)
    sock.close()
    assert heard[0].startswith("MAINPID=") and heard[0] != f"MAINPID={proc.pid}"
    assert heard[1:] == [f"MAINPID={proc.pid}", "BARRIER=1"]
    assert read(tmp_path / "env") == "-"  # only the subreaper talks to systemd


def test_stop_sends_sigterm_and_waits_for_the_drain_and_the_subreaper(tmp_path):
    server = ("import signal, sys, time\n"
              "signal.signal(signal.SIGTERM, lambda *a: (time.sleep(1), sys.exit(0)))\n"
              "open('ready', 'w').write('1')\ntime.sleep(60)")
    proc = start(tmp_path, server)
    wait_for("the server", lambda: read(tmp_path / "ready"))
    (server_pid,) = children(proc.pid)
    began = time.monotonic()
    stop = subprocess.run([PY, "-I", "-S", str(REAPER), "--stop", str(server_pid)], timeout=30, check=False)
    assert stop.returncode == 0 and time.monotonic() - began >= 1.0
    assert proc.poll() == 0  # the subreaper had ended (and is reaped here) when --stop returned
    assert subprocess.run([PY, "-I", "-S", str(REAPER), "--stop", ""], timeout=30, check=False).returncode == 0


def test_the_unit_runs_the_server_under_the_path_the_role_installs():
    """templates/sglang.service.j2 names the path itself (a site's template reads no private
    variable of the role); roles/sglang_server/vars/main.yml's _sglang_server_subreaper is where
    tasks/configure.yml installs it."""
    import yaml  # pylint: disable=import-outside-toplevel
    root = REAPER.parents[3]
    path = yaml.safe_load((root / "roles" / "sglang_server" / "vars" / "main.yml").read_text())["_sglang_server_subreaper"]
    unit = (root / "templates" / "sglang.service.j2").read_text()
    assert f"-I -S {path} -- " in unit and f"-I -S {path} --stop $MAINPID" in unit
