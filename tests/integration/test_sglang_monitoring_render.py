"""playbooks/monitoring.yml in write-only mode renders, through Ansible, a scrape configuration
and rules that promtool accepts, for the local and the production inventory; the labels carry
sglang_verify's flag hash; a second run changes nothing; check mode writes nothing."""

import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
from ansible_collections.sglang.deploy.plugins.module_utils.flags import model
from ansible_collections.sglang.deploy.tests.unit.sglang_monitoring_support import run_promtool

ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
INVENTORIES = {
    "local": ("inventories/local", "local/group_vars/all/sglang.yml", ["sglang-local-1", "sglang-local-2"]),
    "production": ("inventories/production", "production/group_vars/blackwell/sglang.yml",
                   ["gpu-node-01.example.invalid", "gpu-node-02.example.invalid"]),
}


def playbook(inventory, *args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", inventory, "playbooks/monitoring.yml", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def recap(out, host="localhost"):
    line = next(x for x in out.splitlines() if x.startswith(host + " ") and "ok=" in x)
    return dict(part.split("=") for part in line.split(":", 1)[1].split())


def load(path):
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture(name="rendered", scope="module", params=sorted(INVENTORIES))
def fixture_rendered(request, tmp_path_factory):
    inventory, args_file, names = INVENTORIES[request.param]
    out_dir = tmp_path_factory.mktemp("monitoring-" + request.param)
    rc, out = playbook(inventory, "-e", "sglang_monitoring_output_dir=%s" % out_dir)
    assert rc == 0, out
    return request.param, inventory, args_file, names, out_dir, out


def test_files_are_written_and_promtool_accepts_them(rendered):
    _, _, _, _, out_dir, out = rendered
    assert sorted(os.listdir(out_dir)) == ["sglang-fleet-dashboard.json", "sglang-rules.yml", "sglang-scrape.yml"]
    assert "without promtool's check" not in out  # the role validated them itself
    rc, text = run_promtool("check", "config", str(out_dir / "sglang-scrape.yml"))
    assert rc == 0, text
    rc, text = run_promtool("check", "rules", str(out_dir / "sglang-rules.yml"))
    assert rc == 0, text


def test_every_sglang_host_is_scraped_with_sglang_verifys_flag_hash(rendered):
    which, _, args_file, names, out_dir, _ = rendered
    with open(os.path.join(ROOT, "inventories", args_file), encoding="utf-8") as handle:
        args = yaml.safe_load(handle)["sglang_server_args"]
    # production's model-path names the revision model_files puts in place (model.yml beside it)
    model_vars = os.path.join(ROOT, "inventories", os.path.dirname(args_file), "model.yml")
    if os.path.exists(model_vars):
        revision = str(load(model_vars)["model_files_revision"])
        args = {k: v.replace("{{ model_files_revision }}", revision) if isinstance(v, str) else v
                for k, v in args.items()}
    jobs = {j["job_name"]: j for j in load(out_dir / "sglang-scrape.yml")["scrape_configs"]}
    statics = jobs["sglang"]["static_configs"]
    assert [s["labels"]["host"] for s in statics] == names
    assert [s["targets"] for s in statics] == [["%s:%s" % (n, args["port"])] for n in names]
    assert {s["labels"]["flag_hash"] for s in statics} == {model.flag_hash(model.normalize_args(args))}
    assert [s["targets"] for s in jobs["node"]["static_configs"]] == [["%s:9100" % n] for n in names]
    assert "dcgm" not in jobs  # DCGM off
    if which == "local":  # the demo's gateway host (inventories/local/hosts.yml), by name on its network
        assert jobs["smg"]["static_configs"] == [{"targets": ["sglang-gateway:29000"],
                                                  "labels": {"gateway": "sglang-gateway"}}]
    else:
        assert "smg" not in jobs  # no gateway host in the production inventory as shipped


def test_thresholds_follow_each_inventory(rendered):
    name, _, _, _, out_dir, _ = rendered
    by_alert = {}
    for group in load(out_dir / "sglang-rules.yml")["groups"]:
        for rule in group["rules"]:
            by_alert.setdefault(rule["alert"], []).append(rule)
    if name == "production":
        assert by_alert["SGLangDown"][0]["for"] == "20m"  # group_vars/all/monitoring.yml
        assert by_alert["SGLangTTFTP99High"][0]["expr"].endswith("> 1.5")
        assert by_alert["SGLangITLP99High"][0]["expr"].endswith("> 0.013966")  # 1 / 71.6 tok/s
        assert by_alert["SGLangRunningRequestsNearCap"][0]["expr"].endswith(">= 43.2")  # NEXTN: 48
        assert by_alert["SGLangSpecAcceptLengthLow"][0]["expr"].count("< 1.3") == 1
    else:
        assert by_alert["SGLangDown"][0]["for"] == "5m"
        assert by_alert["SGLangTTFTP99High"][0]["expr"].endswith("> 1")
        assert "SGLangRunningRequestsNearCap" not in by_alert  # no cap the role can know
        assert "SGLangSpecAcceptLengthLow" not in by_alert


def test_second_run_changes_nothing(rendered):
    _, inventory, _, _, out_dir, _ = rendered
    rc, out = playbook(inventory, "-e", "sglang_monitoring_output_dir=%s" % out_dir)
    assert rc == 0, out
    assert recap(out)["changed"] == "0", out


def test_a_gateway_host_is_scraped_and_gets_the_smg_rules(tmp_path):
    """A host in the `gateway` group (a second inventory source): job smg on its address and
    sglang_gateway_metrics_port, the smg rule group, and promtool accepts both files."""
    (tmp_path / "gateway.yml").write_text(yaml.safe_dump({"all": {"children": {"gateway": {"hosts": {
        "gw-1.example.invalid": {"ansible_host": "10.3.0.1", "sglang_gateway_metrics_port": 29100}}}}}}))
    out_dir = tmp_path / "out"
    rc, out = playbook("inventories/production", "-i", str(tmp_path / "gateway.yml"),
                       "-e", "sglang_monitoring_output_dir=%s" % out_dir)
    assert rc == 0, out
    jobs = {j["job_name"]: j for j in load(out_dir / "sglang-scrape.yml")["scrape_configs"]}
    assert jobs["smg"]["static_configs"] == [{"targets": ["10.3.0.1:29100"], "labels": {"gateway": "gw-1.example.invalid"}}]
    groups = {g["name"]: g for g in load(out_dir / "sglang-rules.yml")["groups"]}
    assert [r["alert"] for r in groups["smg"]["rules"]] == [
        "SGLangGatewayDown", "SGLangGatewayNoHealthyWorker", "SGLangGatewayWorkerUnhealthy",
        "SGLangGatewayCircuitOpen", "SGLangGatewayErrorRate"]
    for kind, name in (("config", "sglang-scrape.yml"), ("rules", "sglang-rules.yml")):
        rc, text = run_promtool("check", kind, str(out_dir / name))
        assert rc == 0, text


def test_check_mode_writes_nothing(tmp_path):
    target = tmp_path / "never"
    rc, out = playbook("inventories/production", "--check", "--diff", "-e", "sglang_monitoring_output_dir=%s" % target)
    assert rc == 0, out
    assert int(recap(out)["changed"]) >= 4, out
    assert not target.exists()


@pytest.mark.parametrize("path,rule", [("relative/dir", "input-path"), ("/tmp", "input-system-dir")])
def test_an_output_dir_that_cannot_be_the_roles_is_refused(path, rule):
    # by its kind (roles/sglang_monitoring/meta/input_kinds.yml), before anything is written: a
    # relative path, or a system directory whose mode the role would change (/tmp: 1777 -> 0755)
    rc, out = playbook("inventories/local", "-e", "sglang_monitoring_output_dir=%s" % path)
    assert rc != 0
    assert f"localhost: sglang_monitoring_output_dir [{rule}]" in " ".join(out.split()), out


def test_syntax_check_of_the_default_inventory():
    rc, out = playbook("inventories/production", "--syntax-check")
    assert rc == 0, out
