"""roles/sglang_firewall on the deployed host, through `deploy.yml --tags firewall`: the SGLang
port admits the controller (the address the host sees its packets come from) and refuses a second
container on the same network with a TCP reset; other ports stay open; the server keeps running;
a second run changes nothing; the port filtered is the one the server listens on; a ruleset that
fails to load keeps the server down (fail closed); a table deleted under the running server is
loaded again by the watch within seconds; --check reports a change and applies none. The last test turns the
firewall off again (the local profile's setting), so the scenario's other tests see the host as
deployed; the module's fixture does it too if a test failed half way.

Needs nftables in the image (scripts/build-image.sh) and NET_ADMIN on the platform
(.config/molecule/config.yml)."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from ansible_collections.sglang.deploy.molecule.shared.fleet import ask, figure, ip_of, playbook, sh, unit_state  # noqa: E402

testinfra_hosts = ["molecule-sglang-1"]
HOST = "molecule-sglang-1"
IMAGE = "sglang-deploy/debian12-systemd:latest"
PROBE = "fw-probe"
PORT = 30000
WATCH = "sglang-firewall-watch"
INTERVAL = 5  # sglang_firewall_watch_interval_sec (the role's default; the local profile keeps it)


def firewall(extra, args=()):
    """deploy.yml --tags firewall with these variables; (changed count of HOST, output, seconds)."""
    _, out, took = playbook("deploy.yml", extra, args=("--tags", "firewall", *args))
    recap = [line for line in out.splitlines() if line.startswith(HOST) and "changed=" in line]
    assert recap, out[-3000:]
    return int(recap[-1].split("changed=")[1].split()[0]), out, took


def controller_address():
    """The controller as the host sees it: the gateway of the host's default route."""
    route = sh(HOST, "ip -4 route show default").split()
    return route[route.index("via") + 1]


def probe(port=PORT, path="/v1/models"):
    """GET from a second container on the host's network: (curl's exit code, HTTP status).
    Exit code 7 is curl's "connection refused" (the TCP reset), 28 a timeout."""
    network = subprocess.run(
        ["docker", "inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", HOST],
        capture_output=True, text=True, check=True).stdout.split()[0]
    subprocess.run(["docker", "rm", "-f", PROBE], capture_output=True, check=False)
    proc = subprocess.run(
        ["docker", "run", "--rm", "--name", PROBE, "--network", network, IMAGE,
         "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
         f"http://{ip_of(HOST)}:{port}{path}"],
        capture_output=True, text=True, timeout=120, check=False)
    return proc.returncode, proc.stdout.strip()


def live_v4():
    return sh(HOST, "nft list set inet sglang_firewall allowed_v4")


@pytest.fixture(scope="module")
def controller():
    yield controller_address()
    # whatever happened above: the local profile's setting (off) again
    if subprocess.run(["docker", "exec", HOST, "nft", "list", "table", "inet", "sglang_firewall"],
                      capture_output=True, check=False).returncode == 0:
        firewall({})


def test_firewall_on_is_idempotent_and_restarts_nothing(controller):
    before = unit_state(HOST)
    extra = {"sglang_firewall_enabled": True, "sglang_firewall_allow": [controller]}
    changed, _, took = firewall(extra)
    assert changed > 0
    again, out, took_again = firewall(extra)
    assert again == 0, out[-3000:]
    assert unit_state(HOST) == before, "the firewall restarted the SGLang server"
    assert sh(HOST, "systemctl is-active sglang-firewall") == "active"
    assert sh(HOST, "systemctl is-enabled sglang-firewall") == "enabled"
    assert sh(HOST, f"systemctl is-active {WATCH}.timer") == "active"
    assert sh(HOST, f"systemctl is-enabled {WATCH}.timer") == "enabled"
    assert f"elements = {{ {controller} }}" in live_v4()
    figure(f"firewall: deploy.yml --tags firewall {took:.0f} s, again (changed=0) {took_again:.0f} s")


def test_controller_is_answered_and_another_container_refused(controller):
    assert ask(ip_of(HOST)) == "OK"
    started = time.monotonic()
    rc, status = probe()
    assert rc == 7 and status == "000", f"the probe container reached the port: curl rc={rc}, HTTP {status}"
    assert time.monotonic() - started < 60  # refused at once (reset), not left to time out
    assert "reject with tcp reset" in sh(HOST, "nft list chain inet sglang_firewall sglang_port")
    # the host itself (loopback) is always admitted
    assert sh(HOST, f"curl -sS -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{PORT}/v1/models") == "200"


def test_other_ports_are_not_filtered(controller):
    sh(HOST, "systemd-run --unit fw-other --working-directory /tmp python3 -m http.server 30001")
    try:
        deadline = time.monotonic() + 30
        while "30001" not in sh(HOST, "ss -ltnH 'sport = :30001'") and time.monotonic() < deadline:
            time.sleep(0.5)
        assert probe(30001, "/") == (0, "200")
    finally:
        sh(HOST, "systemctl stop fw-other || true")
    # nothing but the role's table was added to the ruleset
    assert sh(HOST, "nft list tables") == "table inet sglang_firewall"


def listening_port():
    """The TCP port the SGLang process really listens on (ss, by the unit's main PID)."""
    pid = sh(HOST, "systemctl show -p MainPID --value sglang")
    ports = {line.split()[3].rsplit(":", 1)[1] for line in sh(HOST, "ss -ltnpH").splitlines()
             if f"pid={pid}," in line}
    assert len(ports) == 1, f"sglang (pid {pid}) listens on {ports or 'nothing'}"
    return int(ports.pop())


def test_the_port_filtered_is_the_port_the_server_listens_on(controller):
    port = listening_port()
    table = sh(HOST, "nft list table inet sglang_firewall")
    # the input hook sends the server's port(s) to the filtering chain (one port: no braces)
    assert re.search(rf"tcp dport (\{{[^}}]*\b{port}\b[^}}]*\}}|{port}) jump sglang_port", table), table


def test_a_ruleset_that_fails_to_load_keeps_the_server_down(controller):
    """Fail closed (docs/firewall.md): the ruleset file broken, the firewall unit restarted (its
    stop deletes the table, its start fails), then the server restarted: it stays down, its port
    closed, its journal naming the missing table. The ruleset put back, it serves again."""
    ruleset = "/etc/nftables.d/sglang-firewall.nft"
    assert "After=sglang-firewall.service" in sh(HOST, "systemctl cat sglang")
    since = sh(HOST, "date +%s")
    sh(HOST, f"cp {ruleset} /root/ruleset.good && echo 'this is not nft' >> {ruleset}")
    try:
        sh(HOST, "systemctl restart sglang-firewall || true")
        assert sh(HOST, "systemctl is-active sglang-firewall || true") == "failed"
        assert sh(HOST, "nft list tables") == ""
        sh(HOST, "systemctl restart sglang || true")
        time.sleep(3)
        assert sh(HOST, "systemctl is-active sglang || true") in ("failed", "activating"), \
            sh(HOST, "systemctl status sglang --no-pager || true")
        assert sh(HOST, f"ss -ltnH 'sport = :{PORT}'") == "", "the server listens without its firewall"
        journal = sh(HOST, f"journalctl -u sglang --since @{since} --no-pager -o cat")
        assert "table inet sglang_firewall is not loaded, so the server stays down (fail closed)" in journal, journal[-2000:]
        # the watch (restarted with the firewall unit) finds the table missing and the file broken
        said = watch_journal(since, "table inet sglang_firewall is missing and /etc/nftables.d/sglang-firewall.nft did not load")
        assert said, sh(HOST, f"journalctl -u {WATCH} --since @{since} --no-pager -o cat || true")[-2000:]
    finally:
        sh(HOST, f"cp /root/ruleset.good {ruleset} && systemctl restart sglang-firewall"
                 " && systemctl reset-failed sglang && systemctl restart sglang")
    # serving again: a real generation answered (up to 240 s, the local profile's ready timeout)
    sh(HOST, f"timeout 240 sh -c 'until curl -sf -o /dev/null http://127.0.0.1:{PORT}/health_generate; do sleep 2; done'")
    assert ask(ip_of(HOST)) == "OK"


def watch_journal(since, text, wait=2 * INTERVAL + 5):
    """Whether the watch's journal since `since` (host clock) says `text`, polled up to `wait` s."""
    deadline = time.monotonic() + wait
    while True:
        if text in sh(HOST, f"journalctl -u {WATCH} --since @{since} --no-pager -o cat || true"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def test_a_deleted_table_is_loaded_again_by_the_watch(controller):
    """The watch (docs/firewall.md): `nft delete table` under the running server; within two
    intervals + 5 s the table is back, another container is refused again, the watch's journal
    says it restored the table, and the server kept its process (same MainPID)."""
    before = unit_state(HOST)
    assert sh(HOST, f"systemctl is-active {WATCH}.timer") == "active"
    since = sh(HOST, "date +%s")
    limit = 2 * INTERVAL + 5
    # timed on the host: from the deletion to the first `nft list table` that finds it again
    ms = sh(HOST, "t0=$(date +%s%N); nft delete table inet sglang_firewall; "
                  f"timeout {limit} sh -c 'until nft list table inet sglang_firewall >/dev/null 2>&1; do sleep 0.1; done'"
                  " && echo $(( ($(date +%s%N) - t0) / 1000000 )) || echo gone")
    assert ms != "gone", f"the table was not back within {limit} s: " + \
        sh(HOST, f"systemctl status {WATCH}.timer {WATCH}.service --no-pager || true")
    took = int(ms) / 1000
    rc, status = probe()
    assert rc == 7 and status == "000", f"the probe container reached the port after the restore: curl rc={rc}, HTTP {status}"
    assert watch_journal(since, "table inet sglang_firewall was missing from the running ruleset"), \
        sh(HOST, f"journalctl -u {WATCH} --since @{since} --no-pager -o cat || true")[-2000:]
    assert watch_journal(since, "restored it from /etc/nftables.d/sglang-firewall.nft; sglang.service kept running", wait=0)
    assert unit_state(HOST) == before, "the server was restarted or stopped"
    assert sh(HOST, "systemctl is-active sglang") == "active"
    assert ask(ip_of(HOST)) == "OK"
    figure(f"firewall watch: a deleted table was loaded again after {took:.1f} s (interval {INTERVAL} s, limit {limit} s)")


def test_check_mode_reports_the_change_and_applies_none(controller):
    extra = {"sglang_firewall_enabled": True, "sglang_firewall_allow": [controller, "198.51.100.0/24"]}
    changed, out, _ = firewall(extra, args=("--check", "--diff"))
    assert changed > 0 and "+\t\telements = { " in out and "198.51.100.0/24" in out, out[-3000:]
    assert "198.51.100.0/24" not in live_v4()
    assert "198.51.100.0/24" not in sh(HOST, "cat /etc/nftables.d/sglang-firewall.nft")


def test_firewall_off_opens_the_port_again(controller):
    changed, _, _ = firewall({})  # the local profile: sglang_firewall_enabled false
    assert changed > 0
    assert sh(HOST, "nft list tables") == ""
    assert sh(HOST, "test -e /etc/systemd/system/sglang-firewall.service && echo yes || echo no") == "no"
    assert sh(HOST, "test -e /etc/systemd/system/sglang.service.d/sglang-firewall.conf && echo yes || echo no") == "no"
    assert "sglang-firewall" not in sh(HOST, "systemctl cat sglang")
    for path in (f"/etc/systemd/system/{WATCH}.timer", f"/etc/systemd/system/{WATCH}.service", f"/usr/local/libexec/{WATCH}"):
        assert sh(HOST, f"test -e {path} && echo yes || echo no") == "no", path
    assert probe() == (0, "200")
    assert ask(ip_of(HOST)) == "OK"
