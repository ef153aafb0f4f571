"""Rolling flag changes across three hosts, driven through deploy.yml.

The module runs once (testinfra_hosts names one host) and orchestrates the whole fleet itself:
it re-runs deploy.yml with extra vars, probes every host with real chat requests while the
rollout runs, and reads unit state with `docker exec`. Every test starts from the state a
fixture brings the fleet to (conftest.py: `baseline`, the inventory's configuration on every
host; `known_good`, every host serving a configuration deployed on purpose, for the tests that
assert against the units they find), never from another test's result: any test runs alone
(`-k`) or in any order. The file's order only saves restores.
"""

from __future__ import annotations

import json
import re
import time

import pytest


from ansible_collections.sglang.deploy.molecule.shared.fleet import (  # noqa: E402
    ROOT, TINY_MODEL, Prober, ask, batches, figure, ip_of, local_vars, playbook, sh,
    stops_since, unit_state, unit_text,
)
from ansible_collections.sglang.deploy.molecule.shared.gateway import (
    GATEWAYS, GatewayTraffic, wait_for_listing, worker_url,
)
from ansible_collections.sglang.deploy.molecule.shared.rollout_checks import (
    assert_gateway_served_throughout, journal_starts, revisions, start_records, starts_since,
    time_of,
)

testinfra_hosts = ["molecule-rollout-1"]

HOSTS = ["molecule-rollout-1", "molecule-rollout-2", "molecule-rollout-3"]


BASE_ARGS = local_vars("sglang")["sglang_server_args"]
# a flag value the inventory does not have: applying it is a change on every host
CHANGED_TOKENS = 8192
assert BASE_ARGS["max-total-tokens"] != CHANGED_TOKENS


def deploy(extra, expect_rc=0, **kw):
    return playbook("deploy.yml", extra, expect_rc, **kw)


def baseline_unit(fleet, host):
    """The unit `host` had at the baseline (the inventory's configuration)."""
    return fleet.states["baseline"][0][host]


# --- tests that change nothing on the fleet -------------------------------------------------


@pytest.mark.usefixtures("known_good")
def test_misspelt_flag_fails_before_any_restart():
    before = {h: (unit_state(h), unit_text(h)) for h in HOSTS}
    args = dict(BASE_ARGS, **{"max-totl-tokens": CHANGED_TOKENS})
    rc, out, took = deploy({"sglang_server_args": args}, expect_rc=None)
    assert rc != 0
    assert "max-totl-tokens" in out, out[-3000:]
    assert "unrecognized arguments" in out or "unrecognised" in out, out[-3000:]
    for h in HOSTS:
        assert unit_state(h)[0] == before[h][0][0], f"{h} restarted on a flag set SGLang rejects"
        assert unit_text(h) == before[h][1]
        assert ask(ip_of(h)) == "OK"
    figure(f"rejected flag set: deploy.yml failed in {took:.0f} s, nothing restarted")


def test_check_diff_shows_the_flag_change_per_host_and_restarts_nothing(baseline):
    """On two of the hosts (-l): each host's unit diff, in the rollout's batches, with nothing
    restarted or written."""
    pair = HOSTS[:2]
    before = {h: unit_state(h)[0] for h in HOSTS}
    args = dict(BASE_ARGS, **{"max-total-tokens": 4096})
    _, out, took = playbook("deploy.yml", {"sglang_server_args": args}, args=("--check", "--diff", "-l", ",".join(pair)))
    assert out.count("+    --max-total-tokens 4096 \\") >= len(pair), out[-3000:]
    assert out.count(f"-    --max-total-tokens {BASE_ARGS['max-total-tokens']} \\") >= len(pair), out[-3000:]
    assert {h: unit_state(h)[0] for h in HOSTS} == before
    for h in HOSTS:
        assert unit_text(h) == baseline_unit(baseline, h)
    figure(f"--check --diff over 2 hosts took {took:.0f} s, nothing restarted")


@pytest.mark.usefixtures("known_good")
def test_gateway_that_does_not_answer_stops_the_rollout_before_anything_changes():
    before = {h: (unit_state(h)[0], unit_text(h)) for h in HOSTS}
    args = dict(BASE_ARGS, **{"max-total-tokens": 10240})
    # the first gateway as the inventory has it, the second one at the discard port
    gateways = [f"http://{ip_of(GATEWAYS[0])}:30080", "http://127.0.0.1:9"]
    rc, out, took = deploy({"sglang_server_args": args, "sglang_gateway_urls": gateways}, expect_rc=None)
    assert rc != 0
    assert "http://127.0.0.1:9" in out and "sglang_gateway_urls" in out, "the failure does not name the gateway"
    assert "PLAY [Roll out host by host]" not in out or "Nothing had been changed on the host" in out, out[-3000:]
    for h in HOSTS:
        assert (unit_state(h)[0], unit_text(h)) == before[h], f"{h} changed although the gateway never answered"
        assert ask(ip_of(h)) == "OK"
    figure(f"gateway not answering: deploy.yml stopped after {took:.0f} s, no host changed")


def test_noop_deploy_restarts_nothing_on_3_and_1_hosts_and_reports_its_cost(baseline):
    """The same deploy.yml with nothing to change, on all 3 hosts, then on 1: no restart,
    changed=0, the serial play gets no host (unchanged hosts are confirmed serving in one parallel
    pass). The seconds of each are figures, not assertions: the hosts share this machine's 2
    cores."""
    before = {h: unit_state(h)[0] for h in HOSTS}
    seconds = {}
    for n in (3, 1):
        _, out, seconds[n] = deploy({}, args=("-l", ",".join(HOSTS[:n])))
        recap = [line for line in out.splitlines() if line.startswith("molecule-rollout-")]
        assert len(recap) == n and all("changed=0" in line for line in recap), recap
        assert "PLAY [Roll out host by host]" in out and "skipping: no hosts matched" in out, out[-3000:]
        assert "TASK [Take the host out of the gateway" not in out
        assert "TASK [Start the server if it is not running and wait until it generates]" in out
    assert {h: unit_state(h)[0] for h in HOSTS} == before, "a no-op deploy restarted a server"
    figure(f"no-op rollout over 3 hosts took {seconds[3]:.0f} s")
    figure("no-op deploy.yml, seconds: " + "; ".join(
        f"{n} host{'s' if n > 1 else ''} {seconds[n]:.0f}" for n in sorted(seconds)))


# --- tests that restart hosts ---------------------------------------------------------------


@pytest.mark.usefixtures("known_good")
def test_crash_at_start_stops_after_first_host_and_restores_it():
    for h in HOSTS:  # a model directory that passes validation (config.json) but cannot load
        sh(h, f"mkdir -p /data/models/broken && cp {TINY_MODEL}/config.json /data/models/broken/")
    before = {h: unit_state(h) for h in HOSTS}
    old_unit = unit_text(HOSTS[0])
    args = dict(BASE_ARGS, **{"model-path": "/data/models/broken"})
    rc, out, _ = deploy({"sglang_server_args": args, "model_files_source": ""}, expect_rc=None)
    assert rc != 0
    assert "exited while starting" in out, "the crash was not reported from the unit's start"
    first = HOSTS[0]
    assert unit_text(first) == old_unit, "host 1 is not back on its old unit"
    assert ask(ip_of(first)) == "OK"
    for h in HOSTS[1:]:
        assert unit_state(h)[0] == before[h][0], f"{h} was restarted although host 1 failed"


# a new model revision changes the numerics at least as far as the quality gate can tell; with
# no task-accuracy check to decide, the operator accepts it on purpose
ACCEPT = {"sglang_verify_quality_accept": True}


# the capacity-safe batches of the gateway test: a canary, then the two others at once, never
# fewer than one worker healthy in the gateway
BATCHES = {"sglang_rollout_serial": [1, 2], "sglang_rollout_min_serving": 1}


def test_gateway_drains_each_batch_while_clients_send_through_it(known_good, hub):
    """The change is a new model revision (and a flag): one Hub download for the fleet, into
    /srv/fleet-store (model_files_shared_root: a directory of the controller all three hosts
    mount read-write, as they would an NFS export), copied from there by every host and checked
    against its stamp; then it rolls in batches of 1, then 2, behind the gateway (smg, deployed
    by roles/sglang_gateway) while clients send short questions and long generations through it:
    none fails or comes back short, each host leaves both gateways (drained: its in-flight
    requests finished) before its server stops, and neither gateway lists fewer healthy
    workers than the floor. Run as `-l sglang_hosts` (the README's `-l blackwell`): the gateway
    plays are skipped, and both gateways still see every drain and rejoin."""
    revision = dict(hub.new_revision("gateway"), before=known_good.units())
    before = {h: unit_state(h)[0] for h in HOSTS}
    new_dir, old = revision["dir"], TINY_MODEL.rsplit("/", 1)[-1]
    args = dict(BASE_ARGS, **{"max-total-tokens": 6144, "model-path": new_dir})
    since = float(sh(HOSTS[0], "date +%s"))
    watched = {h: sh(h, "sglang-watchdog status") for h in HOSTS}
    # each host's own state from its model listing: no question sent past the gateway (one in
    # flight would hold the drained server's stop, as no client of a gateway would)
    with GatewayTraffic(HOSTS) as gateway, Prober(HOSTS, models=True) as probe:
        _, out, took = deploy({"sglang_server_args": args, **revision["vars"], **BATCHES, **ACCEPT}, timed=True,
                              args=("-l", "sglang_hosts"))
        time.sleep(1)
    final = wait_for_listing(gateway, "every host healthy", lambda seen: seen == {worker_url(h): True for h in HOSTS})
    known_good.remember("new revision", revision)  # the state the rollback test starts from
    resolved = hub.resolved(revision["sha"])
    assert sorted(resolved) == sorted(revision["files"]), resolved  # the endpoint asked once per file
    after = {h: unit_state(h) for h in HOSTS}
    for h in HOSTS:
        assert after[h][0] != before[h], f"{h} was not restarted"
        assert starts_since(h, since) == 1, f"{h} was started more than once"
        assert "--max-total-tokens 6144" in unit_text(h) and f"--model-path {new_dir}" in unit_text(h)
        stamp = json.loads(sh(h, f"cat {new_dir}/.sglang-deploy-model.json"))
        assert stamp["revision"] == revision["sha"], stamp
        assert stamp["source"] == f"path:/srv/fleet-store/tiny-qwen2/{revision['sha']}", stamp
        # keep 0: the old revision stayed (the unit named it, a recorded release loads it)
        assert {old, revision["sha"]} <= set(revisions(h)), revisions(h)
    # (the console wraps long lines: any whitespace between the words)
    accepted = re.findall(r"the\s+model\s+revision\s+changed:\s+accepted\s+by\s+the\s+operator", out)
    assert len(accepted) >= len(HOSTS), out[-3000:]
    found = batches(out, "Roll out host by host")
    assert len(found) == 2, f"expected the batches [1, 2], found {len(found)} batches"
    flat = " ".join(out.split())  # the console wraps a long message over lines
    drained = re.findall(r"removed http://molecule-rollout-\d:30000 from gateway \S+ .*?; no request running or queued after", flat)
    assert len(drained) == len(HOSTS), f"expected a finished drain per host: {drained}\n{out[-3000:]}"
    for h in HOSTS:  # out of both gateways, each named, before the drain
        left = set(re.findall(r"removed %s from gateway (\S+) " % re.escape(worker_url(h)), flat))
        assert len(left) == len(GATEWAYS), f"{h} left {sorted(left)}, not both gateways\n{out[-3000:]}"
    # -l sglang_hosts: the gateway plays had no host, the rollout still drained from both
    assert re.search(r"PLAY \[Install and start the gateway \(smg\) in front of the SGLang hosts\][^\n]*\n"
                     r"skipping: no hosts matched", out), out[:3000]
    # batch 1 (host 1) was serving again before batch 2 (hosts 2 and 3) stopped
    down = {h: [t for t, r in probe.samples if not r[h]] for h in HOSTS}
    assert all(down.values()), f"the probe did not see every host restart: {down}"
    assert max(down[HOSTS[0]]) < min(min(down[HOSTS[1]]), min(down[HOSTS[2]])), "batch 2 stopped before batch 1 served"
    assert_gateway_served_throughout(gateway, final, floor=BATCHES["sglang_rollout_min_serving"])
    for h in HOSTS:  # each host's liveness watchdog was held through its turn: it restarted nothing
        restarts = [json.loads(text)["state"].get("restarts_total", 0) if json.loads(text)["state"] else 0
                    for text in (watched[h], sh(h, "sglang-watchdog status"))]
        assert restarts[0] == restarts[1], f"{h}: its watchdog restarted it during the rollout: {restarts}"
        assert "held (rollout)" in sh(h, f"journalctl -u sglang-watchdog --since @{since:.0f} --no-pager -o cat"), (
            f"{h}: no watchdog run saw the rollout's hold")
    for h in HOSTS:  # neither gateway routed to a host whose server did not answer
        during = [each for t, each in gateway.per_gateway if min(down[h]) <= t <= max(down[h])]
        assert during, f"no gateway listing was recorded while {h} was down"
        for each in during:
            assert len(each) == len(GATEWAYS) and not any(listed.get(worker_url(h)) for listed in each.values()), (
                f"a gateway listed {h} healthy while its server was not answering: {each}")
    figure(f"rollout behind the gateway (smg 1.13.0) in batches [1, 2], floor 1: {len(gateway.requests)} questions and "
           f"{len(gateway.long)} long generations through it during {took:.0f} s, {len(gateway.failed())} failed or cut; "
           f"fewest healthy workers listed: {gateway.fewest_healthy()}; the change was a new model revision: the Hub "
           f"endpoint asked once for each of its {len(resolved)} files, every host copied it from the shared storage")
    stops = [stops_since(h, since) for h in HOSTS]
    assert all(len(s) == 1 for s in stops), f"expected one stop per host in the journal: {stops}"
    # the playbook's own cost per batch (profile_tasks): the batch minus the server's own stop +
    # start as the playbook waited on it (the restart task, then the wait for a real generation)
    (ROOT / "reports" / "rollout-timed.log").write_text(out, encoding="utf-8")  # per-task times
    server = [sum(sec for task, sec in b["tasks"]
                  if "Restart sglang server" in task or "Wait until the server generates" in task)
              for b in found]
    assert all(server), f"no restart/wait task timed in a batch: {found}"
    figure("playbook overhead per batch beyond the server's own stop + start: " + ", ".join(
        f"batch of {n} {b['seconds'] - s:.1f} s (stop + start {s:.1f} s)" for n, b, s in zip((1, 2), found, server))
        + "; each host's stop (SIGTERM to exit, drained out of the gateway first): "
        + ", ".join(f"{s[0]:.1f}" for s in stops) + " s")
    figure("rolled change by batch size (3 hosts, batches [1, 2]): before the first batch "
           f"{found[0]['start']:.0f} s; batch of 1 {found[0]['seconds']:.0f} s; batch of 2 {found[1]['seconds']:.0f} s; "
           f"whole run {took:.0f} s")


@pytest.fixture(name="on_new_revision")
def fixture_on_new_revision(fleet, hub):
    """Every host on a new model revision, with the units of the release before it (`before`):
    the state the gateway test leaves, reused while every host still has its unit; otherwise the
    baseline, then a new revision rolled over the 3 hosts."""
    revision = fleet.current("new revision")
    if revision is None:
        fleet.ensure_baseline()
        revision = dict(hub.new_revision("rollback"), before=fleet.units())
        deploy({"sglang_server_args": dict(BASE_ARGS, **{"model-path": revision["dir"]}), **revision["vars"], **ACCEPT})
        fleet.remember("new revision", revision)
    return revision


def test_a_rollback_whose_gate_fails_goes_back_and_rejoins_both_gateways(on_new_revision):
    """The release a rollback puts back on host 1 fails its gate (its stored quality reference
    no longer matches what it answers: every logprob shifted by 1.0 on the host): rollback.yml
    fails, host 1 goes back to the release it started from (the new revision), is confirmed
    against that release's own reference and rejoins both gateways; clients sending through
    the gateways meanwhile see no failure. Nothing is drained silently: the failure says where
    the host is. Before the plain rollback in the file: it ends where it starts (every host on the
    new revision), so both reuse the state the gateway test leaves instead of a new rollout of it."""
    first, new = HOSTS[0], on_new_revision
    state = json.loads(sh(first, "cat /etc/ansible/facts.d/sglang_release.fact"))
    reference = f"/var/lib/sglang-deploy/releases/{state['previous']}/quality.json"
    saved = sh(first, f"cat {reference}")
    shifted = json.loads(saved)
    for entry in shifted["entries"]:
        entry["logprobs"] = [None if lp is None else lp + 1.0 for lp in entry["logprobs"]]
    sh(first, f"cat > {reference} <<'EOF'\n{json.dumps(shifted)}\nEOF")
    unit = unit_text(first)
    since = float(sh(first, "date +%s"))
    try:
        with GatewayTraffic(HOSTS) as gateway:
            rc, out, took = playbook("playbooks/rollback.yml", {}, args=("-l", first), expect_rc=None)
            time.sleep(1)
        final = wait_for_listing(gateway, "every host healthy in both gateways",
                                 lambda seen: seen == {worker_url(h): True for h in HOSTS})
    finally:
        sh(first, f"cat > {reference} <<'EOF'\n{saved}\nEOF")
    flat = " ".join(out.split())
    assert rc != 0
    assert re.search(r"failed verification \(gate\): quality degraded against reference", out), out[-4000:]
    assert "put back on its last-known-good release" in flat and "back in every gateway" in flat, out[-3000:]
    assert unit_text(first) == unit and f"--model-path {new['dir']}" in unit, "host 1 is not back on the new revision"
    assert ask(ip_of(first)) == "OK"
    assert len(stops_since(first, since)) == 2, "expected the rollback's stop and the fall-back's stop"
    assert_gateway_served_throughout(gateway, final, floor=len(HOSTS) - 1)
    figure(f"rollback.yml whose gate fails (1 host, 2 gateways): back on the release it started from, confirmed and "
           f"in both gateways in {took:.0f} s; {len(gateway.requests)} questions and {len(gateway.long)} long "
           f"generations through the gateways, {len(gateway.failed())} failed or cut")


def test_rollback_returns_to_the_previous_model_revision_which_stays_while_a_release_names_it(on_new_revision):
    """From every host on a new model revision, rollback.yml puts host 1 back on the release
    before it, with the previous revision, which no run removed; the other hosts keep serving
    the new one. A model_files run with keep 0 then removes nothing: the new revision is neither
    put in place nor named by the unit of the rolled-back host, but the release rolled back from
    still names it."""
    first, others, old, new = HOSTS[0], HOSTS[1:], TINY_MODEL.rsplit("/", 1)[-1], on_new_revision
    pids = {h: unit_state(h)[0] for h in others}
    _, out, took = playbook("playbooks/rollback.yml", {}, args=("-l", first))
    # the restored release judged against its own quality reference, which came back with it
    assert len(re.findall(r"quality +same: top-1 1\.0,", out)) == 1, out[-3000:]
    assert unit_text(first) == new["before"][first] and ask(ip_of(first)) == "OK", out[-3000:]
    for h in others:
        assert f"--model-path {new['dir']}" in unit_text(h) and ask(ip_of(h)) == "OK"
        assert unit_state(h)[0] == pids[h], f"{h} was restarted by a rollback of {first}"
    kept = revisions(first)
    assert {old, new["sha"]} <= set(kept), kept
    _, out, _ = deploy({"model_files_keep_revisions": 0}, args=("-l", first, "--tags", "model_files"))
    assert "TASK [model_files : Choose the revisions of this model that nothing uses" in out, out[-3000:]
    assert revisions(first) == kept, out[-3000:]
    figure(f"rollback.yml of the model revision change on 1 host: {took:.0f} s")


@pytest.mark.usefixtures("known_good")
def test_subtly_wrong_output_fails_the_quality_gate_and_the_restored_host_rejoins_the_gateway():
    """A flag that starts fine, answers every known-answer probe right and still changes the
    answers: the model's RMSNorm epsilon overridden from 1e-6 to 0.001. Only the quality gate
    (the host's answers against its last-known-good release's reference) fails it; the host is
    restored, confirmed against that same reference, and rejoins the gateway; no request through
    the gateway fails meanwhile."""
    before = {h: unit_state(h)[0] for h in HOSTS}
    old_unit = unit_text(HOSTS[0])
    args = dict(BASE_ARGS, **{"json-model-override-args": {"rms_norm_eps": 0.001}})
    since = float(sh(HOSTS[0], "date +%s"))
    with GatewayTraffic(HOSTS) as gateway:
        rc, out, _ = deploy({"sglang_server_args": args}, expect_rc=None)
        time.sleep(1)
    final = wait_for_listing(gateway, "every host healthy", lambda seen: seen == {worker_url(h): True for h in HOSTS})
    assert rc != 0
    # the only failure is the quality gate's: the probes and the speed gates that existed before passed
    failed = re.search(r"failed verification \(gate\): (.*)$", out, re.M)
    assert failed and failed.group(1).startswith("quality degraded against reference"), out[-4000:]
    assert " | " not in failed.group(1), f"more gates than the quality gate failed: {failed.group(1)}"
    assert re.search(r"Where: prompt \S+ \(.*\), continuation token \d+: reference token .* had logprob -?[0-9.]+, "
                     r"now -?[0-9.]+", failed.group(1)), failed.group(1)
    assert re.search(r"probes +5/5 passed", out), "the known-answer probes did not all pass"
    assert re.search(r"quality +same: top-1 1\.0", out), "the restored host was not judged same as its own reference"
    assert "last-known-good" in out
    assert unit_text(HOSTS[0]) == old_unit, "host 1 is not back on its old unit"
    assert unit_state(HOSTS[0])[0] != before[HOSTS[0]], "host 1 was not restarted (so not restored)"
    for h in HOSTS[1:]:
        assert unit_state(h)[0] == before[h], f"{h} was restarted although host 1 failed"
    assert_gateway_served_throughout(gateway, final, floor=len(HOSTS) - 1)
    stops = stops_since(HOSTS[0], since)
    assert len(stops) == 2, f"host 1: expected the change's stop and the restore's stop, found {stops}"
    degraded = re.search(r"quality +degraded: (top-1 [0-9.]+, mean \|d logprob\| [0-9.]+)", out)
    figure(f"subtly wrong output (RMSNorm epsilon 1e-6 -> 0.001: probes pass) behind the gateway: quality gate "
           f"{degraded.group(1) if degraded else '?'}; {len(gateway.requests)} questions and {len(gateway.long)} long "
           f"generations through the gateway, {len(gateway.failed())} failed or cut; host 1 restored, confirmed and "
           f"back in the gateway; its stops (SIGTERM to exit, drained out of the gateway first): " + ", ".join(f"{x:.1f}" for x in stops) + " s")


@pytest.fixture(name="warm_started")
def fixture_warm_started(known_good):
    """Every host serving, with a warm start of its generation in its start log (a restart
    through deploy.yml: from the baseline a flag change, then the baseline back), made here only
    where there is none."""
    cold_only = [h for h in HOSTS if len(start_records(h)[1]) < 2]
    if cold_only:
        known_good.ensure_baseline()
        deploy({"sglang_server_args": dict(BASE_ARGS, **{"max-total-tokens": CHANGED_TOKENS})},
               args=("-l", ",".join(cold_only)))
        known_good.ensure_baseline()
    return known_good


@pytest.mark.usefixtures("warm_started")
def test_each_start_is_logged_cold_then_warm_with_its_seconds_and_a_cache_per_generation():
    """The first start of a generation on a host is cold (no earlier start of it there), the
    restarts since are warm (same generation, same cache directory); each record's `seconds`
    (the unit's start to its first generation, sglang_server_wait) puts the start where the
    journal has systemd's 'Started sglang.service' (`at` is whole seconds, so the start it gives
    is up to 1 s early). The figures are reported, not asserted against a speed: the hosts
    share this machine's 2 cores."""
    cold, warm, checked = [], [], 0
    for h in HOSTS:
        gen, mine = start_records(h)
        assert f'XDG_CACHE_HOME="/var/cache/sglang/{gen}"' in sh(h, "cat /etc/sglang/sglang.env")
        assert f"CacheDirectory=sglang/{gen}" in unit_text(h)
        assert sh(h, f"stat -c %a /var/cache/sglang/{gen}") == "700"
        assert len(mine) >= 2 and mine[0]["cache"] == "cold", mine
        assert all(r["cache"] == "warm" for r in mine[1:]), mine
        assert all(isinstance(r["seconds"], (int, float)) and r["seconds"] > 0 for r in mine), mine
        started = journal_starts(h)
        in_journal = [r for r in mine if started and time_of(r) - r["seconds"] >= min(started) - 1]
        assert in_journal, f"{h}: no start of generation {gen} is in the journal any more: {mine}"
        for r in in_journal:
            begun = time_of(r) - r["seconds"]
            nearest = min(started, key=lambda t, b=begun: abs(t - b))
            assert -0.5 <= nearest - begun <= 1.5, (
                f"{h}: a start recorded at {r['at']} after {r['seconds']} s began at {begun:.1f}, but the journal's "
                f"nearest 'Started sglang.service' is at {nearest:.1f}")
            checked += 1
        cold.append(mine[0]["seconds"])
        warm += [r["seconds"] for r in mine[1:]]

    def med(values):
        return sorted(values)[len(values) // 2]
    figure(f"server start to the first generation (local model, 3 hosts): cold {med(cold):.1f} s median "
           f"({min(cold):.1f}-{max(cold):.1f}, n={len(cold)}), warm {med(warm):.1f} s median "
           f"({min(warm):.1f}-{max(warm):.1f}, n={len(warm)}); {checked} of them matched to the journal's starts")
