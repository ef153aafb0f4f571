# -*- coding: utf-8 -*-
# The serving sentinel of the watchdog (roles/sglang_watchdog; docs/operations.md, "Wrong
# answers"): every sentinel interval the program asks a few of the quality prompts, greedily, in
# one batch of staggered lengths that decodes together with the real traffic, and compares each
# generation with the running release's recorded reference (<release_dir>/<current>/quality.json,
# written when the quality gate accepted the release: plugins/module_utils/release/state.py) by
# the rules of the check at load (plugins/module_utils/quality/load.py: compare_generation,
# wrong). No I/O here: the program asks, this judges and decides. Tested by
# tests/unit/test_sglang_watchdog_sentinel.py.
"""What the serving sentinel asks, how it judges the answers and what a run does about them."""

from ansible_collections.sglang.deploy.plugins.module_utils.quality import load
from ansible_collections.sglang.deploy.plugins.module_utils.watchdog import decide as wd

# why the watchdog gives up on a host whose answers a restart did not make right
GIVE_UP_WRONG = "wrong_answers"

# actions besides decide.py's, carried out in this order with them
INCIDENT = "incident"  # write <state_dir>/incidents/<time>/wrong-answer.json and capture the host
CLEARED = "incident_cleared"  # the incident says the restart cleared it
STILL_WRONG = "incident_still_wrong"  # the incident says it was still wrong after the restart


def new_sentinel():
    """The sentinel's part of the state: counters (Prometheus counters: they survive a reset),
    the last run, and an open incident (the pid that answered wrong, the incident's path)."""
    return {"runs_total": 0, "wrong_total": 0, "last_at": 0.0, "last_seconds": 0.0, "last_ok": True,
            "wrong_pid": 0, "incident": "", "note": ""}


def due(state, obs, actions, now, interval):
    """Whether this watchdog run asks the sentinel's prompts: on a server the liveness probe
    passed on, that the run neither takes out nor restarts and nothing holds or gave up on,
    ``interval`` seconds after the last ask (0: never); while an incident waits for the restarted
    server, at once once a new process serves."""
    s = state.get("sentinel") or {}
    if int(interval or 0) <= 0 or obs.get("held") or state.get("given_up") or not obs.get("probe_ok"):
        return False
    if wd.RESTART in actions or wd.REMOVE in actions:
        return False
    if s.get("wrong_pid"):
        return (obs.get("main_pid") or 0) != s["wrong_pid"]
    return now - float(s.get("last_at") or 0) >= float(interval)


def pick(reference, count):
    """The prompts the sentinel asks: ``count`` entries of the release's reference, the longest
    continuations first (ties by their order), each {index, id, prompt_ids, out: {ids, logprobs,
    top}} in the reference's order: the shape plugins/module_utils/quality/batch.py's
    run_staggered takes. [] when the reference holds no usable entry."""
    entries = (reference or {}).get("entries") or []
    usable = [(i, e) for i, e in enumerate(entries)
              if isinstance(e, dict) and e.get("prompt_ids") and len(e.get("ids") or []) >= 2]
    chosen = sorted(usable, key=lambda item: (-len(item[1]["ids"]), item[0]))[:max(int(count), 0)]
    return [{"index": i, "id": e.get("id") or "p%02d" % i, "prompt_ids": list(e["prompt_ids"]),
             "out": {"ids": list(e["ids"]), "logprobs": list(e.get("logprobs") or []), "top": list(e.get("top") or [])}}
            for i, e in sorted(chosen, key=lambda item: item[0])]


def lengths(refs):
    """max_new_tokens of each asked prompt: staggered (load.staggered) so that the sentinel's own
    rows pass through every size from their count down to 2, every one as long as the references
    allow (the shortest still decodes one step at the full size)."""
    if len(refs) < 2:
        return [len(r["out"]["ids"]) for r in refs]
    longest = load.longest_usable([len(r["out"]["ids"]) for r in refs])
    plan = load.staggered(len(refs), longest)[0]
    extra = longest - max(plan)
    return [n + extra for n in plan]


def judge(rows, refs, tolerance):
    """The verdict of one ask from run_staggered's rows: {ok, generations, near_ties, max_abs,
    wrong: [{prompt, index, batch, position, why, expected: {id, text}, got: {id, text}}]}.
    ``batch``: the sentinel's own rows still decoding at the wrong token's step (real traffic in
    the same decode batch adds to it; None: the prefill)."""
    wrong = []
    for row in rows:
        why = load.wrong(row, tolerance)
        if not why:
            continue
        d = row.get("diverged") or {}
        ref = refs[row["index"]]
        wrong.append({"prompt": ref["id"], "index": ref["index"], "batch": row.get("batch"),
                      "position": d.get("position"), "why": why,
                      "expected": {"id": d.get("alone_id"), "text": d.get("alone_text")},
                      "got": {"id": d.get("batched_id"), "text": d.get("batched_text")}})
    return {"ok": not wrong, "generations": len(rows), "wrong": wrong,
            "near_ties": sum(1 for r in rows if (r.get("diverged") or {}).get("explained")),
            "max_abs": round(max([r["max_abs"] for r in rows] or [0.0]), 6)}


def describe(verdict):
    """One line of a verdict's first wrong generation."""
    if verdict.get("ok"):
        return "%d generations as the reference" % verdict.get("generations", 0)
    w = verdict["wrong"][0]
    return "%d of %d generations wrong; first: prompt %s, token %s decoded at sentinel batch %s: expected %r (id %s), " \
        "got %r (id %s) (%s)" % (len(verdict["wrong"]), verdict["generations"], w["prompt"], w["position"],
                                 w["batch"] if w["batch"] is not None else "- (prefill)", w["expected"]["text"],
                                 w["expected"]["id"], w["got"]["text"], w["got"]["id"], w["why"])


def decide(state, first, retry, obs, config, now):
    """(new state, actions) after one ask: ``first`` the verdict, ``retry`` the verdict of the
    same ask repeated at once (None when ``first`` was right). obs: main_pid. config:
    restart_limit, restart_window.

    Right (at first or on the retry: a transient is no verdict): nothing, or, the server
    restarted for wrong answers answering right, back into every gateway and the incident
    says the restart cleared it. Wrong twice: out of every gateway, the incident, one restart;
    wrong twice again on the restarted server, or with the restart limit reached: given up, the
    host stays out (decide.py's give-up: nothing loops)."""
    state = dict(wd.new_state(), **(state or {}))
    s = dict(new_sentinel(), **(state.get("sentinel") or {}))
    state["sentinel"] = s
    actions = []
    s.update(runs_total=s["runs_total"] + 1, last_at=now)
    if not first["ok"]:
        s["wrong_total"] += 1
    wrong = not first["ok"] and retry is not None and not retry["ok"]
    s["last_ok"] = not wrong
    pid = obs.get("main_pid") or 0
    if not wrong:
        s["note"] = describe(first) if first["ok"] else "wrong, then right at once: %s" % describe(first)
        if s["wrong_pid"]:
            actions += [wd.ADD, CLEARED]
            s.update(wrong_pid=0, note="the restart cleared it: " + s["note"])
            state.update(quarantine=False, out=False)
        return state, actions
    s["note"] = "wrong twice: %s" % describe(retry)
    if s["wrong_pid"]:
        s["wrong_pid"] = 0
        actions.append(STILL_WRONG)
        return wd.give_up(state, GIVE_UP_WRONG, "still wrong after the restart: %s" % describe(retry), actions)
    if not state.get("out"):
        actions.append(wd.REMOVE)
    state.update(out=True, quarantine=True)
    actions.append(INCIDENT)
    if len(wd.restarts_in_window(state, now, config["restart_window"])) >= config["restart_limit"]:
        return wd.give_up(state, GIVE_UP_WRONG, "%d restarts within %d s: %s" % (
            config["restart_limit"], config["restart_window"], describe(retry)), actions)
    s["wrong_pid"] = pid
    actions.append(wd.RESTART)
    wd.note_restart(state, now, pid, config)
    state["note"] = "restarted for wrong answers: " + describe(retry)
    return state, actions
