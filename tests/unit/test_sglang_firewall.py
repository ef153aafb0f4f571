"""plugins/module_utils/firewall/sources.py: which sources the SGLang port admits
(allow list, gateway hosts, monitoring hosts, controller), how they become the ruleset's two sets,
and the lint that refuses a wildcard bind without the firewall."""

import os
import re

import pytest
import yaml

from ansible_collections.sglang.deploy.plugins.module_utils.firewall import sources as f
from ansible_collections.sglang.deploy.plugins.module_utils.flags import render as sglang_flags

ROLE = os.path.join(os.path.dirname(__file__), "..", "..", "roles", "sglang_firewall")

GETENT = "10.4.0.7       STREAM gw.example\n10.4.0.7       DGRAM  \n10.4.0.7       RAW    \nfd00::7 STREAM gw.example\n"


def test_addresses_networks_and_names_are_told_apart():
    out = f.sglang_firewall_sources(["10.20.0.0/16", "192.0.2.10", "2001:db8::/48", "[fd00::1]", "gw.example"])
    assert [n["network"] for n in out["networks"]] == ["10.20.0.0/16", "192.0.2.10", "2001:db8::/48", "fd00::1"]
    assert out["names"] == [{"name": "gw.example", "origin": "sglang_firewall_allow"}]
    assert out["errors"] == []


@pytest.mark.parametrize("entry, says", [
    ("10.0.0.5/8", "10.0.0.5/8 has host bits set: write 10.0.0.0/8 or the single address 10.0.0.5"),
    ("10.0.0.256", "is neither an address"),
    ("not a host", "is neither an address"),
    ("10.0.0.0/33", "is neither an address"),
    ("", "is neither an address"),
])
def test_bad_entries_are_errors_naming_the_fix(entry, says):
    out = f.sglang_firewall_sources([entry])
    assert len(out["errors"]) == 1 and says in out["errors"][0]
    assert out["errors"][0].startswith("sglang_firewall_allow: ")


def test_a_string_instead_of_a_list_is_an_error():
    assert "a list of addresses" in f.sglang_firewall_sources("10.0.0.0/8")["errors"][0]


@pytest.mark.parametrize("host, network, name", [
    ("10.1.2.3", "10.1.2.3", None),
    ("fd00::5", "fd00::5", None),
    ("gw.example", None, "gw.example"),
])
def test_the_gateway_hosts_are_admitted_by_their_address(host, network, name):
    out = f.sglang_firewall_sources([], gateways=[host])
    assert [n["network"] for n in out["networks"]] == ([network] if network else [])
    assert [n["name"] for n in out["names"]] == ([name] if name else [])
    assert all(e["origin"] == "gateway group" for e in out["networks"] + out["names"])


def test_a_gateway_host_that_is_no_address_is_an_error():
    assert f.sglang_firewall_sources([], gateways=["http://gw:1"])["errors"] == [
        "gateway group: 'http://gw:1' is neither an address, a network (CIDR) nor a host name"]


def test_no_gateway_no_monitoring_no_controller_admits_only_the_list():
    out = f.sglang_firewall_sources(["10.0.0.0/8"], gateways=[], monitoring=[], controller="")
    assert [n["origin"] for n in out["networks"]] == ["sglang_firewall_allow"] and out["names"] == []


def test_monitoring_hosts_and_the_controller_are_admitted_with_their_origin():
    out = f.sglang_firewall_sources([], monitoring=["10.9.0.2", "prom.example"],
                                    extra_monitoring=["10.9.1.0/24"], controller="172.17.0.1")
    assert {n["network"]: n["origin"] for n in out["networks"]} == {
        "10.9.0.2": "monitoring group", "10.9.1.0/24": "sglang_firewall_allow_monitoring",
        "172.17.0.1": "controller (SSH_CONNECTION)"}
    assert out["names"] == [{"name": "prom.example", "origin": "monitoring group"}]


def test_a_name_listed_twice_is_resolved_once():
    out = f.sglang_firewall_sources(["gw.example"], gateways=["gw.example"])
    assert [n["name"] for n in out["names"]] == ["gw.example"]


def test_sets_merge_overlaps_and_split_the_families():
    sources = f.sglang_firewall_sources(["10.0.0.0/8", "10.1.0.0/16", "10.0.0.1", "192.0.2.0/25",
                                         "192.0.2.128/25", "::1", "gw.example"])
    sets = f.sglang_firewall_sets(sources, {"gw.example": GETENT})
    assert sets["ipv4"] == ["10.0.0.0/8", "192.0.2.0/24"]  # 10.4.0.7 lies in 10/8
    assert sets["ipv6"] == ["::1", "fd00::7"]
    assert "gw.example -> 10.4.0.7, fd00::7 (sglang_firewall_allow)" in sets["comments"]
    assert sets["errors"] == []


def test_sets_read_the_registered_loop_results():
    sources = f.sglang_firewall_sources(["gw.example", "gone.example"])
    results = [{"item": "gw.example", "rc": 0, "stdout": GETENT},
               {"item": "gone.example", "rc": 2, "stdout": ""}]
    sets = f.sglang_firewall_sets(sources, results)
    assert sets["ipv4"] == ["10.4.0.7"] and sets["ipv6"] == ["fd00::7"]
    assert sets["errors"] == ["sglang_firewall_allow: gone.example does not resolve on this host (getent ahosts); "
                              "fix its DNS or put its address into sglang_firewall_allow"]


def test_empty_sources_give_empty_sets():
    sets = f.sglang_firewall_sets(f.sglang_firewall_sources([]), [])
    assert sets == {"ipv4": [], "ipv6": [], "comments": [], "errors": []}


@pytest.mark.parametrize("host, wildcard", [
    ("0.0.0.0", True), ("::", True), ("[::]", True), ("", True), ("0:0::0", True),
    ("127.0.0.1", False), ("10.0.0.5", False), ("gpu-node-01.example", False), (None, False),
])
def test_wildcard_binds(host, wildcard):
    assert f.sglang_firewall_wildcard(host) is wildcard


@pytest.mark.parametrize("host", [
    "0.0", "0", "0.0.0", "00.0.0.0", "0x0", "0x0.0", " 0.0.0.0 ",   # IPv4 as inet_aton reads it
    0, 0.0,                                                          # YAML `host: 0` / `host: 0.0`
    "::ffff:0.0.0.0", "::ffff:0:0", "[::ffff:0.0.0.0]", "::0.0.0.0", "*",
])
def test_every_spelling_of_the_unspecified_address_is_a_wildcard(host):
    assert f.sglang_firewall_wildcard(host) is True


@pytest.mark.parametrize("host", ["0.0.0.1", "1", "127.1", "::1", "::ffff:127.0.0.1", "0.0.0.0.0",
                                  "localhost", "cafe", "0x", "0.0.0.0/0", "::ffff:10.0.0.5"])
def test_other_addresses_and_names_are_not(host):
    assert f.sglang_firewall_wildcard(host) is False


def _errors(findings):
    return [x["msg"] for x in findings if x["severity"] == "error"]


def test_lint_refuses_a_wildcard_bind_without_the_firewall():
    errors = _errors(f.sglang_firewall_findings({"host": "0.0.0.0", "port": 30000}, enabled=False))
    assert len(errors) == 1
    assert errors[0].startswith("--host [firewall-open-bind] '0.0.0.0' (sglang_server_args) binds every address")
    assert "Fix: bind a declared address" in errors[0] and "sglang_firewall_enabled: true" in errors[0]


@pytest.mark.parametrize("args", [{"--host": "0.0.0.0"}, {"host": "0.0"}, {"host": "0"},
                                  {"host": "::ffff:0.0.0.0"}, {"-host": "::"}])
def test_lint_judges_the_normalised_flags(args):
    """tasks/lint.yml passes sglang_flags_normalized: the model folds "--host" into "host"."""
    flags = sglang_flags.sglang_normalize_args(dict(args, **{"--port": 31000}))
    assert flags["port"] == 31000
    errors = _errors(f.sglang_firewall_findings(flags, enabled=False))
    assert len(errors) == 1 and "[firewall-open-bind]" in errors[0]


def test_lint_reads_sglang_flags_normalized_for_host_and_port():
    with open(os.path.join(ROLE, "tasks", "lint.yml"), encoding="utf-8") as fh:
        judge = [t for t in yaml.safe_load(fh) if "set_fact" in str(t)][0]
    assert judge["ansible.builtin.set_fact"]["_sglang_firewall_findings"].split("|")[0].strip() == "{{ sglang_flags_normalized"
    with open(os.path.join(ROLE, "defaults", "main.yml"), encoding="utf-8") as fh:
        assert yaml.safe_load(fh)["sglang_firewall_port"] == "{{ sglang_flags_normalized.get('port', 30000) }}"


# --- the variables of the unit and the ruleset (the server's checks, sglang_flags_inputs) ---------

@pytest.mark.parametrize("name, value, rule, fix", [
    ("sglang_firewall_ruleset_path", "/etc/nftables.d/x.nft\nExecStartPre=/tmp/pwn", "input-control-char", "remove it"),
    ("sglang_firewall_ruleset_path", "/etc/x.nft\r", "input-control-char", "remove it"),
    ("sglang_firewall_ruleset_path", "etc/x.nft", "input-path", "give an absolute path"),
    ("sglang_firewall_ruleset_path", "/etc/%h.nft", "input-path", "give an absolute path"),
    ("sglang_firewall_service_name", "fw\nExecStartPre=/tmp/pwn", "input-control-char", "remove it"),
    ("sglang_firewall_service_name", "../../x", "input-unit-name", "no '/'"),
    ("sglang_firewall_table", "t\nExecStartPre=/tmp/pwn", "input-control-char", "remove it"),
    ("sglang_firewall_table", "t; flush ruleset", "input-nft-name", "a letter, then letters"),
])
def test_unit_variables_are_refused_by_the_servers_checks(name, value, rule, fix):
    for enabled in (True, False):
        errors = _errors(f.sglang_firewall_findings({}, enabled=enabled, sources=f.sglang_firewall_sources([]),
                                                    ports=[30000], unit={name: value}))
        assert len(errors) == 1, errors
        assert errors[0].startswith(f"{name} [{rule}] "), errors[0]
        assert fix in errors[0].split(" Fix: ", 1)[1], errors[0]


def test_the_defaults_pass_the_unit_checks():
    with open(os.path.join(ROLE, "defaults", "main.yml"), encoding="utf-8") as fh:
        defaults = yaml.safe_load(fh)
    # the server's unit name defaults to sglang_server_service_name, rendered by Ansible
    unit = {k: defaults[k] for k in f.UNIT_INPUTS if "{{" not in str(defaults[k])}
    assert set(f.UNIT_INPUTS) - set(unit) == {"sglang_firewall_server_service"}
    unit["sglang_firewall_server_service"] = "sglang"
    assert f.sglang_firewall_findings({}, enabled=True, sources=f.sglang_firewall_sources(["10.0.0.0/8"]),
                                      ports=[30000], unit=unit) == []


def test_every_variable_of_the_templates_is_checked():
    used = set()
    for name in os.listdir(os.path.join(ROLE, "templates")):
        with open(os.path.join(ROLE, "templates", name), encoding="utf-8") as fh:
            text = fh.read()
        used |= set(re.findall(r"(?<![_\w])sglang_firewall_\w+", text))
        # the action is only compared, never written as it is
        assert re.findall(r"sglang_firewall_action(?! == 'reject')", text) == []
    with open(os.path.join(ROLE, "tasks", "apply.yml"), encoding="utf-8") as fh:
        assert "/etc/systemd/system/{{ sglang_firewall_service_name }}.service" in fh.read()
    assert used - {"sglang_firewall_action"} <= set(f.UNIT_INPUTS)
    with open(os.path.join(ROLE, "tasks", "lint.yml"), encoding="utf-8") as fh:
        judge = [t for t in yaml.safe_load(fh) if "set_fact" in str(t)][0]
    passed = judge["vars"]["_sglang_firewall_unit_inputs"]
    assert passed == {k: "{{ " + k + " }}" for k in f.UNIT_INPUTS}


@pytest.mark.parametrize("args, enabled, open_ok", [
    ({"host": "0.0.0.0"}, True, False),      # the firewall filters the port
    ({"host": "0.0.0.0"}, False, True),      # accepted for a private network (local inventory)
    ({"host": "10.0.0.5"}, False, False),    # a declared address
    ({}, False, False),                      # SGLang's default, 127.0.0.1
])
def test_lint_accepts(args, enabled, open_ok):
    assert _errors(f.sglang_firewall_findings(args, enabled=enabled, open_bind_ok=open_ok,
                                              sources=f.sglang_firewall_sources([]), ports=[30000])) == []


def test_lint_reports_bad_entries_and_ports_only_when_enabled():
    sources = f.sglang_firewall_sources(["10.0.0.5/8"])
    assert f.sglang_firewall_findings({}, enabled=False, sources=sources, ports=[0]) == []
    errors = _errors(f.sglang_firewall_findings({}, enabled=True, sources=sources, ports=[30000, 0, "x", 70000]))
    assert errors == ["port 0 is not a TCP port (1-65535)", "port 'x' is not a TCP port (1-65535)",
                      "port 70000 is not a TCP port (1-65535)",
                      "sglang_firewall_allow: 10.0.0.5/8 has host bits set: write 10.0.0.0/8 or the single address 10.0.0.5"]


def test_lint_warns_about_placeholders_and_a_waived_everything():
    sources = f.sglang_firewall_sources(["192.0.2.0/24", "2001:db8::1", "0.0.0.0/0", "10.0.0.0/8"])
    findings = f.sglang_firewall_findings({}, enabled=True, sources=sources, ports=[30000],
                                          admit_all="a lab network behind its own gateway")
    warnings = [x["msg"] for x in findings if x["severity"] == "warning"]
    assert _errors(findings) == []
    assert len(warnings) == 3
    assert "192.0.2.0/24 (sglang_firewall_allow) is a documentation network" in warnings[1]
    assert "2001:db8::1 (sglang_firewall_allow)" in warnings[2]
    assert "admit every IPv4 (0.0.0.0/0) address" in warnings[0]
    assert "accepted in sglang_firewall_admit_all: a lab network behind its own gateway" in warnings[0]


@pytest.mark.parametrize("allow", [["0.0.0.0/0"], ["0.0.0.0/1", "128.0.0.0/1"], ["::/0"], ["::/1", "8000::/1"],
                                   ["::ffff:0:0/96"], ["10.0.0.0/8", "0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/2"]])
def test_a_union_that_admits_every_address_needs_the_waiver(allow):
    sources = f.sglang_firewall_sources(allow)
    findings = f.sglang_firewall_findings({}, enabled=True, sources=sources, ports=[30000])
    assert any("[firewall-admits-all]" in e and "sglang_firewall_admit_all" in e for e in _errors(findings))
    sets = f.sglang_firewall_sets(sources)
    assert any("[firewall-admits-all]" in e for e in sets["errors"])
    assert f.sglang_firewall_sets(sources, admit_all="why")["errors"] == []


def test_a_union_short_of_every_address_passes():
    sources = f.sglang_firewall_sources(["0.0.0.0/1", "128.0.0.0/2", "::/1"])
    assert _errors(f.sglang_firewall_findings({}, enabled=True, sources=sources, ports=[30000])) == []


@pytest.mark.parametrize("path", ["/etc/shadow", "/etc/nftables.conf", "/etc/nftables.d/../shadow.nft", "x.nft",
                                  "/usr/lib/x.nft", "/etc/nftables.d/x.nft\u2028ExecStartPre=/tmp/x"])
def test_the_ruleset_path_is_a_file_of_the_firewalls_own(path):
    path = path.encode().decode("unicode_escape")
    found = f.sglang_firewall_findings({}, unit={"sglang_firewall_ruleset_path": path})
    assert any(e.startswith("sglang_firewall_ruleset_path [") for e in _errors(found)), found


@pytest.mark.parametrize("name", ["sglang", "smg", "ssh", "--help", "../x", "sglang-firewall\n", "fw\u2029x"])
def test_the_firewall_unit_is_not_another_units(name):
    found = f.sglang_firewall_findings({}, unit={"sglang_firewall_service_name": name,
                                                 "sglang_firewall_server_service": "sglang"})
    assert any(e.startswith("sglang_firewall_service_name [") for e in _errors(found)), found


def test_the_firewalls_defaults_pass():
    unit = {"sglang_firewall_ruleset_path": "/etc/nftables.d/sglang-firewall.nft",
            "sglang_firewall_service_name": "sglang-firewall", "sglang_firewall_server_service": "sglang",
            "sglang_firewall_table": "sglang_firewall"}
    assert _errors(f.sglang_firewall_findings({}, unit=unit)) == []


@pytest.mark.parametrize("host", [["0.0.0.0"], {"0.0.0.0": 1}, ("::",)])
def test_a_wildcard_bind_in_a_list_or_mapping_is_a_wildcard(host):
    assert f.sglang_firewall_wildcard(host)
    assert any("[firewall-open-bind]" in e for e in _errors(f.sglang_firewall_findings({"host": host})))
