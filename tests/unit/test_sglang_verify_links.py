"""The verification summary's Prometheus links (plugins/module_utils/
verify/render.py): the run's time window, and queries that read metrics SGLang 0.5.23
really exports (checked against the recorded /metrics page)."""
import urllib.parse

from ansible_collections.sglang.deploy.plugins.module_utils.verify import render
from sglang_monitoring_support import metric_names, page_names

HOSTS = {
    "h1": {"time": "2026-11-30T12:00:40Z", "result": {"duration_s": 40.0}},
    "h2": {"time": "2026-11-30T12:01:30Z", "result": {"duration_s": 35.0}},
}


def test_window_covers_every_host_with_padding():
    start, end = render.run_window(HOSTS)
    assert start.strftime("%H:%M:%S") == "11:59:30" and end.strftime("%H:%M:%S") == "12:02:00"
    assert render.run_window({}) is None
    assert render.run_window({"h": {"time": "not a time"}}) is None


def test_links_name_the_window_and_each_query():
    links = render.prometheus_links("http://127.0.0.1:9090/", HOSTS)
    assert [label for label, _ in links] == [label for label, _ in render.PROMETHEUS_QUERIES]
    for (_, url), (_, expr) in zip(links, render.PROMETHEUS_QUERIES):
        assert url.startswith("http://127.0.0.1:9090/graph?")
        q = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
        assert q["g0.expr"] == [expr] and q["g0.range_input"] == ["150s"]
        assert q["g0.end_input"] == ["2026-11-30 12:02:00"]
    assert render.prometheus_links("", HOSTS) == []


def test_summary_carries_the_links():
    links = render.prometheus_links("http://p:9090", HOSTS)
    md = render.render_summary_md({"run_id": "R", "hosts": HOSTS, "prometheus_links": links})
    assert "Prometheus, this run's window: [decode tok/s](http://p:9090/graph?" in md
    assert "Prometheus" not in render.render_summary_md({"run_id": "R", "hosts": HOSTS})


def test_queries_read_recorded_metric_names():
    known = page_names()
    for _, expr in render.PROMETHEUS_QUERIES:
        names = metric_names(expr)
        assert names and names <= known, (expr, names - known)
