# -*- coding: utf-8 -*-
"""Runs the SGLang server under a subreaper of its own unit (installed by roles/sglang_server as
/usr/local/libexec/sglang-subreaper; templates/sglang.service.j2; docs/operations.md, "The
server's supervisor"). SGLang's processes send SIGQUIT to what they take for their parent when
they fail; an orphan's parent is otherwise PID 1, and systemd takes SIGQUIT for its own crash.

Here the server's orphans are adopted (PR_SET_CHILD_SUBREAPER) and reaped by this process; a
SIGQUIT sent to it is logged with its sender and passed to the server (SGLang's "a part of the
server failed"); SIGTERM, SIGINT and SIGHUP are forwarded. systemd is told the server's PID as
MainPID (sd_notify, NotifyAccess=all). Once the server has ended: what it left gets SIGTERM, then
SIGKILL after the grace; MainPID is handed back here (systemd 252 does not see the exit of a main
PID that is not its child), confirmed with BARRIER=1; and this process ends as the server did
(its exit code, or its signal), so Result= and Restart= judge the server's end.

Usage: sglang-subreaper [--grace SECONDS] -- COMMAND [ARG...]
       sglang-subreaper --stop $MAINPID   (ExecStop=: SIGTERM to the server, wait for its end)
Standard library only; Linux."""

import ctypes
import os
import resource
import select
import signal
import socket
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
FORWARD = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
WATCHED = FORWARD | {signal.SIGQUIT, signal.SIGCHLD}


def log(message):
    print(f"sglang-subreaper: {message}", file=sys.stderr, flush=True)


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return "?"


def notify(message, barrier=False):
    """Send a sd_notify message (and wait until systemd has read it: BARRIER=1); False when there
    is no NOTIFY_SOCKET or it fails."""
    path = os.environ.get("NOTIFY_SOCKET", "")
    if not path:
        return False
    address = "\0" + path[1:] if path.startswith("@") else path
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(message.encode())
            if barrier:
                read_end, write_end = os.pipe()
                try:
                    socket.send_fds(sock, [b"BARRIER=1"], [write_end])
                    os.close(write_end)
                    write_end = -1
                    poller = select.poll()
                    poller.register(read_end, select.POLLHUP)
                    poller.poll(5000)  # systemd closes its copy once it has read the message
                finally:
                    os.close(read_end)
                    if write_end >= 0:
                        os.close(write_end)
        return True
    except OSError as err:
        log(f"sd_notify failed: {err}")
        return False


def stat(pid):
    """(state, parent PID) of pid from /proc, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def alive(pid):
    """pid exists and is not a zombie."""
    return (stat(pid) or ("Z", 0))[0] != "Z"


def descendants(root):
    """PIDs of every living (not zombie) descendant of root."""
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        state, ppid = stat(entry) or ("Z", 0)
        if state != "Z":
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found


def reap(server, status):
    """Reap every exited child; returns the server's wait status once it has one."""
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status
        if pid == 0:
            return status
        if pid == server:
            status = code
        else:
            log(f"reaped orphan {pid} ({describe(code)})")


def describe(status):
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def end_descendants(grace):
    """SIGTERM to every remaining descendant, SIGKILL to those left after grace seconds; reaps."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        left = descendants(os.getpid())
        if not left:
            return
        log(f"sending {sig.name} to {len(left)} remaining process(es) of the server: {left}")
        for pid in left:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while descendants(os.getpid()) and time.monotonic() < deadline:
            signal.sigtimedwait({signal.SIGCHLD}, 0.2)
            reap(None, None)
    reap(None, None)


def end_as(status):
    """Exit as the server did: its exit code, or killed by its signal (no core file of ours)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)  # not reached
    os._exit(os.waitstatus_to_exitcode(status))


def stop(pid):
    """ExecStop=: SIGTERM (and SIGCONT, as systemd sends) to the main PID, the server, and wait
    until it and its subreaper have ended; systemd's TimeoutStopSec bounds the wait."""
    if not pid.isdigit() or int(pid) <= 1:
        return 0  # the main process has already ended: nothing to stop
    pid = int(pid)
    parent = (stat(pid) or ('', 0))[1]
    waits = [pid] + ([parent] if parent > 1 and parent != os.getppid() else [])
    for sig in (signal.SIGTERM, signal.SIGCONT):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    for each in waits:
        while alive(each):
            time.sleep(0.2)
    return 0


def main(argv):
    grace = 10.0
    if argv[:1] == ["--stop"]:
        return stop(argv[1] if len(argv) > 1 else "")
    if argv[:1] == ["--grace"]:
        grace, argv = float(argv[1]), argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        log(f"PR_SET_CHILD_SUBREAPER failed: {os.strerror(ctypes.get_errno())}")
        return 1
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED)
    env = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}  # systemd hears only us
    server = os.posix_spawnp(argv[0], argv, env, setsigmask=(),
                             setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, *WATCHED))
    handed = notify(f"MAINPID={server}")
    status = None
    while status is None:
        info = signal.sigwaitinfo(WATCHED)
        sig = signal.Signals(info.si_signo)
        if sig == signal.SIGCHLD:
            status = reap(server, None)
        elif sig in FORWARD or sig == signal.SIGQUIT:
            if sig == signal.SIGQUIT:
                log(f"SIGQUIT from pid {info.si_pid} ({comm(info.si_pid)}) absorbed: "
                    f"a process of the server failed, so the server ({server}) is sent SIGQUIT")
            try:
                os.kill(server, sig)
                if sig == signal.SIGTERM:
                    os.kill(server, signal.SIGCONT)  # a stopped server ends too, as under systemd
            except ProcessLookupError:
                pass
    log(f"the server ({server}) ended: {describe(status)}")
    end_descendants(grace)
    if handed:
        notify(f"MAINPID={os.getpid()}", barrier=True)
    end_as(status)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
