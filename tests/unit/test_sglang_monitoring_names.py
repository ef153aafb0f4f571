"""Every metric name that the alert rules and the Grafana dashboard of roles/sglang_monitoring
read is on a recorded /metrics page (SGLang 0.5.23, smg 1.13.0), and every dashboard
query is valid PromQL (promtool checks it as a recording rule)."""

import json

import pytest
import yaml

from sglang_monitoring_support import (DASHBOARD, DCGM_PUBLISHED, GPU_FLEET, OPTIONS, metric_names, page_names,
                                       rules, run_promtool)


def dashboard_queries():
    with open(DASHBOARD, encoding="utf-8") as handle:
        dash = json.load(handle)
    queries = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    for var in dash["templating"]["list"]:
        if var["type"] == "query":
            # label_values(<selector>, label): the selector is PromQL
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            queries.append(query[len("label_values("):query.rindex(",")])
    return dash, queries


def as_promql(query):
    """Grafana's variables replaced by what they stand for."""
    return query.replace("$__rate_interval", "5m").replace('=~"$host"', '=~".*"')


@pytest.mark.parametrize("expr,names", [
    ('max by (host, instance) (resets(sglang:http_requests_total{job="sglang",endpoint="/metrics"}[15m])) > 2',
     {"sglang:http_requests_total"}),
    ('histogram_quantile(0.99, sum by (host, le) (rate(a_bucket{x="y"}[5m]))) > 1.5e3', {"a_bucket"}),
    ('absent(m{w="http://h:1"} >= 0) and on () (up{r="a"} == 1)', {"m", "up"}),
    ('(x > 0) unless on (host, instance) (sum without (le) (y offset 5m))', {"x", "y"}),
])
def test_metric_names_reader(expr, names):
    assert metric_names(expr) == names


def test_pages_hold_sglang_and_gateway_names():
    names = page_names()
    assert "sglang:time_to_first_token_seconds_bucket" in names
    assert "sglang:time_to_first_token_seconds" not in names  # a histogram only by its series
    assert {"smg_worker_health", "smg_worker_cb_state", "smg_router_requests_total",
            "smg_router_request_errors_total", "smg_worker_requests_active"} <= names
    assert "smg_worker_healthy" not in names and "smg_requests_total" not in names


def test_every_rule_reads_recorded_metrics():
    known = page_names() | DCGM_PUBLISHED  # dcgm-exporter's published name: see the support module
    for group in rules.alert_rules(GPU_FLEET, OPTIONS)["groups"]:
        for rule in group["rules"]:
            used = metric_names(rule["expr"])
            assert used, rule["expr"]
            assert used <= known, "%s reads %s, on no recorded page" % (rule["alert"], used - known)


def test_dashboard_parses_and_reads_recorded_metrics():
    dash, queries = dashboard_queries()
    assert dash["uid"] and dash["panels"] and len(queries) >= 10
    known = page_names()
    for query in queries:
        used = metric_names(as_promql(query))
        assert used, query
        assert used <= known, "%r reads %s, on no recorded page" % (query, used - known)


def test_dashboard_covers_what_operators_look_at():
    text = " ".join(dashboard_queries()[1])
    for name in ("sglang:realtime_tokens_total", "sglang:time_to_first_token_seconds_bucket",
                 "sglang:inter_token_latency_seconds_bucket", "sglang:num_queue_reqs",
                 "sglang:token_usage", "sglang:spec_accept_length", "resets(sglang:http_requests_total",
                 "smg_worker_health", "smg_router_requests_total", "smg_router_request_errors_total",
                 "smg_worker_cb_state", "smg_worker_requests_active"):
        assert name in text


def test_dashboard_queries_are_valid_promql(tmp_path):
    queries = dashboard_queries()[1]
    doc = {"groups": [{"name": "dashboard", "rules": [
        {"record": "dashboard:query_%d" % i, "expr": as_promql(q)} for i, q in enumerate(queries)]}]}
    path = tmp_path / "dashboard-as-rules.yml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    rc, out = run_promtool("check", "rules", str(path))
    assert rc == 0, out
