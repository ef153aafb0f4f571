"""playbooks/lint.yml judges what the unit is rendered from (the one flag model), before any host
is touched: a value that argparse would read as a flag, the --config flag, a wildcard bind spelled
with dashes or in a short form, and a control character in the firewall's unit variables, each
refused naming the host, the variable or flag, the rule and the fix. Copies of the production
inventory; the hosts are *.invalid names, so a connection attempt would show as unreachable."""

import pytest
import yaml
from test_lint_playbook import flat, production_copy, run_lint

GOOD, BAD = "gpu-node-01.example.invalid", "gpu-node-02.example.invalid"


def _write(copy, host, data):
    (copy / "host_vars").mkdir(exist_ok=True)
    (copy / "host_vars" / f"{host}.yml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _failure(out):
    text = flat(out)
    return text[text.index("FAILED! =>"):text.index("PLAY RECAP")]


def _line(failure, head):
    assert head in failure, (head, failure)
    return failure[failure.index(head):][:600]


@pytest.fixture
def copy_and_profile(tmp_path):
    return production_copy(tmp_path)


def test_dash_values_and_config_are_refused(copy_and_profile):
    copy, profile = copy_and_profile
    args = dict(profile["sglang_server_args"])
    args["lora-paths"] = ["x", "--api-key", "known"]  # would reach argparse as --api-key known
    args["config"] = "/etc/sglang/mine.yaml"
    _write(copy, BAD, {"sglang_server_args": args})
    rc, out = run_lint("-i", str(copy))
    failure = _failure(out)
    assert rc != 0
    line = _line(failure, f"{BAD}: --lora-paths [input-dash-value] sglang_server_args['lora-paths']: the value '--api-key'")
    assert "SGLang's argparse reads it as a flag" in line
    assert "Fix: remove it; a value may start with '-' only as a number (-1)" in line
    line = _line(failure, f"{BAD}: --config [input-config-flag] sglang_server_args['config']: --config FILE.yaml")
    assert "Fix: remove it and write each flag of that file into sglang_server_args" in line
    assert "'known'" not in failure and f"{GOOD}: " not in failure
    assert "unreachable=1" not in out and "changed=1" not in out


def test_wildcard_bind_with_dashes_and_unit_injection_in_the_firewall_are_refused(copy_and_profile):
    copy, profile = copy_and_profile
    args = {k: v for k, v in profile["sglang_server_args"].items() if k not in ("host", "port")}
    args["--host"] = "0.0"   # every IPv4 address, as inet_aton reads it
    args["--port"] = 31000
    _write(copy, BAD, {"sglang_server_args": args, "sglang_firewall_enabled": False})
    _write(copy, GOOD, {"sglang_firewall_ruleset_path": "/etc/nftables.d/x.nft\nExecStartPre=/tmp/pwn"})
    # the injected ruleset path is refused by its kind, in the lint's one report
    rc, out = run_lint("-i", str(copy))
    assert rc != 0
    text = flat(out)
    assert f"{GOOD}: sglang_firewall_ruleset_path [input-control-char]" in text and "ExecStartPre=/tmp/pwn" in text
    assert "Fix: remove it" in text
    # without it the flags pass and the firewall's own lint refuses the wildcard bind
    _write(copy, GOOD, {})
    rc, out = run_lint("-i", str(copy))
    failure = _failure(out)
    assert rc != 0
    assert "sglang_flags lint: 2 host(s) pass" in flat(out)  # the flags themselves are fine
    line = _line(failure, f"sglang_firewall: {BAD} (nothing was changed):")
    assert "--host [firewall-open-bind] '0.0' (sglang_server_args) binds every address of the host" in line
    assert "Fix: bind a declared address" in line
    assert "unreachable=1" not in out and "changed=1" not in out
