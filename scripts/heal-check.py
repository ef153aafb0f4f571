#!/usr/bin/env python3
"""The liveness watchdog on the demo hosts (roles/sglang_watchdog, docs/operations.md "Healing"):
one host's server is hung for real (`kill -STOP` of its main process: the unit stays `active
(running)` and systemd restarts nothing) while clients send through the demo's gateway. Prints
the seconds from the hang to the host out of the gateway, to a new server process, and to the
host back in the gateway and healthy, with the requests through the gateway that failed. Nobody
runs Ansible meanwhile.

Exit 0 only if the host came back within --timeout and no request sent after the host left the
gateway failed (those in flight on the hung server before it left are counted, not judged). Run
by `make heal-check` (after `make demo`).
"""
import argparse
import json
import sys
import time

from ansible_collections.sglang.deploy.molecule.shared.fleet import sh, unit_state
from ansible_collections.sglang.deploy.molecule.shared.gateway import GatewayTraffic, worker_url


def wait(what, check, timeout, period=0.5):
    """Seconds until check() holds; exits naming `what` past `timeout`."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise SystemExit("heal-check: %s: not within %d s" % (what, timeout))
        time.sleep(period)
    return time.monotonic() - start


def healthy_everywhere(traffic, hosts):
    try:
        return traffic.listing() == {worker_url(h): True for h in hosts}
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", default="sglang-local-1,sglang-local-2", help="the demo's SGLang hosts")
    ap.add_argument("--gateway", default="sglang-gateway", help="the demo's gateway host")
    ap.add_argument("--hang", default="sglang-local-2", help="the host whose server is hung")
    ap.add_argument("--timeout", type=int, default=180, help="seconds each step may take")
    args = ap.parse_args()
    hosts = args.hosts.split(",")
    if sh(args.hang, "systemctl is-active sglang-watchdog.timer") != "active":
        raise SystemExit("heal-check: the watchdog's timer is not active on %s: run `make demo` first" % args.hang)
    before = json.loads(sh(args.hang, "sglang-watchdog status"))["state"] or {}
    pid = unit_state(args.hang)[0]
    with GatewayTraffic(hosts, gateways=(args.gateway,)) as traffic:
        wait("every host healthy in the gateway", lambda: healthy_everywhere(traffic, hosts), args.timeout)
        hung_at = time.monotonic()
        sh(args.hang, "kill -STOP %d" % pid)
        out_s = wait("the hung host out of the gateway",
                     lambda: worker_url(args.hang) not in traffic.listing(), args.timeout)
        left_at = time.monotonic()
        new_s = wait("a new server process", lambda: unit_state(args.hang)[0] not in (0, pid), args.timeout)
        back_s = wait("the host back in the gateway, healthy", lambda: healthy_everywhere(traffic, hosts),
                      args.timeout, period=1)
    after = json.loads(sh(args.hang, "sglang-watchdog status"))["state"] or {}
    late = [(round(t - hung_at, 1), err) for t, ok, err in traffic.requests if not ok and t > left_at]
    late += [(round(s - hung_at, 1), err) for s, _, _, err in traffic.long if err and s > left_at]
    in_flight = [(t - hung_at, err) for t, err in traffic.failed() if t <= left_at]
    print("heal-check: kill -STOP of %s's server: out of the gateway %.0f s after the hang, new process %.0f s, "
          "back in the gateway %.0f s; restarts counted by its watchdog %s -> %s; through the gateway %d "
          "questions and %d long generations, %d failed in flight before the host left, %d after" % (
              args.hang, out_s, out_s + new_s, out_s + new_s + back_s, before.get("restarts_total", 0),
              after.get("restarts_total", 0), len(traffic.requests), len(traffic.long), len(in_flight), len(late)))
    if late:
        print("heal-check: requests sent after the host left the gateway failed: %s" % late[:5])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
