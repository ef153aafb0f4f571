"""The gateway host of the rollout scenario (roles/sglang_gateway: smg 1.13.0 from the wheelhouse,
its own hardened unit, every SGLang host registered) and the floor of the capacity-safe
batches: a host whose server is down before the rollout counts against
`sglang_rollout_min_serving`, and a batch that would leave fewer healthy workers than the floor
is refused before any host is touched. Each test starts from the fleet serving a configuration
deployed on purpose (conftest.py: `known_good`) and leaves it serving."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

import pytest

from ansible_collections.sglang.deploy.molecule.shared.fleet import (  # noqa: E402
    ask, figure, ip_of, local_vars, playbook, sh, unit_state, unit_text,
)
from ansible_collections.sglang.deploy.molecule.shared.gateway import (
    GATEWAY, GatewayTraffic, admin_key, wait_for_listing, worker_url,
)

testinfra_hosts = ["molecule-rollout-1"]

HOSTS = ["molecule-rollout-1", "molecule-rollout-2", "molecule-rollout-3"]
BASE_ARGS = local_vars("sglang")["sglang_server_args"]


def test_the_gateway_serves_from_its_hardened_unit_and_its_key_appears_nowhere():
    """smg runs from the role's unit as its own user; `systemd-analyze security` scores it below
    4.0; the control-plane key is needed for /workers and is in no command line, environment,
    unit, journal, log of the deploy or Ansible fact of the gateway host."""
    key = admin_key()
    assert len(key) >= 32
    score = sh(GATEWAY, "systemd-analyze security smg --no-pager | tail -n 1")
    exposure = float(re.search(r"Overall exposure level for smg\.service: ([0-9.]+)", score).group(1))
    assert exposure < 4.0, score
    pid = sh(GATEWAY, "systemctl show smg -p MainPID --value")
    assert pid != "0", sh(GATEWAY, "systemctl status smg --no-pager || true")
    assert sh(GATEWAY, f"stat -c %U /proc/{pid}") != "root"
    places = {
        "command line": sh(GATEWAY, f"tr '\\0' ' ' < /proc/{pid}/cmdline"),
        "environment": sh(GATEWAY, f"tr '\\0' '\\n' < /proc/{pid}/environ"),
        "unit": sh(GATEWAY, "systemctl cat smg; systemctl show smg"),
        "journal": sh(GATEWAY, "journalctl -u smg --no-pager -o cat"),
        "facts": sh(GATEWAY, "cat /etc/ansible/facts.d/*.fact 2>/dev/null || true"),
    }
    _, out, _ = playbook("deploy.yml", {}, args=("-v", "--tags", "gateway"))
    places["deploy.yml -v"] = out
    leaked = [where for where, text in places.items() if key in text]
    assert not leaked, f"the gateway's control-plane key appears in: {leaked}"
    try:
        with urllib.request.urlopen(f"http://{ip_of(GATEWAY)}:30080/workers", timeout=10) as resp:
            refused = resp.status
    except urllib.error.HTTPError as exc:
        refused = exc.code
    assert refused == 401, f"/workers without the key answered {refused}"
    figure(f"gateway unit (smg): systemd-analyze security {exposure}; control-plane key in none of "
           f"{', '.join(places)}; /workers without it: {refused}")


@pytest.mark.usefixtures("known_good")
def test_a_batch_that_would_leave_fewer_healthy_workers_than_the_floor_is_refused():
    """Host 3's server is stopped before the rollout: the gateway lists 2 of 3 workers healthy.
    With the floor at 2, not even a batch of one may go out: deploy.yml refuses the change before
    any host is touched, naming the floor, the count and the unhealthy worker; host 3 is started
    again afterwards."""
    down = HOSTS[2]
    units = {h: unit_text(h) for h in HOSTS}
    pids = {h: unit_state(h)[0] for h in HOSTS[:2]}
    traffic = GatewayTraffic(HOSTS)
    sh(down, "systemctl stop sglang")
    try:
        wait_for_listing(traffic, f"{down} unhealthy", lambda seen: not seen.get(worker_url(down)))
        args = dict(BASE_ARGS, **{"max-total-tokens": 10240})
        rc, out, took = playbook("deploy.yml", {"sglang_server_args": args, "sglang_rollout_serial": [1, 2],
                                                "sglang_rollout_min_serving": 2}, expect_rc=None)
    finally:
        sh(down, "systemctl start sglang")
    flat = " ".join(out.split())
    assert rc != 0
    assert "sglang_rollout_min_serving is 2 (2 of the gateway's 3 worker(s) must stay healthy)" in flat, out[-3000:]
    assert "the gateway lists 2 healthy" in flat and worker_url(down) in flat, out[-3000:]
    for h in HOSTS[:2]:
        assert unit_state(h)[0] == pids[h], f"{h} was restarted although the rollout was refused"
    for h in HOSTS:
        assert unit_text(h) == units[h], f"{h}'s unit changed although the rollout was refused"
    wait_for_listing(traffic, "every host healthy again", lambda seen: seen == {worker_url(h): True for h in HOSTS},
                     timeout=180)
    assert all(ask(ip_of(h)) == "OK" for h in HOSTS)
    refusal = re.search(r"(sglang_rollout_min_serving[^.]*\.)", flat)
    figure(f"floor refusal (host 3 stopped, floor 2, batches [1, 2]): deploy.yml refused in {took:.0f} s, no host "
           f"touched: {refusal.group(1) if refusal else '?'}")
