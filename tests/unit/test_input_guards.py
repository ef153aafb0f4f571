"""Every input of the guards' table (docs/security.md, "Who refuses what") and the classes they
stand for, through both doors: the lint (refused, naming host, variable, rule and fix) and the
server's render path with the lint skipped (plugins/module_utils/flags/server_guard.py, the flag
model's argv, the environment file: refused, so nothing is rendered). The shared guards
themselves: plugins/module_utils/sglang_input_guard.py."""

import re

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.sglang.deploy.plugins.module_utils.firewall import sources as FW
from ansible_collections.sglang.deploy.plugins.module_utils.flags import render as RENDER
from ansible_collections.sglang.deploy.plugins.module_utils.flags import catalog as C
from ansible_collections.sglang.deploy.plugins.module_utils.flags import exposure as X
from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as I
from ansible_collections.sglang.deploy.plugins.module_utils.flags import report as REPORT
from ansible_collections.sglang.deploy.plugins.module_utils.flags import sandbox as S
from ansible_collections.sglang.deploy.plugins.module_utils.flags import server_guard as G
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as GUARD

HOST = "gpu-node-03.example.invalid"
CATALOG = C.sglang_flags_catalog_of("0.5.23")
ARGS = {"model-path": "/data/models/m", "port": 30000}
KEY = "k" * 32
# the role's defaults (roles/sglang_server/defaults/main.yml), as render.yml passes them
UNIT = {
    "sglang_server_user": "root", "sglang_server_workdir": "/var/lib/sglang",
    "sglang_server_config_dir": "/etc/sglang", "sglang_server_python": "/root/ml-env/bin/python",
    "sglang_server_path": "/root/ml-env/bin:/usr/local/bin:/usr/bin:/bin",
    "sglang_server_service_name": "sglang", "sglang_server_ready_path": "/health_generate",
    "sglang_server_timeout_stop_sec": 120, "sglang_server_timeout_start_sec": 1800,
    "sglang_server_restart_sec": 15, "sglang_server_start_limit_burst": 3,
    "sglang_server_start_limit_interval_sec": 3600, "sglang_server_limit_nofile": 1048576,
    "sglang_server_ready_timeout": 900, "sglang_server_journal_lines": 60, "sglang_server_hardening": True,
    "sglang_server_read_write_paths": [], "sglang_server_device_allow": ["char-nvidia-frontend rw"],
    "sglang_server_capabilities": [], "sglang_server_umask": "0077",
    "sglang_server_hardening_env": {"XDG_CACHE_HOME": "/var/cache/sglang/gen-1"},
}
LS, PS, NEL = "\u2028", "\u2029", "\u0085"

# id -> (what the host sets: args / env / unit / keys / firewall, the variable and rule the lint names)
CASES = {
    "flag-value-newline": ({"args": {"served-model-name": "m\nExecStartPre=/tmp/x"}},
                           "--served-model-name", "input-control-char"),
    "flag-value-line-separator": ({"args": {"served-model-name": f"m{LS}ExecStartPre=/tmp/x"}},
                                  "--served-model-name", "input-control-char"),
    "flag-value-nel-in-list": ({"args": {"lora-paths": ["a", f"b{NEL}c"]}}, "--lora-paths", "input-control-char"),
    "api-key-flag": ({"args": {"api-key": KEY}}, "--api-key", "input-key-flag"),
    "api-key-prefix": ({"args": {"api-k": KEY}}, "--api-k", "input-key-flag"),
    "admin-key-prefix-dashes": ({"args": {"--admin-api": KEY}}, "--admin-api", "input-key-flag"),
    "config-flag": ({"args": {"config": "/tmp/evil.yaml"}}, "--config", "input-config-flag"),
    "config-prefix": ({"args": {"conf": "/tmp/evil.yaml"}}, "--conf", "input-config-flag"),
    "key-inside-list": ({"args": {"lora-paths": ["x", "--api-key", "K"]}}, "--lora-paths", "input-dash-value"),
    "config-as-value": ({"args": {"served-model-name": "--config=/tmp/x.yaml"}}, "--served-model-name",
                        "input-dash-value"),
    "host-list": ({"args": {"host": ["0.0.0.0"]}, "keys": {"sglang_server_api_key": KEY}}, "--host",
                  "input-host-type"),
    "host-mapping": ({"args": {"host": {"0.0.0.0": 1}}, "keys": {"sglang_server_api_key": KEY}}, "--host",
                     "input-host-type"),
    "user-newline": ({"unit": {"sglang_server_user": "root\nExecStartPre=/tmp/x"}}, "sglang_server_user",
                     "input-control-char"),
    "user-line-separator": ({"unit": {"sglang_server_user": f"root{PS}x"}}, "sglang_server_user",
                            "input-control-char"),
    "workdir-newline": ({"unit": {"sglang_server_workdir": "/var/lib/x\nExecStartPre=/tmp/x"}},
                        "sglang_server_workdir", "input-control-char"),
    "workdir-crontabs": ({"unit": {"sglang_server_workdir": "/var/spool/cron/crontabs"}}, "sglang_server_workdir",
                         "input-system-dir"),
    "workdir-run-systemd": ({"unit": {"sglang_server_workdir": "/run/systemd/system"}}, "sglang_server_workdir",
                            "input-system-dir"),
    "workdir-traversal": ({"unit": {"sglang_server_workdir": "/var/lib/sglang/../../../etc"}},
                          "sglang_server_workdir", "input-path"),
    "rw-path-crontabs": ({"unit": {"sglang_server_read_write_paths": ["/var/spool/cron/crontabs"]}},
                         "sglang_server_read_write_paths", "sandbox-weakened"),
    "rw-path-run-systemd": ({"unit": {"sglang_server_read_write_paths": ["/run/systemd/system"]}},
                            "sglang_server_read_write_paths", "sandbox-weakened"),
    "rw-path-var-lib-systemd": ({"unit": {"sglang_server_read_write_paths": ["-/var/lib/systemd"]}},
                                "sglang_server_read_write_paths", "sandbox-weakened"),
    "rw-path-traversal": ({"unit": {"sglang_server_read_write_paths": ["/data/../etc"]}},
                          "sglang_server_read_write_paths", "input-path"),
    "unit-help": ({"unit": {"sglang_server_service_name": "--help"}}, "sglang_server_service_name",
                  "input-unit-name"),
    "unit-firewall": ({"unit": {"sglang_server_service_name": "sglang-firewall"}}, "sglang_server_service_name",
                      "input-unit-name"),
    "unit-traversal": ({"unit": {"sglang_server_service_name": "../x"}}, "sglang_server_service_name",
                       "input-unit-name"),
    "unit-system": ({"unit": {"sglang_server_service_name": "ssh"}}, "sglang_server_service_name",
                    "input-unit-reserved"),
    "env-name-newline": ({"env": {"LD_PRELOAD\n": "/tmp/x.so"}}, "sglang_server_env['LD_PRELOAD\\n']",
                         "input-env-name"),
    "env-value-line-separator": ({"env": {"X": f"1{LS}LD_PRELOAD=/tmp/x.so"}}, "sglang_server_env['X']",
                                 "input-control-char"),
    "key-whitespace": ({"keys": {"sglang_server_api_key": " " * 16}}, "sglang_server_api_key", "input-key-shape"),
    "key-list": ({"keys": {"sglang_server_api_key": [KEY]}}, "sglang_server_api_key", "input-key-shape"),
    "key-inner-space": ({"keys": {"sglang_server_admin_api_key": "a" * 10 + " " + "b" * 10}},
                        "sglang_server_admin_api_key", "input-key-shape"),
}


def _unit(case):
    return dict(UNIT, **case.get("unit", {}))


def _keys(case):
    return dict({"sglang_server_api_key": KEY, "sglang_server_admin_api_key": ""}, **case.get("keys", {}))


def lint(case):
    """The lint's error lines for the host (roles/sglang_flags/tasks/evaluate.yml's calls)."""
    args, keys = dict(ARGS, **case.get("args", {})), _keys(case)
    findings = I.sglang_flags_inputs(args, env=case.get("env", {}), unit=_unit(case), catalog=CATALOG)
    findings += S.sglang_flags_sandbox_findings({k: _unit(case).get(k) for k in S.SETTINGS}, {})
    findings += X.sglang_flags_key_findings(
        I.sglang_flags_expand(args, CATALOG), {k: len(str(v)) for k, v in keys.items()}, "",
        {k: X.sglang_key_problem(v) for k, v in keys.items()})
    return REPORT.sglang_flags_report({HOST: findings})["errors"]


def render(case, **firewall):
    """What render.yml's guard refuses, with the lint skipped (no catalog: the render path has none)."""
    keys = _keys(case)
    return G.sglang_server_refusals({
        "flags": dict(ARGS, **case.get("args", {})), "env": case.get("env", {}), "unit": _unit(case),
        "allow_weaker": {}, "key_problems": {k: X.sglang_key_problem(v) for k, v in keys.items()},
        "key_lengths": {k: len(str(v)) for k, v in keys.items()}, "allow_no_key": "",
        "foreign": ["sglang-firewall", "smg"], **firewall})


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_lint_refuses_naming_host_variable_rule_and_fix(name):
    case, variable, rule = CASES[name]
    head = re.compile(re.escape(f"{HOST}: {variable}") + r"(\[[^\]]*\])* " + re.escape(f"[{rule}]"))
    line = next((x for x in lint(case) if head.match(x)), None)
    assert line is not None, (head, lint(case))
    assert "Fix: " in line
    assert KEY not in line  # a key is never quoted


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_render_path_refuses_with_the_lint_skipped(name):
    case, variable, rule = CASES[name]
    lines = render(case)
    assert any(f"[{rule}]" in x for x in lines), lines
    assert all(KEY not in x for x in lines)


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if "args" in CASES[n][0] and "host" not in n])
def test_the_flag_model_never_renders_them(name):
    with pytest.raises(AnsibleFilterError):
        RENDER.sglang_argv(dict(ARGS, **CASES[name][0]["args"]))


@pytest.mark.parametrize("name", [n for n in sorted(CASES) if "env" in CASES[n][0]])
def test_the_environment_file_never_renders_them(name):
    with pytest.raises(AnsibleFilterError):
        RENDER.sglang_env_lines(CASES[name][0]["env"])


@pytest.mark.parametrize("host", ["0.0.0.0", "0.0", "::", "::ffff:0.0.0.0", ["0.0.0.0"], {"0.0.0.0": 1}])
def test_a_wildcard_bind_with_the_firewall_off_is_refused_at_render(host):
    case = {"args": {"host": host}}
    assert any("[firewall-open-bind]" in x for x in render(case))
    assert not any("[firewall-open-bind]" in x for x in render(case, firewall_enabled=True))
    if isinstance(host, str):  # the local profile: 0.0.0.0 on a private network, accepted by name
        assert render(case, open_bind_ok=True) == []


def test_the_abbreviated_host_is_read_as_the_host():
    assert any("[firewall-open-bind]" in x for x in render({"args": {"hos": "0.0.0.0"}}))


def test_the_defaults_render():
    assert render({}) == []
    assert render({"args": {"host": "127.0.0.1", "lora-paths": ["a", "b"], "mamba-max-states-per-path": -1}}) == []


@pytest.mark.parametrize("text", ["a\nb", "a\rb", "a\tb", "a\x00b", f"a{NEL}b", f"a{LS}b", f"a{PS}b"])
def test_every_line_break_is_a_control_character(text):
    assert GUARD.control_char(text)


@pytest.mark.parametrize("flag", ["api-key", "api_key", "--api-k", "a", "admin-api-key", "admin", "config", "c",
                                  "--con", "api-key=x"])
def test_the_refused_options_by_any_prefix(flag):
    assert GUARD.refused_option(flag)


@pytest.mark.parametrize("flag", ["context-length", "model-path", "host", "port", "tp", "chunked-prefill-size",
                                  "enable-metrics", "api-keys-file"])
def test_other_options_are_not_refused(flag):
    assert not GUARD.refused_option(flag)


def test_no_catalog_option_is_a_prefix_of_a_refused_one():
    # the prefix rule refuses nothing SGLang names in full (argparse would otherwise take it exactly)
    names = [o[2:] for o in CATALOG["options"]]
    assert [n for n in names if GUARD.refused_option(n) and n not in GUARD.REFUSED_OPTIONS] == []


def test_the_firewall_lint_refuses_its_inputs():
    bad = {"sglang_firewall_ruleset_path": "/etc/shadow", "sglang_firewall_service_name": "sglang",
           "sglang_firewall_server_service": "sglang", "sglang_firewall_table": "sglang_firewall"}
    errors = [f["msg"] for f in FW.sglang_firewall_findings({}, unit=bad) if f["severity"] == "error"]
    assert any(e.startswith("sglang_firewall_ruleset_path [input-path-root]") for e in errors)
    assert any(e.startswith("sglang_firewall_service_name [input-unit-name]") for e in errors)
    sources = FW.sglang_firewall_sources(["0.0.0.0/1", "128.0.0.0/1"])
    assert any("[firewall-admits-all]" in f["msg"] for f in FW.sglang_firewall_findings({}, True, sources=sources))
