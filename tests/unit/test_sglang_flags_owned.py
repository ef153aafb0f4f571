"""What the deploy owns, judged offline (plugins/module_utils/flags/owned.py,
through sglang_flags_inputs.unit_input_findings): no unit name of the system's, no system
directory as a working, configuration or model directory (after normalising the path), a model
revision that names one directory. Each comes out as an error line of the lint report naming the
host, the variable, the rule and the fix."""

import re

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as I
from ansible_collections.sglang.deploy.plugins.module_utils.flags import owned as O
from ansible_collections.sglang.deploy.plugins.module_utils.flags import report as REPORT

HOST = "gpu-node-02.example.invalid"


def errors(unit):
    findings = I.sglang_flags_inputs({}, unit=unit, catalog={"options": {"--x": {}}})
    return REPORT.sglang_flags_report({HOST: findings})["errors"]


def refused(lines, variable, rule, fix):
    """The error line naming the host, the variable (and the part of it), one of the rules and the fix."""
    head = f"{HOST}: {variable} [{rule}]"
    rules = "|".join(re.escape(r) for r in ((rule,) if isinstance(rule, str) else rule))
    part = re.compile(re.escape(f"{HOST}: {variable}") + r"(\[[^\]]*\])* \[(%s)\]" % rules)
    line = next((x for x in lines if part.match(x)), None)
    assert line is not None, (head, lines)
    assert f"Fix: {fix}" in line, line
    return line


# --- the unit's name ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ssh", "sshd", "systemd-journald", "dbus", "cron", "networking", "docker",
                                  "containerd", "getty@tty1", "serial-getty@ttyS0", "nvidia-persistenced",
                                  "prometheus-node-exporter", "sshd.service"])
def test_a_unit_name_of_the_system_is_refused(name):
    line = refused(errors({"sglang_server_service_name": name}), "sglang_server_service_name",
                   "input-unit-reserved", "give a name of the deploy's own, e.g. sglang")
    assert f"/etc/systemd/system/{name.removesuffix('.service')}.service would replace it" in line


@pytest.mark.parametrize("name", ["sglang", "sglang-qwen", "llm-server", "proxy-for-sglang", "sglang@1"])
def test_the_deploys_own_unit_names_pass(name):
    assert errors({"sglang_server_service_name": name}) == []


def test_the_firewall_unit_name_goes_through_the_same_check():
    from ansible_collections.sglang.deploy.plugins.module_utils.firewall import sources as sglang_firewall
    found = sglang_firewall.sglang_firewall_findings({}, unit={"sglang_firewall_service_name": "nftables"})
    assert any("[input-unit-reserved]" in f["msg"] for f in found), found


# --- directories --------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/", "//", "/usr", "/usr/bin/", "/usr//bin", "/usr/./bin", "/bin", "/sbin",
                                  "/etc", "/etc/", "/boot", "/dev", "/proc", "/sys", "/lib", "/lib64", "/var",
                                  "/var/lib", "/var/lib/", "/root", "/home", "/tmp", "/etc/systemd/system",
                                  "/var/lib/sglang/.."])
@pytest.mark.parametrize("variable", ["sglang_server_workdir", "sglang_server_config_dir", "model_files_root",
                                      "model_files_shared_root"])
def test_a_system_directory_is_refused_after_normalising(variable, path):
    lines = errors({variable: path})
    if ".." in path:  # refused as a path first, whatever it resolves to
        refused(lines, variable, "input-path", "give an absolute path without '..'")
        return
    line = refused(lines, variable, "input-system-dir", "give a directory of the deploy's own below it")
    assert f"is the system directory {O.normalise(path)}" in line


@pytest.mark.parametrize("variable", ["sglang_server_workdir", "sglang_server_config_dir", "model_files_root"])
def test_a_relative_directory_is_refused(variable):
    refused(errors({variable: "var/lib/sglang"}), variable, "input-path", "give an absolute path")


@pytest.mark.parametrize("path", ["/tmp/x", "/home/ml/models", "/var/tmp/sglang", "/dev/shm/x"])
def test_a_directory_in_another_users_tree_is_refused(path):
    # the role would chmod or chown a directory another user owns, and write as root where a
    # symlink of theirs would take the write elsewhere (docs/security.md, "Input kinds")
    for name in ("sglang_server_config_dir", "model_files_root", "sglang_server_workdir"):
        refused(errors({name: path}), name, ("input-user-tree", "input-system-dir"), "give a ")


@pytest.mark.parametrize("path", ["/var/lib/sglang", "/etc/sglang", "/data/models", "/srv/models/"])
def test_directories_of_the_deploys_own_pass(path):
    assert errors({"sglang_server_config_dir": path, "model_files_root": path}) == []
    if not path.startswith("/etc/"):
        assert errors({"sglang_server_workdir": path}) == []


@pytest.mark.parametrize("path", ["/etc/sglang", "/var/spool/cron/crontabs", "/run/systemd/system",
                                  "/var/lib/systemd", "/usr/local/lib/x", "/boot/efi"])
def test_a_working_directory_in_a_system_tree_is_refused(path):
    # the hardened unit makes its working directory writable (ReadWritePaths=): /etc/sglang would
    # let the server rewrite its own environment file, the others the host's units, timers or cron
    refused(errors({"sglang_server_workdir": path}), "sglang_server_workdir", "input-system-dir",
            "give a directory of the deploy's own")


def test_an_unset_model_directory_is_not_judged():
    assert errors({"model_files_shared_root": "", "model_files_revision": ""}) == []


def test_normalise():
    assert O.normalise("/usr//bin/") == "/usr/bin"
    assert O.normalise("///etc/./x/..") == "/etc"
    assert O.normalise("etc") is None
    assert O.protected("/etc/systemd/system/x") == "/etc" and O.protected("/var/lib/sglang") == ""
    assert O.protected("-/usr/local") == ""  # the '-' prefix is stripped by the caller


# --- the model revision -------------------------------------------------------------------------

@pytest.mark.parametrize("revision", ["../../../etc", "..", "a/../b", "refs/pr/1", "/abs", "main/", ".hidden",
                                      "-rf", "v1..2", "a b", "rev\n", "x" * 129])
def test_a_revision_that_is_not_one_directory_name_is_refused(revision):
    lines = errors({"model_files_revision": revision})
    if "\n" in revision:
        refused(lines, "model_files_revision", "input-control-char", "remove it")
        return
    line = refused(lines, "model_files_revision", "input-revision", "give the commit sha (40 hex digits)")
    assert "no '/', no '..'" in line


@pytest.mark.parametrize("revision", ["07b8e238cb5bf276c0b7357f208b5404d6d6b13b", "main", "v1.0", "release_2-3"])
def test_commit_shas_and_plain_branch_or_tag_names_pass(revision):
    assert errors({"model_files_revision": revision}) == []
