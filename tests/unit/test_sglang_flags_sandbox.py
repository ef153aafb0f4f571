"""Sandbox weakenings are lint errors unless named deliberately
(plugins/module_utils/flags/sandbox.py): each setting that loosens the
hardened unit of roles/sglang_server is an error naming the setting and the fix; named with a
reason in sglang_server_allow_weaker_sandbox it is a warning with that reason, and it is in
sglang_flags_sandbox_weakenings (the verification report's list). A world-writable umask is
refused whatever the override says."""

from pathlib import Path

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.flags import report as REPORT
from ansible_collections.sglang.deploy.plugins.module_utils.flags import sandbox as S
import yaml

ROOT = Path(__file__).resolve().parents[2]

HOST = "gpu-node-01.example.invalid"
OVERRIDE = "sglang_server_allow_weaker_sandbox"
with open(f"{ROOT}/roles/sglang_server/defaults/main.yml", encoding="utf-8") as _fh:
    DEFAULTS = {k: v for k, v in yaml.safe_load(_fh).items() if k in S.SETTINGS}

WEAK = [
    ("sglang_server_hardening", False),
    ("sglang_server_read_write_paths", ["/"]),
    ("sglang_server_read_write_paths", ["-/etc/systemd/system"]),
    ("sglang_server_read_write_paths", ["/usr/local/lib/python3"]),
    ("sglang_server_read_write_paths", ["/root"]),
    ("sglang_server_read_write_paths", ["/var/lib"]),
    ("sglang_server_device_allow", ["char-nvidia-frontend rw", "block-sd rw"]),
    ("sglang_server_device_allow", ["char-nvidia-uvm rwm"]),
    ("sglang_server_device_allow", ["char-nvidia-uvm"]),  # no mode: rwm
    ("sglang_server_device_allow", ["/dev/mem r"]),
    ("sglang_server_device_allow", ["char-* rw"]),
    ("sglang_server_capabilities", ["CAP_IPC_LOCK"]),
    ("sglang_server_umask", "0022"),
    ("sglang_server_umask", "0007"),
]


def report(sandbox, allow=None):
    return REPORT.sglang_flags_report({HOST: S.sglang_flags_sandbox_findings(sandbox, allow)})


def test_the_roles_defaults_weaken_nothing():
    assert set(DEFAULTS) == set(S.SETTINGS)
    assert S.weakenings(DEFAULTS) == [] and report(DEFAULTS) == {"errors": [], "warnings": []}
    unset = dict.fromkeys(S.SETTINGS)  # lint: the host sets none of them
    assert report(unset) == {"errors": [], "warnings": []}


@pytest.mark.parametrize("setting,value", WEAK)
def test_a_weakening_is_an_error_naming_the_setting_and_the_fix(setting, value):
    out = report(dict(DEFAULTS, **{setting: value}))
    assert out["warnings"] == []
    line = next(x for x in out["errors"] if x.startswith(f"{HOST}: {setting} [sandbox-weakened]"))
    assert "weakens the unit's sandbox" in line
    assert f"Fix: keep the role's default, or name it with the reason in {OVERRIDE}" in line


@pytest.mark.parametrize("setting,value", WEAK)
def test_a_weakening_named_with_its_reason_is_a_warning_and_reported(setting, value):
    reason = "measured on these hosts: NCCL needs it"
    sandbox = dict(DEFAULTS, **{setting: value})
    out = report(sandbox, {setting: reason})
    assert out["errors"] == []
    assert out["warnings"] and all(f"accepted in {OVERRIDE}: {reason}" in w for w in out["warnings"])
    active = S.sglang_flags_sandbox_active(sandbox, {setting: reason})
    assert active and {a["setting"] for a in active} == {setting} and all(a["reason"] == reason for a in active)
    assert S.sglang_flags_sandbox_active(sandbox, {}) == []  # not named: not active, a lint error


@pytest.mark.parametrize("device", ["char-nvidia-frontend rw", "char-nvidia-uvm r", "/dev/nvidia0 rw",
                                    "/dev/nvidia-caps/nvidia-cap1 r"])
def test_nvidia_character_devices_read_write_are_no_weakening(device):
    assert S.weakenings({"sglang_server_device_allow": [device]}) == []


@pytest.mark.parametrize("path", ["/data/models", "-/var/lib/sglang-extra", "/var/cache/sglang", "/srv/sglang"])
def test_read_write_paths_of_the_deploys_own_are_no_weakening(path):
    assert S.weakenings({"sglang_server_read_write_paths": [path]}) == []


@pytest.mark.parametrize("umask", ["0000", "0020", "0775", "000"])
def test_a_world_writable_umask_is_refused_even_when_named(umask):
    out = report({"sglang_server_umask": umask}, {"sglang_server_umask": "we want it"})
    assert any(x.startswith(f"{HOST}: sglang_server_umask [sandbox-umask-world-writable]") for x in out["errors"])


@pytest.mark.parametrize("allow,problem", [
    ({"sglang_server_hardnening": "typo"}, "is not a sandbox setting"),
    ({"sglang_server_capabilities": ""}, "has no reason"),
    ({"sglang_server_capabilities": None}, "has no reason"),
    (["sglang_server_capabilities"], "is not a mapping of setting -> reason"),
])
def test_a_malformed_override_is_refused(allow, problem):
    out = report(dict(DEFAULTS, sglang_server_capabilities=["CAP_SYS_PTRACE"]), allow)
    assert any(x.startswith(f"{HOST}: {OVERRIDE} [sandbox-weakened]") and problem in x for x in out["errors"]), out
    # the weakening itself stays an error
    assert any(x.startswith(f"{HOST}: sglang_server_capabilities [sandbox-weakened]") for x in out["errors"])
