"""The sglang_router_worker module's pure logic: listing, URL matching, Prometheus gauges, the
add/remove decision and the job note, on answers recorded from sglang-router 0.3.2 and SGLang
0.5.23. Its drain and poll loops are in test_sglang_router_worker_drain.py, its HTTP paths in
test_sglang_router_worker_http.py."""

import json

import pytest

from ansible_collections.sglang.deploy.plugins.modules import sglang_router_worker as m
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_router_listing as listing
from sglang_router_worker_support import fixture


def test_normalize_url():
    assert listing.normalize_url("HTTP://Host.Example:30000/") == "http://host.example:30000"
    assert listing.normalize_url("http://10.0.0.5:30000") == listing.normalize_url("http://10.0.0.5:30000//")
    assert listing.normalize_url("http://h:1/Path/") == "http://h:1/Path"  # the path keeps its case
    assert listing.normalize_url(" http://h:1 ") == "http://h:1"
    assert listing.normalize_url("h:1/") == "h:1"
    assert listing.normalize_url("http://h:30000") != listing.normalize_url("http://h:30001")


def test_parse_workers_of_sglang_router_0_3_2():
    workers = m.parse_workers(fixture("workers-sglang-router-0.3.2.json"))
    assert [w["url"] for w in workers] == ["http://172.17.0.3:30000", "http://172.17.0.2:30000"]
    assert all(w["is_healthy"] for w in workers)
    assert workers[0]["id"] == "dc3092c3-7bea-42bd-a228-eadf39aeaa5a" and workers[0]["load"] == 0


def test_parse_workers_rejects_what_is_not_a_listing():
    for bad in ('{"detail": "Not Found"}', "[]", '{"workers": [{"id": "x"}]}', '{"workers": "x"}'):
        with pytest.raises(ValueError):
            m.parse_workers(bad)
    with pytest.raises(ValueError):
        m.parse_workers("<html>")
    assert m.parse_workers({"workers": []}) == []
    # no is_healthy field: listed = routed to
    assert m.parse_workers({"workers": [{"url": "http://a:1"}]})[0]["is_healthy"] is True


def test_find_worker_compares_normalised_urls():
    workers = m.parse_workers(fixture("workers-sglang-router-0.3.2.json"))
    assert m.find_worker(workers, "HTTP://172.17.0.2:30000/")["id"] == "3694eac6-421b-49b0-a75e-046c28e5293b"
    assert m.find_worker(workers, "http://172.17.0.4:30000") is None
    assert m.find_worker(workers, "http://172.17.0.2:3000") is None
    assert m.find_worker([], "http://a:1") is None


def test_describe_workers():
    assert m.describe_workers([]) == "no worker"
    assert m.describe_workers([{"url": "http://a:1", "is_healthy": True}, {"url": "http://b:1", "is_healthy": False}]) \
        == "http://a:1 (healthy), http://b:1 (unhealthy)"


def test_in_flight_of_a_busy_sglang_0_5_23():
    text = fixture("metrics-sglang-0.5.23-busy.txt")  # 4 requests running, none queued
    assert m.in_flight(text) == 4
    sums = m.parse_prometheus_sums(text, (m.RUNNING, m.QUEUED, "sglang:nope"))
    assert sums == {m.RUNNING: 4.0, m.QUEUED: 0.0, "sglang:nope": None}


def test_prometheus_sums_over_label_sets_and_odd_lines():
    text = "\n".join([
        "# HELP sglang:num_running_reqs The number of running requests.",
        "# TYPE sglang:num_running_reqs gauge",
        'sglang:num_running_reqs{tp_rank="0",dp_rank="0"} 3.0',
        'sglang:num_running_reqs{tp_rank="0",dp_rank="1"} 2.0 1712345678000',  # with a timestamp
        'sglang:num_running_reqs{note="a } b",x="y"} 1',  # a brace and a space in a label value
        'sglang:num_running_reqs_total{x="y"} 100',  # another metric with the name as prefix
        "sglang:num_queue_reqs 1e0",
        'sglang:num_queue_reqs{x="nan"} NaN',
        "sglang:num_queue_reqs{broken 7",
        "",
    ])
    assert m.parse_prometheus_sums(text, (m.RUNNING, m.QUEUED)) == {m.RUNNING: 6.0, m.QUEUED: 1.0}
    assert m.in_flight(text) == 7


def test_in_flight_needs_both_gauges():
    assert m.in_flight("sglang:num_running_reqs 0\n") is None
    assert m.in_flight("") is None
    assert m.in_flight(None) is None
    assert m.in_flight("sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n") == 0


def test_in_flight_counts_a_request_the_scheduler_gauges_do_not_show_yet():
    text = (
        "sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n"
        'sglang:http_requests_active{endpoint="/v1/chat/completions",method="POST"} 1.0\n'
        'sglang:http_requests_active{endpoint="/metrics",method="GET"} 1.0\n'
    )
    assert m.active_http(text) == 1.0
    assert m.in_flight(text) == 1


def test_in_flight_ignores_the_metrics_request_itself():
    text = (
        "sglang:num_running_reqs 0\nsglang:num_queue_reqs 0\n"
        'sglang:http_requests_active{endpoint="/metrics",method="GET"} 1.0\n'
    )
    assert m.in_flight(text) == 0


def test_decide():
    healthy = {"id": "1", "url": "http://a:1", "is_healthy": True}
    sick = dict(healthy, is_healthy=False)
    assert m.decide("absent", None) is None
    assert m.decide("absent", healthy) == "remove"
    assert m.decide("absent", sick) == "remove"
    assert m.decide("present", None) == "add"
    assert m.decide("present", sick) == "add"
    assert m.decide("present", healthy) is None


def test_format_job_of_a_pending_addition():
    # GET /workers/<id> of sglang-router 0.3.2 while it still tries to reach a worker it was asked to add
    answer = {"id": "c8506831-5cef-42e7-94fc-0d2ef8acf857", "url": "http://172.17.0.3:30001", "model_id": "unknown",
              "is_healthy": False, "job_status": {"job_type": "AddWorker", "worker_url": "http://172.17.0.3:30001",
                                                  "status": "processing", "message": None, "timestamp": 1795973623}}
    assert m.format_job(json.dumps(answer)) == "AddWorker processing"
    assert "may still join later" in m.job_note("c85", "AddWorker processing")
    failed = dict(answer, job_status=dict(answer["job_status"], status="failed", message="unreachable"))
    assert m.format_job(failed) == "AddWorker failed: unreachable"
    assert "may still join" not in m.job_note("c85", "AddWorker failed: unreachable")
    assert m.format_job("{}") == m.format_job("nope") == m.job_note("x", "") == ""
