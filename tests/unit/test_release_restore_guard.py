"""A restored release passes the render checks a new one passes (plugins/module_utils/release/guard.py,
run by roles/sglang_release/tasks/restore.yml before anything is written): the recorded unit and
environment file, read back into flags, unit settings and environment, judged by the server's
render guard and sglang_server's kinds. The rendered fixtures (tests/fixtures/units/) pass; a
release recorded with what a new render refuses is refused, naming the release, the variable or
flag, the rule and the fix."""

from pathlib import Path

import pytest

from ansible_collections.sglang.deploy.plugins.module_utils.release import guard as G

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "units"
CONTEXT = {"allow_no_key": "a test: no server", "firewall_enabled": False, "open_bind_ok": True}


def files(name):
    return (FIXTURES / f"{name}.service").read_text(), (FIXTURES / f"{name}.env").read_text()


def refusals(unit, env, **context):
    return G.sglang_release_restore_refusals({"id": "r1", "unit_text": unit, "env_text": env}, dict(CONTEXT, **context))


@pytest.mark.parametrize("name", ["local", "production", "production-pcie"])
def test_the_rendered_units_read_back_and_pass(name):
    unit, env = files(name)
    read = G.restored_unit(unit, env)
    assert read["flags"]["model-path"].startswith("/") and read["env"]["SGLANG_DEPLOY_ML_ENV"] == "gen-fixture"
    assert refusals(unit, env, firewall_enabled=True) == []


@pytest.mark.parametrize("change,named", [
    (("--sleep-on-idle", "--sleep-on-idle \\\n    --enable-custom-logit-processor"), "[input-unsafe-flag]"),
    (("UMask=0077", "UMask=0077\nReadWritePaths=/home/alice/.ssh"), "sglang_server_read_write_paths [sandbox-weakened]"),
    (("--port 30000", "--port 30000 \\\n    --po 31000"), "[flag-abbreviation]"),
    (("User=root", "User=root\nUser=bad user"), "sglang_server_user [input-user]"),
    (("/root/ml-env/bin/python -m", "/tmp/py/bin/python -m"), "sglang_server_python [input-user-tree]"),
    # the interpreter of the subreaper the server runs under (ExecStart's first word) too
    (("/root/ml-env/bin/python -I -S", "/tmp/py/bin/python -I -S"), "sglang_server_python [input-user-tree]"),
])
def test_a_release_a_new_render_refuses_is_refused(change, named):
    unit, env = files("local")
    assert change[0] in unit
    lines = refusals(unit.replace(change[0], change[1]), env)
    assert any(line.startswith("release r1: ") and named in line and " Fix: " in line for line in lines), lines


def test_an_environment_file_with_a_loader_into_a_home_is_refused_without_quoting_a_credential():
    unit, env = files("local")
    env += 'PYTHONPATH="/home/alice/lib"\nHF_TOKEN="hf_secret_value_1234"\n'
    lines = refusals(unit, env)
    assert any("sglang_server_env['PYTHONPATH'] [input-env-loader]" in line for line in lines), lines
    assert all("hf_secret_value_1234" not in line for line in lines)
