"""The watch of roles/sglang_firewall (docs/firewall.md, The watch): its timer and service as the
role renders them (rendered by ansible-playbook on the controller, the role's `plan` entry point
then the templates, as test_sglang_firewall_render.py does), how the role turns it on and off, and
its script (files/sglang-firewall-watch.sh) run against a real nftables ruleset, in a user and
network namespace of its own (the controller's ruleset is never touched), with a stand-in for
systemctl that records what it was asked."""

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml
from test_sglang_firewall_render import ANSIBLE_PLAYBOOK, HOSTS, ROOT, ansible_env, nft

ROLE = ROOT / "roles" / "sglang_firewall"
SCRIPT = ROLE / "files" / "sglang-firewall-watch.sh"
RULESET = ROLE / "templates" / "sglang-firewall.nft.j2"
TIMER = ROLE / "templates" / "sglang-firewall-watch.timer.j2"
SERVICE = ROLE / "templates" / "sglang-firewall-watch.service.j2"
# variables unlike the defaults, so that each one is seen where it lands
CUSTOM = {"sglang_firewall_watch_interval_sec": 7, "sglang_firewall_table": "fw_watch_test",
          "sglang_firewall_ruleset_path": "/etc/nftables.d/fw-watch-test.nft",
          "sglang_firewall_service_name": "fw-test", "sglang_firewall_server_service": "model-server",
          # the server's own unit, which the firewall's drop-in goes to (its kinds hold them together)
          "sglang_server_service_name": "model-server"}


def render(tmp_path, extra):
    """{template file name: rendered text} for the production inventory's first host."""
    play = [{"name": "Render", "hosts": HOSTS["production"], "gather_facts": False, "tasks": [
        {"name": "Flags", "ansible.builtin.include_role": {"name": "sglang_flags", "tasks_from": "model"}},
        {"name": "Plan", "ansible.builtin.include_role": {"name": "sglang_firewall", "tasks_from": "plan", "public": True}},
        {"name": "Write the files", "ansible.builtin.copy": {
            "content": "{{ lookup('ansible.builtin.template', item) }}",
            "dest": f"{tmp_path}/{{{{ item | basename }}}}", "mode": "0600"},
         "loop": [str(RULESET), str(TIMER), str(SERVICE)], "delegate_to": "localhost"}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "extra.yml").write_text(yaml.safe_dump({
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "sglang_firewall_allow_controller": False, **extra}))
    env = ansible_env(tmp_path)
    env.pop("SSH_CONNECTION", None)
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(ROOT / "inventories" / "production"), str(tmp_path / "play.yml"),
                           "-e", f"@{tmp_path / 'extra.yml'}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {path.name: (tmp_path / path.name).read_text() for path in (RULESET, TIMER, SERVICE)}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    return {"defaults": render(tmp_path_factory.mktemp("defaults"), {}),
            "custom": render(tmp_path_factory.mktemp("custom"), CUSTOM)}


def settings(unit):
    """[(key, value)] of a unit's lines, comments left out."""
    return [tuple(line.split("=", 1)) for line in unit.splitlines() if "=" in line and not line.startswith("#")]


def test_the_timer_fires_every_interval_within_a_second(rendered):
    for case, interval, firewall in (("defaults", 5, "sglang-firewall"), ("custom", 7, "fw-test")):
        timer = dict(settings(rendered[case][TIMER.name]))
        assert timer["OnActiveSec"] == timer["OnUnitActiveSec"] == f"{interval}s", timer
        assert timer["AccuracySec"] == "1s"
        # started and stopped with the firewall unit; enabled at boot
        assert timer["PartOf"] == timer["After"] == f"{firewall}.service"
        assert timer["WantedBy"] == f"timers.target {firewall}.service"


def test_the_service_names_the_table_the_ruleset_and_the_server(rendered):
    service = dict(settings(rendered["defaults"][SERVICE.name]))
    assert service["Type"] == "oneshot"
    assert service["ExecStart"] == ("/usr/local/libexec/sglang-firewall-watch sglang_firewall "
                                    "/etc/nftables.d/sglang-firewall.nft sglang.service")
    custom = dict(settings(rendered["custom"][SERVICE.name]))
    assert custom["ExecStart"] == ("/usr/local/libexec/fw-test-watch fw_watch_test "
                                   "/etc/nftables.d/fw-watch-test.nft model-server.service")
    # hardened like the firewall unit, with only what nft and `systemctl stop` need
    assert custom["CapabilityBoundingSet"] == "CAP_NET_ADMIN CAP_SYS_ADMIN"
    assert custom["ProtectSystem"] == "strict" and custom["NoNewPrivileges"] == "yes"
    assert custom["LogLevelMax"] == "notice"


ANALYZE = shutil.which("systemd-analyze")


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
def test_the_service_sandbox_score(rendered, tmp_path):
    path = tmp_path / "sglang-firewall-watch.service"
    path.write_text(rendered["defaults"][SERVICE.name])
    proc = subprocess.run([ANALYZE, "security", "--offline=true", "--no-pager", str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r"Overall exposure level for sglang-firewall-watch\.service: ([0-9.]+)", proc.stdout + proc.stderr)
    assert found, proc.stdout + proc.stderr
    print(f"systemd-analyze security --offline=true, sglang-firewall-watch.service: {found.group(1)}")
    # root with CAP_NET_ADMIN and CAP_SYS_ADMIN on the host's network (4.0 when written)
    assert float(found.group(1)) < 5.0


def test_the_role_installs_the_watch_only_when_it_is_on():
    apply = yaml.safe_load((ROLE / "tasks" / "apply.yml").read_text())
    imports = {t["ansible.builtin.import_tasks"]: t["when"] for t in apply if "ansible.builtin.import_tasks" in t}
    assert imports == {"watch.yml": "sglang_firewall_watch | bool", "watch_absent.yml": "not (sglang_firewall_watch | bool)"}
    # the firewall's removal removes the watch first, before the table and the ruleset go
    remove = yaml.safe_load((ROLE / "tasks" / "remove.yml").read_text())
    assert remove[0]["sglang.deploy.sglang_firewall_absent"]["watch"] == "{{ _sglang_firewall_watch_unit }}"
    assert remove[0]["sglang.deploy.sglang_firewall_absent"]["watch_script"] == "{{ _sglang_firewall_watch_script }}"
    absent = yaml.safe_load((ROLE / "tasks" / "watch_absent.yml").read_text())
    text = yaml.safe_dump(absent)
    for path in (".timer", ".service", "_sglang_firewall_watch_script"):
        assert path in text
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert defaults["sglang_firewall_watch"] is True and defaults["sglang_firewall_watch_interval_sec"] == 5


def test_an_interval_below_a_second_is_refused():
    watch = yaml.safe_load((ROLE / "tasks" / "watch.yml").read_text())
    assert watch[0]["ansible.builtin.assert"]["that"] == "_sglang_firewall_watch_interval | int >= 1"


def run_script(tmp_path, ruleset_text, setup="", active=True):
    """Run the script in a network namespace of its own, after `setup` (nft commands); returns
    (rc, its output, what systemctl was asked, the tables listed afterwards)."""
    ruleset = tmp_path / "ruleset.nft"
    ruleset.write_text(ruleset_text)
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    calls = tmp_path / "systemctl.calls"
    calls.write_text("")
    (fake / "systemctl").write_text(f'#!/bin/sh\necho "$*" >> {calls}\n'
                                    f'[ "$1" = is-active ] && exit {0 if active else 3}\nexit 0\n')
    (fake / "systemctl").chmod(0o755)
    path = f"{fake}:{os.path.dirname(nft())}:/usr/sbin:/usr/bin:/sbin:/bin"
    inner = (f"{setup}\n/bin/sh {SCRIPT} sglang_firewall {ruleset} sglang.service > {tmp_path}/out 2>&1;"
             f" echo $? > {tmp_path}/rc; nft list tables > {tmp_path}/tables")
    proc = subprocess.run(["unshare", "-rn", "/bin/sh", "-c", inner], env=dict(os.environ, PATH=path),
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return (int((tmp_path / "rc").read_text()), (tmp_path / "out").read_text(), calls.read_text().splitlines(),
            (tmp_path / "tables").read_text().strip())


def test_a_deleted_table_is_loaded_again_and_said(rendered, tmp_path):
    ruleset = rendered["defaults"][RULESET.name]
    rc, out, calls, tables = run_script(tmp_path, ruleset, setup=f"nft -f {tmp_path}/ruleset.nft && "
                                        "nft delete table inet sglang_firewall")
    assert rc == 0 and tables == "table inet sglang_firewall"
    assert out.startswith("<4>sglang_firewall: table inet sglang_firewall was missing from the running ruleset"), out
    assert "restored it from" in out and "sglang.service kept running" in out
    assert calls == []  # the server is left alone


def test_a_loaded_table_is_left_alone_silently(rendered, tmp_path):
    rc, out, calls, tables = run_script(tmp_path, rendered["defaults"][RULESET.name], setup=f"nft -f {tmp_path}/ruleset.nft")
    assert (rc, out, calls, tables) == (0, "", [], "table inet sglang_firewall")


def test_a_ruleset_that_does_not_load_stops_the_running_server(rendered, tmp_path):
    broken = rendered["defaults"][RULESET.name] + "this is not nft\n"
    rc, out, calls, tables = run_script(tmp_path, broken)
    assert rc == 1 and tables == ""
    assert calls == ["is-active --quiet sglang.service", "stop sglang.service"]
    lines = out.splitlines()
    assert lines[0].startswith("<3>sglang_firewall: table inet sglang_firewall is missing and ") and "did not load" in lines[0]
    assert lines[1].startswith("<3>sglang_firewall: stopped sglang.service so that its port is not served unfiltered (fail closed)")
    # a server that is not running (failed, or its drop-in's start check failing) is not stopped
    rc, out, calls, _ = run_script(tmp_path, broken, active=False)
    assert rc == 1 and calls == ["is-active --quiet sglang.service"] and len(out.splitlines()) == 1
