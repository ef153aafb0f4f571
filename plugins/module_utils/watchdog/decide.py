# -*- coding: utf-8 -*-
# The decisions of the liveness watchdog (roles/sglang_watchdog): what one run does, given what
# it saw on the host and what earlier runs kept. No I/O here: the program that runs on the host
# (roles/sglang_watchdog/files/sglang-watchdog) reads the host, calls decide(), carries out the
# actions and keeps the state. Rationale: docs/operations.md, "Healing". Tested by
# tests/unit/test_sglang_watchdog.py.
"""What one run of the liveness watchdog decides."""

# why a run gives up restarting a host: it stays out of every gateway until an operator (or the
# next rollout's turn on it) resets it
GIVE_UP_LIMIT = "restart_limit"
GIVE_UP_XID = "gpu_xid"
GIVE_UP_STUCK = "process_stuck"

# actions, carried out in this order by the program
REMOVE = "remove_from_gateways"
CAPTURE = "capture"
RESTART = "restart"
ADD = "add_to_gateways"


def new_state():
    """The state of a host the watchdog has not seen yet."""
    return {"failures": 0, "progress": None, "restarts": [], "restarts_total": 0, "restarted_at": 0.0,
            "restart_pid": 0, "served_pid": 0, "given_up": None, "out": False, "quarantine": False, "note": ""}


def hold_active(hold, now):
    """Whether a hold ({reason, until}: until 0 = no end) stops the watchdog at time now."""
    if not hold:
        return False
    until = float(hold.get("until") or 0)
    return until <= 0 or now < until


def restarts_in_window(state, now, window):
    return [t for t in state.get("restarts", []) if now - t < window]


def backoff_left(state, now, config):
    """Seconds until the next restart is allowed: the n-th restart in the window waits
    backoff * 2**(n-2) after the one before (the first and second restart wait nothing extra)."""
    recent = restarts_in_window(state, now, config["restart_window"])
    if len(recent) < 2:
        return 0.0
    wait = config["restart_backoff"] * 2 ** (len(recent) - 2)
    return max(0.0, recent[-1] + wait - now)


def starting(obs, state, config, now):
    """Whether the server is in its start: the unit's main process is not one a probe ever
    passed on, and it became active less than start_grace seconds ago."""
    pid = obs.get("main_pid") or 0
    return pid != state.get("served_pid") and now - (obs.get("active_since") or 0) < config["start_grace"]


def fatal_xids(lines, fatal):
    """The kernel log's 'NVRM: Xid (PCI:...): <n>, ...' lines whose Xid is in `fatal`."""
    found = []
    for line in lines or []:
        if "NVRM: Xid" not in line:
            continue
        try:
            xid = int(line.split("):", 1)[1].split(",", 1)[0].strip())
        except (IndexError, ValueError):
            continue
        if xid in fatal:
            found.append(line.strip())
    return found


def note_restart(state, now, pid, config):
    """Count a restart the run issues: in the back-off window, the counter, the pid it replaces."""
    state["restarts"] = restarts_in_window(state, now, config["restart_window"]) + [now]
    state.update(restarts_total=state["restarts_total"] + 1, restarted_at=now, restart_pid=pid or 0)
    return state


def give_up(state, reason, detail, actions):
    state["given_up"] = {"reason": reason, "detail": detail}
    state["note"] = "gave up (%s): %s" % (reason, detail)
    if not state.get("out"):
        actions.append(REMOVE)
    state["out"] = True
    return state, actions


def decide(state, obs, config, now):
    """(new state, actions) of one run.

    obs: held (bool), hold_reason, active ('active', 'activating', 'inactive', 'failed', ...), main_pid,
    active_since (epoch seconds the unit became active), probe_ok, probe_why, probe_busy_ok
    (the probe got an answer that is not a hang: 401/403), progress (the server's processed
    token counter, None unreadable), listed_everywhere (the gateways list it serving),
    old_pid_alive (the process a restart replaced still exists), old_pid_state, xid_lines.
    config: threshold, restart_limit, restart_window, restart_backoff, start_grace,
    stop_grace, fatal_xids.
    """
    state = dict(new_state(), **(state or {}))
    actions = []
    if obs.get("held"):
        state.update(failures=0, note="held (%s): nothing done" % (obs.get("hold_reason") or "no reason given"))
        return state, actions

    # a restart whose old process would not die: a GPU a restart cannot fix
    if state["restart_pid"] and obs.get("old_pid_alive") and now - state["restarted_at"] > config["stop_grace"]:
        return give_up(state, GIVE_UP_STUCK, "process %s did not exit %d s after the restart (state %s)"
                       % (state["restart_pid"], now - state["restarted_at"], obs.get("old_pid_state") or "?"),
                       actions)
    if not obs.get("old_pid_alive"):
        state["restart_pid"] = 0

    if state["given_up"]:
        if obs.get("listed_anywhere"):
            actions.append(REMOVE)
        return state, actions

    if obs.get("active") != "active":
        # stopped, failed or restarting by systemd's own Restart=: not a hang, and an operator's
        # stop is respected; the gateways' health checks stop routing to it meanwhile
        state.update(failures=0, progress=None, note="unit %s: left to systemd" % obs.get("active"))
        return state, actions

    if obs.get("probe_ok") or obs.get("probe_busy_ok"):
        state.update(failures=0, progress=obs.get("progress"), note="serving" if obs.get("probe_ok")
                     else "answers, but refused the probe: %s" % obs.get("probe_why"))
        if obs.get("probe_ok"):
            state["served_pid"] = obs.get("main_pid") or 0
            # a host the sentinel took out for wrong answers (plugins/module_utils/watchdog/sentinel.py)
            # comes back when its answers are right again, not when it answers at all
            if state.get("quarantine"):
                state["note"] = "serving, out of the gateways until its answers are right"
            else:
                if not obs.get("listed_everywhere"):
                    actions.append(ADD)
                state["out"] = False
        return state, actions

    if starting(obs, state, config, now):
        state.update(failures=0, progress=obs.get("progress"), note="starting: %s" % obs.get("probe_why"))
        return state, actions

    progress = obs.get("progress")
    if progress is not None and state["progress"] is not None and progress != state["progress"]:
        # the probe timed out but the scheduler processes tokens: busy (a long prefill), not hung
        state.update(failures=0, progress=progress, note="busy: probe failed (%s) while tokens moved"
                     % obs.get("probe_why"))
        return state, actions
    state["progress"] = progress
    state["failures"] += 1
    state["note"] = "probe failed %d of %d: %s" % (state["failures"], config["threshold"], obs.get("probe_why"))
    if state["failures"] < config["threshold"]:
        return state, actions

    if not state["out"]:
        actions.append(REMOVE)
        state["out"] = True
    xids = fatal_xids(obs.get("xid_lines"), config["fatal_xids"])
    if xids:
        actions.append(CAPTURE)
        return give_up(state, GIVE_UP_XID, xids[-1][-200:], actions)
    if len(restarts_in_window(state, now, config["restart_window"])) >= config["restart_limit"]:
        actions.append(CAPTURE)
        return give_up(state, GIVE_UP_LIMIT, "%d restarts within %d s did not bring it back"
                       % (config["restart_limit"], config["restart_window"]), actions)
    wait = backoff_left(state, now, config)
    if wait > 0:
        state["note"] += "; next restart in %d s (back-off)" % wait
        return state, actions
    actions += [CAPTURE, RESTART]
    note_restart(state, now, obs.get("main_pid"), config)
    state.update(failures=0, progress=None, note="restarted after %d failed probes" % config["threshold"])
    return state, actions
