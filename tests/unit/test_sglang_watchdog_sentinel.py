"""The serving sentinel of the watchdog (plugins/module_utils/watchdog/sentinel.py): what it asks,
how it judges answers against the release's reference (the comparison of the check at load),
what a run decides, run after run with the liveness decisions (watchdog/decide.py), and the
textfile's figures."""

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.quality import batch
from ansible_collections.sglang.deploy.plugins.module_utils.quality import load
from ansible_collections.sglang.deploy.plugins.module_utils.watchdog import decide as wd
from ansible_collections.sglang.deploy.plugins.module_utils.watchdog import sentinel as sen
from ansible_collections.sglang.deploy.plugins.module_utils.watchdog.metrics import render

CONFIG = {"threshold": 3, "restart_limit": 3, "restart_window": 3600, "restart_backoff": 60,
          "start_grace": 300, "stop_grace": 180, "fatal_xids": [8, 79], "interval": 5}
TOL = {"max_abs_dlogprob": 0.05, "divergence_margin": 0.05}
SERVING = {"active": "active", "main_pid": 100, "active_since": 0.0, "probe_ok": True, "progress": 10.0,
           "listed_everywhere": True, "listed_anywhere": True}


def entry(i, n=24):
    """A reference entry as quality/run.py records it: prompt ids, the continuation, its
    teacher-forced logprobs and top-k ([logprob, id, text])."""
    ids = [1000 * i + j for j in range(n)]
    return {"id": "p%02d" % i, "prompt_ids": [i, i + 1], "ids": ids, "logprobs": [-0.1] * n,
            "top": [[[-0.1, t, "t%d" % t], [-3.0, 7, "x"]] for t in ids], "texts": ["t%d" % t for t in ids]}


REFERENCE = {"prompt_set": "abc", "top_k": 5, "entries": [entry(i, 24 if i % 3 else 10) for i in range(12)]}


class Server:
    """/generate of a server answering each prompt as the reference, except, in decode steps
    whose batch (the sentinel's rows still running plus ``traffic`` other requests) has a size in
    ``band``, the token of the row before it (tests/faults/batched_decode); logprobs moved by
    ``jitter`` (batch variance)."""

    def __init__(self, reference, band=(0, 0), traffic=0, jitter=0.0):
        self.answers = dict((tuple(e["prompt_ids"]), e["ids"]) for e in reference["entries"])
        self.band, self.traffic, self.jitter, self.asked = band, traffic, jitter, 0

    def post_json(self, path, body):
        assert path == "/generate" and body["sampling_params"][0]["temperature"] == 0
        self.asked += 1
        keys = [tuple(p) for p in body["input_ids"]]
        lengths = [min(p["max_new_tokens"], len(self.answers[k])) for p, k in zip(body["sampling_params"], keys)]
        out = []
        for r, key in enumerate(keys):
            ids = []
            for pos in range(lengths[r]):
                alive = [j for j in range(len(keys)) if lengths[j] > pos]
                src = key
                if pos and self.band[0] <= len(alive) + self.traffic <= self.band[1] and len(alive) > 1:
                    src = keys[alive[(alive.index(r) - 1) % len(alive)]]
                ids.append(self.answers[src][pos])
            lps = [[-0.1 + self.jitter, t, "t%d" % t] for t in ids]
            out.append({"output_ids": ids, "meta_info": {"output_token_logprobs": lps,
                                                         "output_top_logprobs": [[e] for e in lps]}})
        return 200, out


def ask(server, count=8):
    refs = sen.pick(REFERENCE, count)
    rows, _ = batch.run_staggered(server, refs, sen.lengths(refs), 5, TOL["divergence_margin"])
    return sen.judge(rows, refs, TOL)


def test_it_asks_the_longest_references_in_their_order_through_every_size_of_its_own_batch():
    refs = sen.pick(REFERENCE, 8)
    # entries 0, 3, 6, 9 end after 10 tokens: the eight of 24 tokens are asked
    assert [r["index"] for r in refs] == [1, 2, 4, 5, 7, 8, 10, 11] and refs[0]["id"] == "p01"
    lengths = sen.lengths(refs)
    assert max(lengths) == 24 and len(lengths) == 8
    sizes = load.stagger_sizes(lengths)
    assert sorted(set(s for s in sizes if s)) == list(range(2, 9))
    assert sum(lengths) <= 8 * 24
    assert sen.pick({"entries": [entry(0, 1)]}, 8) == [] and sen.pick(None, 8) == []


def test_an_unchanged_server_is_right_at_any_traffic_and_within_the_batch_variance():
    for traffic in (0, 5, 40):
        verdict = ask(Server(REFERENCE, traffic=traffic))
        assert verdict["ok"] and verdict["wrong"] == [] and verdict["generations"] == 8
    # logprobs moved within the tolerance: right; beyond it: wrong
    assert ask(Server(REFERENCE, jitter=0.04))["ok"]
    moved = ask(Server(REFERENCE, jitter=0.06))
    assert not moved["ok"] and moved["wrong"][0]["why"].startswith("|d logprob| 0.06")


@pytest.mark.parametrize("band", [(2, 2), (3, 5), (8, 8)])
def test_a_fault_in_a_band_of_its_own_batch_sizes_is_wrong_naming_the_size_and_both_tokens(band):
    verdict = ask(Server(REFERENCE, band=band))
    assert not verdict["ok"]
    first = verdict["wrong"][0]
    assert band[0] <= first["batch"] <= band[1]
    assert first["expected"]["id"] != first["got"]["id"] and first["expected"]["text"] == "t%d" % first["expected"]["id"]
    assert "decoded at sentinel batch %d" % first["batch"] in sen.describe(verdict)


def test_a_band_only_traffic_reaches_is_seen_when_the_traffic_fills_the_batch():
    assert ask(Server(REFERENCE, band=(40, 48), traffic=0))["ok"]
    verdict = ask(Server(REFERENCE, band=(40, 48), traffic=36))
    assert not verdict["ok"] and verdict["wrong"][0]["batch"] + 36 >= 40


RIGHT = {"ok": True, "generations": 8, "wrong": [], "near_ties": 0, "max_abs": 0.0}


def wrong_verdict():
    return ask(Server(REFERENCE, band=(2, 8)))


def test_due_every_interval_on_a_serving_host_and_at_once_on_the_restarted_server():
    state = wd.new_state()
    assert sen.due(state, SERVING, [], 1000.0, 120)
    assert not sen.due(state, SERVING, [], 1000.0, 0)
    assert not sen.due(state, dict(SERVING, probe_ok=False), [], 1000.0, 120)
    assert not sen.due(state, dict(SERVING, held=True), [], 1000.0, 120)
    assert not sen.due(state, SERVING, [wd.RESTART], 1000.0, 120)
    state, _ = sen.decide(state, RIGHT, None, SERVING, CONFIG, 1000.0)
    assert not sen.due(state, SERVING, [], 1119.0, 120) and sen.due(state, SERVING, [], 1120.0, 120)
    state, _ = sen.decide(state, wrong_verdict(), wrong_verdict(), SERVING, CONFIG, 1120.0)
    # waiting for the restart: not the process that answered wrong, at once the new one
    assert not sen.due(state, SERVING, [], 1125.0, 120)
    assert sen.due(state, dict(SERVING, main_pid=200), [], 1125.0, 120)
    assert not sen.due(dict(state, given_up={"reason": "x"}), dict(SERVING, main_pid=200), [], 1125.0, 120)


def test_wrong_then_right_at_once_is_a_transient_counted_not_acted_on():
    state, actions = sen.decide(wd.new_state(), wrong_verdict(), RIGHT, SERVING, CONFIG, 1000.0)
    assert actions == [] and state["sentinel"]["wrong_total"] == 1 and state["sentinel"]["last_ok"]
    assert state["sentinel"]["runs_total"] == 1 and not state["out"] and state["restarts_total"] == 0
    assert state["sentinel"]["note"].startswith("wrong, then right at once")


def test_wrong_twice_out_incident_one_restart_then_back_in_when_the_restart_cleared_it():
    state, actions = sen.decide(wd.new_state(), wrong_verdict(), wrong_verdict(), SERVING, CONFIG, 1000.0)
    assert actions == [wd.REMOVE, sen.INCIDENT, wd.RESTART]
    assert state["out"] and state["quarantine"] and state["sentinel"]["wrong_pid"] == 100
    assert state["restarts_total"] == 1 and state["restart_pid"] == 100 and not state["sentinel"]["last_ok"]
    # the restarted server answers the probe: the liveness decision does not put it back
    new = dict(SERVING, main_pid=200, listed_everywhere=False, listed_anywhere=False)
    state, actions = wd.decide(state, new, CONFIG, 1030.0)
    assert actions == [] and state["out"] and state["note"].startswith("serving, out of the gateways")
    # its answers are right: back into every gateway, the incident says the restart cleared it
    state, actions = sen.decide(state, RIGHT, None, new, CONFIG, 1030.0)
    assert actions == [wd.ADD, sen.CLEARED] and not state["out"] and not state["quarantine"]
    assert state["sentinel"]["wrong_pid"] == 0 and state["sentinel"]["note"].startswith("the restart cleared it")
    # and the liveness decision keeps it listed from then on
    state, actions = wd.decide(state, new, CONFIG, 1035.0)
    assert actions == [wd.ADD]


def test_still_wrong_after_the_restart_gives_up_and_nothing_loops():
    state, _ = sen.decide(wd.new_state(), wrong_verdict(), wrong_verdict(), SERVING, CONFIG, 1000.0)
    new = dict(SERVING, main_pid=200)
    state, actions = sen.decide(state, wrong_verdict(), wrong_verdict(), new, CONFIG, 1060.0)
    assert actions == [sen.STILL_WRONG] and state["given_up"]["reason"] == sen.GIVE_UP_WRONG
    assert "still wrong after the restart" in state["given_up"]["detail"] and state["out"]
    assert state["restarts_total"] == 1
    # given up: no sentinel, no restart, no way back in but a reset
    assert not sen.due(state, new, [], 5000.0, 120)
    for t in (1065.0, 1070.0, 9000.0):
        state, actions = wd.decide(state, dict(new, listed_anywhere=False), CONFIG, t)
        assert actions == [] and state["given_up"]


def test_at_the_restart_limit_wrong_answers_give_up_without_a_restart():
    state = dict(wd.new_state(), restarts=[900.0, 950.0, 990.0], restarts_total=3)
    state, actions = sen.decide(state, wrong_verdict(), wrong_verdict(), SERVING, CONFIG, 1000.0)
    assert actions == [wd.REMOVE, sen.INCIDENT] and state["given_up"]["reason"] == sen.GIVE_UP_WRONG
    assert state["restarts_total"] == 3 and "3 restarts within 3600 s" in state["given_up"]["detail"]


def test_the_textfile_counts_runs_wrong_answers_and_says_out_and_given_up():
    state, _ = sen.decide(wd.new_state(), RIGHT, None, SERVING, CONFIG, 1000.0)
    state, _ = sen.decide(state, wrong_verdict(), wrong_verdict(), SERVING, CONFIG, 1200.0)
    state["sentinel"]["last_seconds"] = 0.42
    text = render("sglang", state, 1200.0, True, False, {})
    assert 'sglang_watchdog_sentinel_runs_total{service="sglang"} 2' in text
    assert 'sglang_watchdog_sentinel_wrong_total{service="sglang"} 1' in text
    assert 'sglang_watchdog_sentinel_ok{service="sglang"} 0' in text
    assert 'sglang_watchdog_sentinel_out{service="sglang"} 1' in text
    assert 'sglang_watchdog_sentinel_last_seconds{service="sglang"} 0.42' in text
    state, _ = sen.decide(state, wrong_verdict(), wrong_verdict(), dict(SERVING, main_pid=200), CONFIG, 1300.0)
    text = render("sglang", state, 1300.0, True, False, {})
    assert 'sglang_watchdog_given_up{service="sglang",reason="wrong_answers"' in text
    assert 'sglang_watchdog_sentinel_out{service="sglang"} 1' in text
    fresh = render("sglang", wd.new_state(), 1.0, True, False, {})
    assert 'sglang_watchdog_sentinel_out{service="sglang"} 0' in fresh and 'sentinel_ok{service="sglang"} 1' in fresh


def _program():
    from ansible_collections.sglang.deploy.roles.sglang_watchdog.files import sglang_watchdog_run
    return sglang_watchdog_run


def test_the_program_takes_a_wrong_host_out_writes_the_incident_restarts_and_brings_it_back(tmp_path):
    """run() of the installed program, its host's systemd, gateways and server replaced: the
    reference read from the current release's quality.json, the incident written, the restart
    issued once, and back in once the restarted server answers right."""
    import json
    program = _program()
    releases, fact = tmp_path / "releases", tmp_path / "sglang_release.fact"
    (releases / "rel000000001").mkdir(parents=True)
    (releases / "rel000000001" / "quality.json").write_text(json.dumps(REFERENCE))
    fact.write_text(json.dumps({"current": "rel000000001"}))
    config = dict(CONFIG, service="sglang", state_dir=str(tmp_path / "state"), release_dir=str(releases),
                  release_fact=str(fact), sentinel_interval=60, sentinel_prompts=8, sentinel_tolerance=TOL,
                  sentinel_timeout=5, base_url="http://127.0.0.1:1", metrics_url="http://127.0.0.1:1/metrics",
                  journal_lines=5, keep_incidents=5, textfile_dir=str(tmp_path / "textfile"), gateways=[])
    (tmp_path / "state").mkdir()

    class FakeHost(program.Host):
        def __init__(self, server):
            super().__init__(config)
            self.server, self.pid, self.done = server, 100, []

        def unit(self):
            return "active", self.pid, 0.0

        def probe(self):
            return True, False, "answered"

        def progress(self):
            return 1.0

        def listings(self):
            return {}

        def remove(self, seen):
            self.done.append("remove")

        def add(self, seen):
            self.done.append("add")

        def capture(self, now, state):
            self.done.append("capture")

        def restart(self):
            self.done.append("restart")

        def post_json(self, path, body):
            return self.server.post_json(path, body)

    host = FakeHost(Server(REFERENCE, band=(2, 8)))
    program.run(config, host, 1000.0)
    assert host.done == ["remove", "capture", "restart"] and host.server.asked == 2
    state = json.loads((tmp_path / "state" / "state.json").read_text())
    incident = json.loads(open(state["sentinel"]["incident"]).read())
    assert incident["release"] == "rel000000001" and incident["action"] == "out of every gateway, restarted once"
    assert 2 <= incident["wrong"]["batch"] <= 8 and incident["wrong"]["prompt"].startswith("p")
    assert incident["wrong"]["expected"]["id"] != incident["wrong"]["got"]["id"]
    assert "metrics" in incident and "journal" in incident
    # the same process again, before the restart took it: not asked
    program.run(config, host, 1005.0)
    assert host.server.asked == 2
    # the restarted server answers right: back in, the incident says the restart cleared it
    host.server, host.pid, host.done = Server(REFERENCE), 200, []
    program.run(config, host, 1030.0)
    assert host.done == ["add"] and host.server.asked == 1
    incident = json.loads(open(state["sentinel"]["incident"]).read())
    assert incident["after_restart"]["outcome"] == "cleared by the restart"
    text = (tmp_path / "textfile" / "sglang_watchdog.prom").read_text()
    assert 'sglang_watchdog_sentinel_wrong_total{service="sglang"} 1' in text
    assert 'sglang_watchdog_sentinel_out{service="sglang"} 0' in text
