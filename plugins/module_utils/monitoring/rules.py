# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter of the sglang_monitoring role: Prometheus alert rules from the inventory's own gates.

sglang_monitoring_alert_rules(hosts, options) -> {"groups": [...]}, where `hosts` is the output
of sglang_monitoring_hosts and options["gateways"] that of sglang_monitoring_gateways (the
`smg` group, when there is a gateway host). A threshold that differs between hosts gives one rule per distinct
value, matching its hosts by the `host` label; a host whose threshold is unknown or off gets no
such rule. Metric names are those of SGLang 0.5.23's /metrics and smg 1.13.0's
Prometheus port, as recorded in tests/fixtures, dcgm-exporter's Xid gauge and the liveness
watchdog's textfile (roles/sglang_watchdog, scraped by job node)
(tests/unit/test_sglang_monitoring_names.py checks every name); why each rule reads what it
reads: docs/monitoring.md.

Pure function (promtool tests: tests/prometheus/, run by tests/unit/test_sglang_monitoring_rules.py).
"""

from ansible_collections.sglang.deploy.plugins.module_utils.rollout.batches import parse_floor

SG = 'job="sglang"'
GW = 'job="smg"'
WD = 'job="node"'
WD_BY = "host, instance, service"
GW_BY = "gateway, instance"
BY = "host, instance"
_REGEX_SPECIAL = set("\\.+*?()|[]{}^$")


def _q(text):
    """A PromQL double-quoted string's content."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def host_matcher(names):
    names = sorted(names)
    if len(names) == 1:
        return 'host="%s"' % _q(names[0])
    escaped = ["".join("\\" + c if c in _REGEX_SPECIAL else c for c in n) for n in names]
    return 'host=~"%s"' % _q("|".join(escaped))


def buckets(hosts, key):
    """[(value, [host names])] for the hosts whose `key` is set, sorted by value."""
    found = {}
    for h in hosts:
        if h.get(key) is not None:
            found.setdefault(h[key], []).append(h["host"])
    return sorted(found.items())


def _num(value):
    return ("%.6g" % value) if isinstance(value, float) else str(value)


def rule(name, expr, duration, severity, summary, description, labels=None):
    out = {"alert": name, "expr": expr}
    if duration and str(duration) not in ("0", "0s", "0m"):
        out["for"] = str(duration)
    out["labels"] = dict({"severity": severity}, **(labels or {}))
    out["annotations"] = {"summary": summary, "description": description}
    return out


def server_rules(o):
    """Rules that need no threshold from the inventory."""
    return [
        rule("SGLangDown", "up{%s} == 0" % SG, o["down_for"], "critical",
             "SGLang on {{ $labels.host }} does not answer /metrics",
             "Prometheus has not scraped {{ $labels.instance }} for %s: the server is down, still "
             "loading, or runs without --enable-metrics." % o["down_for"]),
        rule("SGLangHealthFailing",
             'sum by (%s) (increase(sglang:http_responses_total{%s,endpoint=~"/health|/health_generate",'
             'status_code!~"2.."}[%s])) > 0' % (BY, SG, o["health_window"]),
             o["health_for"], "critical",
             "SGLang on {{ $labels.host }} answers /health with errors",
             "{{ $value | humanize }} /health or /health_generate answers other than 2xx in the last "
             "%s, for %s." % (o["health_window"], o["health_for"])),
        rule("SGLangNoThroughputWhileQueued",
             "(sum by (%s) (sglang:num_queue_reqs{%s}) > 0) unless on (%s) "
             '(sum by (%s) (rate(sglang:realtime_tokens_total{%s,mode="decode"}[%s])) > 0)'
             % (BY, SG, BY, BY, SG, o["stall_window"]),
             o["stall_for"], "critical",
             "SGLang on {{ $labels.host }} generates nothing while requests wait",
             "{{ $value }} requests queued and no decode token in %s, for %s: the scheduler is stuck."
             % (o["stall_window"], o["stall_for"])),
        rule("SGLangKVCacheNearlyFull",
             "max by (%s) (sglang:token_usage{%s}) > %s" % (BY, SG, _num(float(o["kv_usage_max"]))),
             o["kv_for"], "warning",
             "SGLang on {{ $labels.host }}: KV cache nearly full",
             "Token usage {{ $value | humanizePercentage }} of the KV pool (over %s for %s): new requests "
             "wait and running ones may be retracted." % (_num(float(o["kv_usage_max"])), o["kv_for"])),
        rule("SGLangRestartLoop",
             'max by (%s) (resets(sglang:http_requests_total{%s,endpoint="/metrics"}[%s])) > %s'
             % (BY, SG, o["restart_window"], o["restart_max"]),
             "", "critical",
             "SGLang on {{ $labels.host }} keeps restarting",
             "{{ $value }} process starts in %s (its /metrics request counter started again from 0 "
             "each time): journalctl -u sglang (sglang_server_service_name) on the host says why." % o["restart_window"]),
    ]


# The p99 rules: (alert, histogram, what the summary calls it, short name, where the limit comes from).
P99_RULES = (
    ("SGLangTTFTP99High", "ttft_p99_max_s", "sglang:time_to_first_token_seconds_bucket",
     "TTFT p99", "TTFT", "the inventory's TTFT gate"),
    ("SGLangITLP99High", "itl_p99_max_s", "sglang:inter_token_latency_seconds_bucket",
     "inter-token latency p99", "ITL", "1 / the inventory's decode tok/s floor, or its own ITL limit"),
)


def p99_rules(hosts, o):
    out = []
    for alert, key, metric, what, short, source in P99_RULES:
        for limit, names in buckets(hosts, key):
            out.append(rule(
                alert,
                "histogram_quantile(0.99, sum by (%s, le) (rate(%s{%s,%s}[%s]))) > %s"
                % (BY, metric, SG, host_matcher(names), o["latency_window"], _num(limit)),
                o["latency_for"], "warning",
                "SGLang on {{ $labels.host }}: %s above the gate" % what,
                "%s p99 {{ $value | humanizeDuration }} over %s, above %s s (%s)."
                % (short, o["latency_window"], _num(limit), source)))
    return out


def threshold_rules(hosts, o):
    """Rules whose threshold is each host's own (inventory gates and flags)."""
    out = p99_rules(hosts, o)
    for floor, names in buckets(hosts, "min_spec_accept_length"):
        hm = host_matcher(names)
        out.append(rule(
            "SGLangSpecAcceptLengthLow",
            "(max by (%s) (sglang:spec_accept_length{%s,%s}) > 0) < %s and on (%s) "
            '(sum by (%s) (rate(sglang:realtime_tokens_total{%s,%s,mode="decode"}[%s])) > 0)'
            % (BY, SG, hm, _num(float(floor)), BY, BY, SG, hm, o["spec_window"]),
            o["spec_for"], "warning",
            "SGLang on {{ $labels.host }}: speculative accept length under the floor",
            "Accept length {{ $value }} while decoding, under %s: the draft model costs more than "
            "it saves." % _num(float(floor))))
    for cap, names in buckets(hosts, "running_cap"):
        limit = round(cap * float(o["running_cap_ratio"]), 3)
        out.append(rule(
            "SGLangRunningRequestsNearCap",
            "max by (%s) (sglang:num_running_reqs{%s,%s}) >= %s" % (BY, SG, host_matcher(names), _num(limit)),
            o["running_for"], "warning",
            "SGLang on {{ $labels.host }}: running requests near the cap",
            "{{ $value }} requests running, the cap is %s (--max-running-requests, or 48 with "
            "speculative decoding and no such flag): more requests queue." % cap))
    return out


def gateway_rules(o):
    """The smg group: one rule set for every gateway host (the job's `gateway` label tells them
    apart). smg 1.13.0's names (tests/fixtures/prometheus/metrics-smg-1.13.0-*.txt):
    smg_worker_health (1 healthy, 0 unhealthy), smg_worker_cb_state (0 closed, 1 open, 2 half
    open), smg_router_requests_total and smg_router_request_errors_total (counters)."""
    if not o.get("gateways"):
        return []
    errors = "sum by (%s) (rate(smg_router_request_errors_total{%s}[%s]))" % (GW_BY, GW, o["gateway_error_window"])
    requests = "sum by (%s) (rate(smg_router_requests_total{%s}[%s]))" % (GW_BY, GW, o["gateway_error_window"])
    return [
        rule("SGLangGatewayDown", "up{%s} == 0" % GW, o["gateway_down_for"], "critical",
             "smg on {{ $labels.gateway }} does not answer /metrics",
             "Prometheus has not scraped {{ $labels.instance }} for %s (smg's --prometheus-port, "
             "sglang_gateway_metrics_port): the gateway is down or unreachable." % o["gateway_down_for"]),
        rule("SGLangGatewayNoHealthyWorker",
             "(up{%s} == 1) unless on (%s) (smg_worker_health{%s} == 1)" % (GW, GW_BY, GW),
             o["gateway_no_worker_for"], "critical",
             "smg on {{ $labels.gateway }} has no healthy worker",
             "The gateway answers but lists no worker with smg_worker_health 1 for %s (all unhealthy, "
             "or none registered: a gateway restart forgets its workers until roles/sglang_gateway "
             "registers them again): every request through it fails." % o["gateway_no_worker_for"]),
        rule("SGLangGatewayWorkerUnhealthy", "smg_worker_health{%s} == 0" % GW, o["gateway_unhealthy_for"],
             "warning", "smg on {{ $labels.gateway }} lists {{ $labels.worker }} as unhealthy",
             "The gateway's health checks of {{ $labels.worker }} fail (smg_worker_health 0) for %s: "
             "it sends it no request." % o["gateway_unhealthy_for"]),
        rule("SGLangGatewayCircuitOpen", "smg_worker_cb_state{%s} == 1" % GW, o["gateway_cb_open_for"],
             "warning", "smg on {{ $labels.gateway }}: circuit breaker of {{ $labels.worker }} open",
             "smg_worker_cb_state is 1 (open) for %s: {{ $labels.worker }} failed requests in a row "
             "(sglang_gateway_cb_failure_threshold) and the gateway routes nothing to it until its "
             "timeout (sglang_gateway_cb_timeout_duration_secs)." % o["gateway_cb_open_for"]),
        rule("SGLangGatewayErrorRate", "(%s / %s) > %s" % (errors, requests, o["gateway_error_ratio_max"]),
             o["gateway_error_for"], "warning",
             "smg on {{ $labels.gateway }}: {{ $value | humanizePercentage }} of requests fail",
             "smg_router_request_errors_total / smg_router_requests_total over %s is above %s for %s "
             "(by error_type: the gateway's /metrics)." % (o["gateway_error_window"], o["gateway_error_ratio_max"],
                                                          o["gateway_error_for"])),
    ] + floor_rules(o)


def floor_rules(o):
    """SGLangGatewayHealthyWorkersAtFloor: a gateway's healthy workers at or under the rollout's
    floor (sglang_rollout_min_serving: an int, or "N%" of the workers it lists, rounded up as
    plugins/module_utils/rollout/batches.py resolve_floor does); 0 or 0%: no rule."""
    kind, number = parse_floor(o.get("gateway_floor"))
    if not number:
        return []
    healthy = "count by (%s) (smg_worker_health{%s} == 1)" % (GW_BY, GW)
    if kind == "pct":
        floor = "on (%s) ceil(count by (%s) (smg_worker_health{%s}) * %d / 100)" % (GW_BY, GW_BY, GW, number)
        text = "%d%% of the workers it lists, rounded up" % number
    else:
        floor, text = str(number), str(number)
    return [rule(
        "SGLangGatewayHealthyWorkersAtFloor", "%s <= %s" % (healthy, floor), o["gateway_floor_for"], "critical",
        "smg on {{ $labels.gateway }}: healthy workers at the rollout floor",
        "{{ $value }} healthy worker(s) for %s, at or under the rollout floor (sglang_rollout_min_serving: %s): "
        "a rollout cannot take a host out (it waits up to sglang_rollout_batch_wait for the floor, then "
        "refuses), and one more lost worker leaves fewer than the floor serving. Bring hosts back first "
        "(SGLangWorkerOutOfGateway and SGLangWatchdogGaveUp name them)." % (o["gateway_floor_for"], text))]


def gpu_rules(hosts):
    """The GPU group, for hosts whose dcgm-exporter is scraped (sglang_monitoring_dcgm): an NVIDIA
    Xid in the kernel log, as DCGM reports it. DCGM_FI_DEV_XID_ERRORS is "Value of the last XID
    error encountered" (dcgm-exporter's etc/default-counters.csv), 0 before any; the name is
    dcgm-exporter's, not recorded here (no DCGM on the lent GPU machine)."""
    if not any(h.get("dcgm") for h in hosts):
        return []
    return [rule(
        "GPUXidError", 'max by (%s, gpu) (DCGM_FI_DEV_XID_ERRORS{job="dcgm"}) > 0' % BY, "", "critical",
        "GPU {{ $labels.gpu }} on {{ $labels.host }} reported NVIDIA Xid {{ $value }}",
        "DCGM's last Xid of GPU {{ $labels.gpu }} is {{ $value }} (`dmesg | grep 'NVRM: Xid'` on the host has "
        "the line). Hardware, memory, GSP and bus Xids mean a bad GPU or its firmware: the host's next "
        "admission refuses it (roles/gpu_admit, gpu_admit_refuse_xids; docs/admission.md, Kernel log).")]


def watchdog_rules(o):
    """The watchdog group: the liveness watchdog of each SGLang host (roles/sglang_watchdog) writes
    node_exporter's textfile sglang_watchdog.prom every run, every series labelled with the
    server's unit (`service`); job node adds `host`. Off with options["watchdog"] false."""
    if str(o.get("watchdog")).lower() in ("false", "0", "no", "off"):
        return []
    listed = "min by (%s) (sglang_watchdog_listed{%s})" % (WD_BY, WD)
    return [
        rule("SGLangWatchdogRestarted",
             "increase(sglang_watchdog_restarts_total{%s}[%s]) > 0" % (WD, o["watchdog_restart_window"]),
             "", "warning",
             "{{ $labels.service }} on {{ $labels.host }} was restarted by its liveness watchdog",
             "The watchdog restarted {{ $labels.service }} on {{ $labels.host }} within the last %s after its "
             "generation probes failed. What it captured is in /var/lib/sglang-watchdog/incidents/ on the host "
             "(journal tail, py-spy dump, nvidia-smi, Xid lines): find why it hung." % o["watchdog_restart_window"]),
        rule("SGLangWatchdogGaveUp", "sglang_watchdog_given_up{%s} == 1" % WD, "", "critical",
             "The watchdog gave up on {{ $labels.service }} on {{ $labels.host }}: {{ $labels.reason }}",
             "The watchdog stopped restarting {{ $labels.service }} on {{ $labels.host }} and left it out of every "
             "gateway: {{ $labels.reason }} ({{ $labels.detail }}). "
             '{{ if eq $labels.reason "restart_limit" }}Its restarts did not bring it back: read '
             "journalctl -u {{ $labels.service }} on the host and fix the cause."
             '{{ else if eq $labels.reason "wrong_answers" }}Its answers differ from the release\'s quality '
             "reference and a restart did not make them right (SGLangWrongAnswers): read wrong-answer.json in "
             "its incident, then put the host back on a release that answers right."
             "{{ else }}The GPU needs a reset or the host a reboot.{{ end }} "
             "Then `sglang-watchdog reset` on the host (or the next deploy.yml run) lets it serve again; "
             "what it captured is in /var/lib/sglang-watchdog/incidents/."),
        rule("SGLangWrongAnswers",
             "increase(sglang_watchdog_sentinel_wrong_total{%s}[%s]) > 0" % (WD, o["watchdog_restart_window"]),
             "", "critical",
             "{{ $labels.service }} on {{ $labels.host }} answered wrong",
             "The serving sentinel of {{ $labels.service }} on {{ $labels.host }} got answers that differ from the "
             "running release's quality reference within the last %s (a kernel wrong at some batch shapes: "
             "docs/operations.md, Wrong answers). Right when asked again at once, it was counted and left serving; "
             "wrong twice, the host left every gateway and was restarted once, and it is back only if its answers "
             "are right again (else SGLangWatchdogGaveUp, reason wrong_answers). The prompt, the batch size, "
             "the position and both tokens are in /var/lib/sglang-watchdog/incidents/*/wrong-answer.json on the "
             "host." % o["watchdog_restart_window"]),
        rule("SGLangWorkerOutOfGateway",
             "max by (%s) (sglang_watchdog_held{%s}) and on (%s) (%s == 0) unless on (%s) "
             "(sglang_watchdog_given_up{%s} == 1)" % (WD_BY, WD, WD_BY, listed, WD_BY, WD),
             o["out_of_gateway_for"], "warning",
             "{{ $labels.service }} on {{ $labels.host }} is out of a gateway",
             "A gateway has not listed {{ $labels.service }} on {{ $labels.host }} as a healthy worker for %s "
             "(sglang_watchdog_listed 0), longer than a start takes: the fleet serves with one worker less. "
             "{{ if eq $value 1.0 }}The watchdog is held (sglang_watchdog_held 1): a rollout still has the host, "
             "or a failed rollout's recovery left it out: read the last deploy.yml run, fix, run it again."
             "{{ else }}Not held, yet the watchdog puts a serving host back at its next run: the server does not "
             "generate (starting, or hung: SGLangWatchdogRestarted) or the watchdog cannot reach that gateway "
             "(journalctl -u sglang-watchdog on the host says which).{{ end }}"
             % o["out_of_gateway_for"]),
        rule("SGLangWatchdogNotRunning",
             "time() - max by (%s) (sglang_watchdog_last_run_timestamp_seconds{%s}) > %s"
             % (WD_BY, WD, _num(float(o["watchdog_stale_after"]))),
             "", "warning",
             "The liveness watchdog of {{ $labels.service }} on {{ $labels.host }} does not run",
             "Its last run was {{ $value | humanizeDuration }} ago (more than %s s): the timer "
             "sglang-watchdog.timer is not running, and nothing restarts a hung server. "
             "systemctl status sglang-watchdog.timer sglang-watchdog.service on the host says why."
             % _num(float(o["watchdog_stale_after"]))),
    ]


DEFAULTS = {
    "down_for": "5m", "health_window": "2m", "health_for": "3m", "stall_window": "5m", "stall_for": "5m",
    "latency_window": "10m", "latency_for": "10m", "spec_window": "5m", "spec_for": "15m",
    "running_cap_ratio": 0.9, "running_for": "10m", "kv_usage_max": 0.95, "kv_for": "10m",
    "restart_window": "15m", "restart_max": 2, "gateway_down_for": "5m", "gateway_no_worker_for": "2m",
    "gateway_unhealthy_for": "10m", "gateway_cb_open_for": "1m", "gateway_error_window": "5m",
    "gateway_error_ratio_max": 0.05, "gateway_error_for": "5m", "gateway_floor": 0, "gateway_floor_for": "15m",
    "watchdog": True, "watchdog_restart_window": "30m", "out_of_gateway_for": "15m", "watchdog_stale_after": 300,
}


def alert_rules(hosts, options=None):
    """sglang_monitoring_alert_rules: the rule file as a mapping."""
    o = dict(DEFAULTS)
    o.update({k: v for k, v in (options or {}).items() if v not in (None, "")})
    hosts = list(hosts or [])
    groups = [{"name": "sglang", "rules": server_rules(o) + threshold_rules(hosts, o)}]
    gated = gateway_rules(o)
    if gated:
        groups.append({"name": "smg", "rules": gated})
    gpu = gpu_rules(hosts)
    if gpu:
        groups.append({"name": "gpu", "rules": gpu})
    watchdog = watchdog_rules(o)
    if watchdog:
        groups.append({"name": "watchdog", "rules": watchdog})
    return {"groups": groups}
