"""The server's render path refuses the issue's inputs with the lint skipped: ansible-playbook runs
roles/sglang_server tasks_from render (what validate.yml and apply.yml import) with
``--skip-tags sglang_flags_lint``, then writes the unit and environment templates as configure.yml
would. Each bad input fails the run at render.yml's guard (plugins/module_utils/flags/server_guard.py),
naming the variable and the rule, and nothing is written (the flags are refused first by the kinds of
the flag model's entry point, roles/sglang_flags tasks_from model, which the render includes). The unit tests
(tests/unit/test_input_guards.py) probe every input and class; this runs a sample through Ansible."""

import pytest
import yaml
from test_unit_render import HOSTS, ROOT, run_render  # pylint: disable=wrong-import-order

HOST = HOSTS["local"]
KEY = "k" * 32
with open(ROOT / "inventories" / "local" / "group_vars" / "all" / "sglang.yml", encoding="utf-8") as _fh:
    ARGS = yaml.safe_load(_fh)["sglang_server_args"]

# extra variables -> what the refusal names
CASES = {
    "flag-newline": ({"sglang_server_args": dict(ARGS, **{"served-model-name": "m\nExecStartPre=/tmp/x"})},
                     "[input-control-char]"),
    "api-key-prefix": ({"sglang_server_args": dict(ARGS, **{"api-k": KEY})}, "[input-key-flag]"),
    "key-in-list": ({"sglang_server_args": dict(ARGS, **{"lora-paths": ["x", "--api-key", KEY]})},
                    "[input-dash-value]"),
    "config": ({"sglang_server_args": dict(ARGS, config="/tmp/evil.yaml")}, "[input-config-flag]"),
    "host-list": ({"sglang_server_args": dict(ARGS, host=["0.0.0.0"]), "sglang_firewall_open_bind_ok": False},
                  "[input-host-type]"),
    "wildcard-firewall-off": ({"sglang_firewall_open_bind_ok": False}, "[firewall-open-bind]"),
    "user-line-separator": ({"sglang_server_user": "root\u2028ExecStartPre=/tmp/x"}, "sglang_server_user [input-control-char]"),
    "workdir-cron": ({"sglang_server_workdir": "/var/spool/cron/crontabs"}, "sglang_server_workdir [input-system-dir]"),
    "rw-run-systemd": ({"sglang_server_read_write_paths": ["/run/systemd/system"]}, "[sandbox-weakened]"),
    "unit-help": ({"sglang_server_service_name": "--help"}, "sglang_server_service_name [input-unit-name]"),
    "unit-firewall": ({"sglang_server_service_name": "sglang-firewall"}, "sglang_server_service_name [input-unit-name]"),
    "env-name-newline": ({"sglang_server_env": {"LD_PRELOAD\n": "/tmp/x.so"}}, "[input-env-name]"),
    "key-spaces": ({"sglang_server_api_key": " " * 16}, "sglang_server_api_key [input-key-shape]"),
    "key-list": ({"sglang_server_api_key": [KEY]}, "sglang_server_api_key [input-key-shape]"),
}


def render(tmp_path, extra):
    return run_render(tmp_path, "local", extra, ("--skip-tags", "sglang_flags_lint"))


def test_the_local_profile_renders(tmp_path):
    proc = render(tmp_path, {})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "sglang.service.j2").exists()


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_render_path_refuses_with_the_lint_skipped(tmp_path, name):
    extra, named = CASES[name]
    proc = render(tmp_path, extra)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    # the render guard, or before it the kinds of the flag model's entry point the render includes
    assert (f"{HOST}: sglang_server refuses to render this unit (nothing was written)" in out
            or "input(s) that cannot work (nothing was touched)" in out), out
    assert named in out, out
    assert not (tmp_path / "sglang.service.j2").exists() and not (tmp_path / "sglang.env.j2").exists()
    assert KEY not in out
