"""The ruleset roles/sglang_firewall renders for each inventory, checked by nftables itself
(`nft -c -f`: parsed and run through the kernel as a transaction that is never committed), and
the lint of a wildcard bind without the firewall on a copy of the production inventory.

Rendered by ansible-playbook on the controller (the role's `plan` entry point, then the
template), as the role does on a host. nft is Debian's nftables package: scripts/bootstrap.sh
installs it; without it these tests fail and say so."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_lint_playbook import production_copy

ROOT = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
TEMPLATE = ROOT / "roles" / "sglang_firewall" / "templates" / "sglang-firewall.nft.j2"
UNIT = ROOT / "roles" / "sglang_firewall" / "templates" / "sglang-firewall.service.j2"
HOSTS = {"production": "gpu-node-01.example.invalid", "local": "sglang-local-1"}
# case -> (inventory, extra variables). The controller's address is left out but in one case (it
# would be this machine's SSH client, if any); localhost resolves here through getent as on a host.
CASES = {
    "production": ("production", {}),
    # the local monitoring and gateway groups' hosts (the demo's Prometheus and smg) are named like
    # their containers, which resolve only on the containers' network: an ansible_host for every
    # host stands in (the rendering host's local connection ignores it)
    "local-enabled": ("local", {"sglang_firewall_enabled": True, "sglang_firewall_allow": ["172.17.0.1"],
                                "ansible_host": "10.88.0.2"}),
    "local-nobody": ("local", {"sglang_firewall_enabled": True, "sglang_firewall_monitoring_group": "no_such_group",
                               "sglang_firewall_gateway_group": "no_such_group"}),
    "production-gateway-drop": ("production", {
        "sglang_firewall_action": "drop",
        "sglang_firewall_extra_ports": [30001], "sglang_firewall_allow_monitoring": ["10.9.0.0/24", "fd00::9"],
        # the controller as the host sees it: the client address of SSH_CONNECTION (set below)
        "sglang_firewall_allow_controller": True}),
}
# case -> the hosts of a `gateway` group added to the inventory (a second inventory source): the
# gateway's host is admitted by its address, here localhost as getent resolves it on the host
GATEWAYS = {"production-gateway-drop": ["localhost"]}
# the environment a host's module gets over SSH (ansible_connection local passes ours on)
SSH_CONNECTION = "10.77.0.5 52214 10.77.0.11 22"


def nft():
    path = shutil.which("nft") or ("/usr/sbin/nft" if os.path.exists("/usr/sbin/nft") else None)
    if path is None:
        pytest.fail("nft is missing on the controller: install Debian's nftables "
                    "(apt-get install nftables; scripts/bootstrap.sh does it)")
    return path


def nft_check(path):
    """`nft -c -f path` (as root; else in a user and network namespace of its own)."""
    cmd = [nft(), "-c", "-f", str(path)]
    if os.geteuid() != 0:
        cmd = ["unshare", "-rn", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def ansible_env(tmp_path):
    return dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_LOCAL_TEMP=str(tmp_path / ".ansible-tmp"))


def render(tmp_path, inventory, extra, inventory_dir=None, gateways=()):
    """(ruleset text, unit text) of the inventory's first host."""
    env = ansible_env(tmp_path)
    env.pop("SSH_CONNECTION", None)
    if extra.get("sglang_firewall_allow_controller"):
        env["SSH_CONNECTION"] = SSH_CONNECTION
    play = [{"name": "Render", "hosts": HOSTS[inventory], "gather_facts": False, "tasks": [
        # as the playbooks do before the role: sglang_flags_normalized, which sglang_firewall_port reads
        {"name": "Flags", "ansible.builtin.include_role": {"name": "sglang_flags", "tasks_from": "model"}},
        {"name": "Plan", "ansible.builtin.include_role": {"name": "sglang_firewall", "tasks_from": "plan", "public": True}},
        {"name": "Write the files", "ansible.builtin.copy": {
            "content": "{{ lookup('ansible.builtin.template', item) }}",
            "dest": f"{tmp_path}/{{{{ item | basename }}}}", "mode": "0600"},
         "loop": [str(TEMPLATE), str(UNIT)], "delegate_to": "localhost"}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    (tmp_path / "extra.json").write_text(json.dumps({
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "sglang_firewall_allow_controller": False, **extra}))
    sources = ["-i", str(inventory_dir or ROOT / "inventories" / inventory)]
    if gateways:
        (tmp_path / "gateway.yml").write_text(yaml.safe_dump(
            {"all": {"children": {"gateway": {"hosts": {name: None for name in gateways}}}}}))
        sources += ["-i", str(tmp_path / "gateway.yml")]
    proc = subprocess.run([ANSIBLE_PLAYBOOK, *sources,
                           str(tmp_path / "play.yml"), "-e", f"@{tmp_path / 'extra.json'}"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return (tmp_path / TEMPLATE.name).read_text(), (tmp_path / UNIT.name).read_text()


def elements(ruleset, name):
    m = re.search(r"set " + name + r" \{[^}]*?(?:elements = \{ ([^}]*) \})?\s*\}", ruleset)
    assert m, ruleset
    return m.group(1).split(", ") if m.group(1) else []


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = {}
    for case, (inventory, extra) in CASES.items():
        out[case] = render(tmp_path_factory.mktemp(case), inventory, extra, gateways=GATEWAYS.get(case, ()))
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_nft_accepts_the_rendered_ruleset(rendered, tmp_path, case):
    path = tmp_path / "sglang-firewall.nft"
    path.write_text(rendered[case][0])
    proc = nft_check(path)
    assert proc.returncode == 0, proc.stderr + rendered[case][0]


def test_nft_check_catches_a_broken_ruleset(rendered, tmp_path):
    """What the template's `validate:` relies on: a ruleset nft cannot load is refused."""
    path = tmp_path / "broken.nft"
    path.write_text(rendered["production"][0].replace("ip saddr @allowed_v4 accept", "ip saddr @allowed_v4 acept"))
    assert nft_check(path).returncode != 0


@pytest.mark.parametrize("case", sorted(CASES))
def test_only_the_sglang_ports_enter_the_table_and_it_replaces_itself(rendered, case):
    ruleset = rendered[case][0]
    body = [line.strip() for line in ruleset.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    # create-if-missing, delete, define: one transaction that replaces this table and nothing else
    assert body[:3] == ["table inet sglang_firewall", "delete table inet sglang_firewall", "table inet sglang_firewall {"]
    assert [line.split(" {")[0] for line in body if re.match(r"(table|delete|flush|add|insert|destroy) ", line)] == [
        "table inet sglang_firewall", "delete table inet sglang_firewall", "table inet sglang_firewall"]
    # the only hooked chain sends nothing but TCP to the SGLang port(s) further
    assert len(re.findall(r"type filter hook", ruleset)) == 1
    chain = ruleset[ruleset.index("chain input {"):ruleset.index("chain sglang_port {")]
    rules = [line.strip() for line in chain.splitlines()[1:] if line.strip() and line.strip() != "}"]
    ports = "30000, 30001" if case == "production-gateway-drop" else "30000"
    assert rules == ["type filter hook input priority filter; policy accept;", f"tcp dport {{ {ports} }} jump sglang_port"]


def test_production_admits_its_placeholder_and_rejects_with_a_reset(rendered):
    ruleset, unit = rendered["production"]
    assert elements(ruleset, "allowed_v4") == ["192.0.2.0/24"] and elements(ruleset, "allowed_v6") == []
    assert "counter reject with tcp reset" in ruleset and 'iif "lo" accept' in ruleset
    assert "#   192.0.2.0/24 (sglang_firewall_allow)" in ruleset
    assert "ExecStart=/usr/sbin/nft -f /etc/nftables.d/sglang-firewall.nft" in unit
    assert "ExecReload=/usr/sbin/nft -f /etc/nftables.d/sglang-firewall.nft" in unit
    assert "ExecStop=-/usr/sbin/nft delete table inet sglang_firewall" in unit


def test_gateway_and_monitoring_are_admitted_and_drop_is_a_drop(rendered):
    ruleset = rendered["production-gateway-drop"][0]
    # localhost (the gateway group's host) as getent resolves it on the host, merged with the rest
    assert "127.0.0.1" in elements(ruleset, "allowed_v4")
    assert "10.9.0.0/24" in elements(ruleset, "allowed_v4") and "fd00::9" in elements(ruleset, "allowed_v6")
    assert "localhost -> 127.0.0.1" in ruleset and "(gateway group)" in ruleset
    assert "gateway group" not in rendered["production"][0]  # the production example's group is empty
    assert "counter drop" in ruleset and "reject" not in ruleset.split("chain sglang_port", 1)[1]


def test_the_controller_is_admitted_by_its_ssh_client_address(rendered):
    ruleset = rendered["production-gateway-drop"][0]
    assert elements(ruleset, "allowed_v4") == ["10.9.0.0/24", "10.77.0.5", "127.0.0.1", "192.0.2.0/24"]
    assert "#   10.77.0.5 (controller (SSH_CONNECTION))" in ruleset
    assert "10.77.0.5" not in rendered["production"][0]


def test_local_with_nobody_listed_admits_only_loopback(rendered):
    ruleset = rendered["local-nobody"][0]
    assert elements(ruleset, "allowed_v4") == [] and elements(ruleset, "allowed_v6") == []
    assert "#   (nobody but loopback)" in ruleset
    local = rendered["local-enabled"][0]
    hosts = yaml.safe_load((ROOT / "inventories" / "local" / "hosts.yml").read_text())
    monitoring = (((hosts["all"].get("children") or {}).get("monitoring") or {}).get("hosts") or {})
    assert elements(local, "allowed_v4") == (["10.88.0.2"] if monitoring else []) + ["172.17.0.1"]
    assert ("#   10.88.0.2 (monitoring group)" in local) == bool(monitoring)


def test_a_name_that_does_not_resolve_fails_naming_it(tmp_path):
    play_dir = tmp_path / "case"
    play_dir.mkdir()
    with pytest.raises(AssertionError, match=r"gone\.invalid does not resolve on this host"):
        render(play_dir, "production", {"sglang_firewall_allow": ["gone.invalid"]})


def lint(tmp_path, inventory, *extra):
    proc = subprocess.run([ANSIBLE_PLAYBOOK, str(ROOT / "playbooks" / "lint.yml"), "-i", str(inventory), *extra],
                          cwd=ROOT, env=ansible_env(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).replace("''", "'").split())


def test_lint_refuses_production_binding_every_address_without_the_firewall(tmp_path):
    copy, _ = production_copy(tmp_path)  # with a stand-in for the operator's API key file
    (copy / "group_vars" / "blackwell" / "firewall.yml").write_text("sglang_firewall_enabled: false\n")
    rc, out = lint(tmp_path, copy, "-l", "blackwell")
    assert rc != 0
    assert "sglang_firewall: gpu-node-01.example.invalid (nothing was changed):" in out
    assert ("--host [firewall-open-bind] '0.0.0.0' (sglang_server_args) binds every address of the host "
            "and sglang_firewall_enabled is false") in out
    # a declared address passes with the firewall off
    profile = yaml.safe_load((copy / "group_vars" / "blackwell" / "sglang.yml").read_text())
    (copy / "host_vars").mkdir(exist_ok=True)
    for host in HOSTS["production"], "gpu-node-02.example.invalid":
        args = dict(profile["sglang_server_args"], host="10.20.0.11")
        (copy / "host_vars" / f"{host}.yml").write_text(yaml.safe_dump({"sglang_server_args": args}))
    # a pinned model revision (the shipped placeholder is refused by the model's lint)
    rc, out = lint(tmp_path, copy, "-l", "blackwell", "-e", "model_files_revision=" + "0" * 40)
    assert rc == 0, out


def test_the_filtered_port_is_the_one_the_unit_gets(tmp_path):
    """sglang_server_args {"--port": 31000} renders --port 31000 into the unit: the ruleset filters
    31000 (sglang_firewall_port reads sglang_flags_normalized, the normalised flags)."""
    ruleset, _ = render(tmp_path, "production", {"sglang_server_args": {"--port": 31000, "--host": "0.0.0.0"}})
    assert "tcp dport { 31000 } jump sglang_port" in ruleset and "30000" not in ruleset
