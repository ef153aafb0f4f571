"""The rollout's batches (plugins/module_utils/rollout/batches.py): Ansible's serial
semantics, the floor of healthy workers, the refusal and the check before each batch; the
filters that deploy.yml's rollout uses (plugins/module_utils/rollout/urls.py)."""

import pytest

from ansible.utils.helpers import pct_to_int

from ansible_collections.sglang.deploy.plugins.module_utils.rollout import urls as F
from ansible_collections.sglang.deploy.plugins.module_utils.rollout import batches as B


def fleet(n, unhealthy=()):
    """n hosts h0.. and the gateway's listing of them (trailing slash in the mapping on purpose)."""
    hosts = ["h%d" % i for i in range(n)]
    workers = [{"url": "http://H%d:30000" % i, "healthy": "h%d" % i not in unhealthy} for i in range(n)]
    urls = {h: "http://h%s:30000/" % h[1:] for h in hosts}
    return hosts, workers, urls


def ansible_sizes(total, serial):
    """What ansible-core's own _get_serialized_batches makes (its pct_to_int, last item repeats)."""
    serial = serial if isinstance(serial, list) else [serial]
    sizes, left, i = [], total, 0
    while left:
        size = min(pct_to_int(serial[i], total), left)
        sizes.append(size)
        left -= size
        i = min(i + 1, len(serial) - 1)
    return sizes


@pytest.mark.parametrize("total", [1, 2, 3, 7, 10, 33, 50, 100])
@pytest.mark.parametrize("serial", [1, 3, "10%", "25%", "33%", "100%", [1, "10%", "25%"], [1, 2], ["1%", 5]])
def test_batches_follow_ansible_serial(total, serial):
    hosts = ["h%d" % i for i in range(total)]
    assert B.plan(hosts, serial)["batches"] == ansible_sizes(total, serial)


def test_percentages_round_down_at_least_one_and_the_last_item_repeats():
    hosts = ["h%d" % i for i in range(10)]
    assert B.plan(hosts, [1, "10%", "25%"])["batches"] == [1, 1, 2, 2, 2, 2]
    assert B.plan(hosts[:3], "10%")["batches"] == [1, 1, 1]  # 10% of 3 is 0.3: at least 1
    assert B.plan(hosts[:7], "50%")["batches"] == [3, 3, 1]  # 3.5 rounds down
    assert B.plan(hosts, ["2", "50%"])["batches"] == [2, 5, 3]


def test_no_gateway_floor_zero_is_the_serial_spec_not_enforced():
    out = B.plan(["a", "b", "c"], [1, 2], "0%")
    assert out["batches"] == [1, 2] and not out["enforced"] and not out["shrunk"]
    assert "not enforced without a gateway" in out["msg"] and "sglang_gateway_url" in out["msg"]


def test_no_gateway_with_a_floor_is_refused_naming_both_variables():
    with pytest.raises(B.RolloutError) as exc:
        B.plan(["a"], 1, "50%")
    text = str(exc.value)
    assert "sglang_rollout_min_serving is '50%'" in text and "sglang_gateway_url" in text
    assert "Nothing was touched" in text and "sglang_rollout_min_serving: 0" in text


def test_floor_zero_keeps_the_batches_with_a_gateway():
    hosts, workers, urls = fleet(10, unhealthy={"h1", "h2"})
    out = B.plan(hosts, "50%", 0, workers, urls)
    assert out["batches"] == [5, 5] and not out["shrunk"] and out["enforced"] and out["floor"] == 0


def test_floor_as_a_count_shrinks_batches():
    hosts, workers, urls = fleet(10)
    out = B.plan(hosts, "50%", 7, workers, urls)  # 10 healthy, 7 must stay: 3 out at once
    assert out["batches"] == [3, 3, 3, 1] and out["shrunk"] and out["floor"] == 7
    assert "shrunk from [5, 5]" in out["msg"]


def test_floor_as_a_percentage_rounds_up_against_the_fleet():
    hosts, workers, urls = fleet(10)
    out = B.plan(hosts, [1, "10%", "25%"], "75%", workers, urls)  # ceil(7.5) = 8 stay: 2 out
    assert out["floor"] == 8 and out["fleet"] == 10 and out["batches"] == [1, 1, 2, 2, 2, 2] and not out["shrunk"]
    out = B.plan(hosts, "30%", "75%", workers, urls)
    assert out["batches"] == [2, 2, 2, 2, 2] and out["shrunk"]


def test_unhealthy_workers_count_against_the_floor():
    hosts, workers, urls = fleet(10, unhealthy={"h9"})
    out = B.plan(hosts[:8], "25%", 7, workers, urls)  # 9 healthy, 7 stay: 2 out, not 2 of 25% of 8
    assert out["batches"] == [2, 2, 2, 2]
    out = B.plan(hosts[:8], "50%", 7, workers, urls)
    assert out["batches"] == [2, 2, 2, 2] and out["shrunk"] and "unhealthy: http://h9:30000" in out["msg"]


def test_unhealthy_pending_hosts_cost_no_capacity():
    hosts, workers, urls = fleet(4, unhealthy={"h1"})
    out = B.plan(hosts, 2, 2, workers, urls)  # 3 healthy, 2 stay: one healthy host out, h1 is free
    assert out["batches"] == [2, 1, 1]


def test_unknown_hosts_are_not_serving_and_named():
    hosts, workers, urls = fleet(4)
    out = B.plan(hosts + ["new"], 2, 3, workers, dict(urls, new="http://new:30000"))
    assert out["batches"] == [1, 1, 1, 2]  # the last batch: h3 and the unknown host
    assert "not known to the gateway, counted as not serving: new" in out["msg"]


def test_refused_when_not_even_one_host_may_leave():
    hosts, workers, urls = fleet(10, unhealthy={"h3", "h7"})
    with pytest.raises(B.RolloutError) as exc:
        B.plan(hosts, [1, "25%"], "80%", workers, urls)
    text = str(exc.value)
    assert "sglang_rollout_min_serving is '80%' (8 of the gateway's 10 worker(s) must stay healthy)" in text
    assert "8 healthy (unhealthy: http://h3:30000, http://h7:30000)" in text
    assert "restore the unhealthy hosts" in text and "lower sglang_rollout_min_serving to at most 7" in text
    assert "before any host is touched" in text


def test_only_unhealthy_pending_hosts_may_roll_below_the_floor():
    hosts, workers, urls = fleet(4, unhealthy={"h0", "h1"})
    assert B.plan(["h0", "h1"], 1, 3, workers, urls)["batches"] == [1, 1]
    with pytest.raises(B.RolloutError):
        B.plan(["h0", "h2"], 1, 3, workers, urls)


def test_nothing_pending_is_one_host_batches():
    assert B.plan([], [1, "25%"])["batches"] == [1]


@pytest.mark.parametrize("value,why", [
    (0, "below 1"), (-2, "below 1"), ("-1", "negative"), ("150%", "above 100%"), ("abc", "not a whole number"),
    ("0%", "below 1"), ([], "empty list"), ([1, "x"], "an item of"), (True, "not a number"), (2.5, "not a whole"),
])
def test_malformed_serial_is_refused_naming_variable_value_rule_fix(value, why):
    text = B.serial_problem(value)
    assert why in text and "sglang_rollout_serial is" in text and "the rule:" in text and "fix:" in text
    with pytest.raises(B.RolloutError):
        B.plan(["a"], value)


@pytest.mark.parametrize("value", [1, "3", "25%", " 10 % ", [1, "10%", "25%"]])
def test_valid_serial(value):
    assert B.serial_problem(value) == ""


@pytest.mark.parametrize("value,why", [(-1, "below 0"), ("101%", "above 100%"), ("half", "not a whole"),
                                       (False, "not a number")])
def test_malformed_floor_is_refused(value, why):
    text = B.floor_problem(value)
    assert why in text and "sglang_rollout_min_serving is" in text and "fix:" in text
    assert B.floor_problem(0) == B.floor_problem("0%") == B.floor_problem("75%") == B.floor_problem(None) == ""


def test_listing_entries_need_url_and_boolean_healthy():
    with pytest.raises(B.RolloutError, match="url, healthy"):
        B.plan(["a"], 1, 1, [{"url": "http://a:1", "is_healthy": True}], {})


def test_batch_check_counts_healthy_workers_outside_the_batch():
    hosts, workers, urls = fleet(5, unhealthy={"h4"})
    ok = B.check_batch(["h0", "h4"], 3, workers, urls)  # 4 healthy, h0 leaves: 3 stay
    assert ok["ok"] and ok["staying"] == 3 and "may leave" in ok["msg"]
    no = B.check_batch(["h0", "h1"], 3, workers, urls)
    assert not no["ok"] and no["staying"] == 2
    assert "below the floor" in no["msg"] and "unhealthy: http://h4:30000" in no["msg"]
    assert "lower sglang_rollout_min_serving to at most 2" in no["msg"]
    assert B.check_batch(["h0", "h1"], 0, workers, urls)["ok"]
    assert B.check_batch(["h0"], "60%", workers, urls)["floor"] == 3  # a percentage of the listing now


def test_batch_check_a_worker_missing_from_the_listing_is_not_serving():
    hosts, workers, urls = fleet(3)
    assert not B.check_batch(["h0"], 2, workers[1:2], urls)["ok"]


def test_worker_urls_read_the_override_else_address_and_port():
    hv = {"a": {"ansible_host": "10.0.0.1", "sglang_flags_normalized": {"port": 31000}},
          "b": {"sglang_gateway_worker_url": "http://b.example:30000/", "sglang_flags_normalized": {}}}
    assert F.worker_urls(["a", "b"], hv) == {"a": "http://10.0.0.1:31000", "b": "http://b.example:30000"}


@pytest.mark.parametrize("serial, batches", [
    (1, [2, 1, 1, 1]),                     # the idle pair together, then the serving hosts one by one
    ([1, "50%"], [2, 1, 2]),               # the spec starts again at the serving hosts: a canary of 1
    ("100%", [2, 3]),
])
def test_idle_hosts_go_first_and_together_then_the_serial_spec_from_its_first_item(serial, batches):
    hosts = ["a", "b", "c", "d", "e"]
    out = B.plan(hosts, serial, idle=["d", "b"])
    assert out["order"] == ["b", "d", "a", "c", "e"] and out["idle"] == ["b", "d"]
    assert out["batches"] == batches and sum(out["batches"]) == len(hosts)
    assert "the 2 idle host(s) (no server running) first, in one batch" in out["msg"]


def test_an_idle_fleet_is_one_batch_and_no_idle_host_changes_nothing():
    hosts = ["a", "b", "c"]
    assert B.plan(hosts, 1, idle=hosts)["batches"] == [3]
    plain = B.plan(hosts, [1, 2], idle=[])
    assert plain["batches"] == [1, 2] and plain["order"] == hosts and "idle" not in plain["msg"]
    assert B.plan(hosts, 1, idle=["not-pending"])["batches"] == [1, 1, 1]  # only pending hosts count


def test_idle_hosts_cost_no_capacity_under_a_floor():
    hosts, workers, urls = fleet(4, unhealthy={"h3"})  # h3's server is down: the gateway lists it unhealthy
    out = B.plan(hosts, 2, 2, workers, urls, idle=["h3"])  # 3 healthy, 2 stay: one serving host out at a time
    assert out["order"][0] == "h3" and out["batches"] == [1, 1, 1, 1] and out["shrunk"]
    with pytest.raises(B.RolloutError) as exc:  # 3 healthy, 3 must stay: not even the canary may leave
        B.plan(hosts, 1, 3, workers, urls, idle=["h3"])
    assert "not even one of the 3 healthy pending host(s) (h0, h1, h2) may leave" in str(exc.value)
