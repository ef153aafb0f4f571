"""The options catalog of the pinned smg (roles/sglang_gateway/files/catalogs/smg-1.13.0.json,
written from smg's own parser by scripts/smg_catalog.py; tests/integration/test_smg_catalog.py
writes it again from the installed smg): every option the role writes is one smg 1.13.0 has, and
sglang_gateway_extra_args may name no other (plugins/module_utils/gateway/inputs.py)."""

import os
import re

import pytest
import yaml

from ansible_collections.sglang.deploy.plugins.module_utils.gateway import inputs as GW
from ansible_collections.sglang.deploy.plugins.module_utils.gateway import options as OPTIONS

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_gateway")
BASE = {"sglang_gateway_service": "smg", "sglang_gateway_venv": "/opt/smg", "sglang_gateway_config_dir": "/etc/smg",
        "sglang_gateway_python": "/usr/bin/python3", "sglang_gateway_user": "smg", "foreign": ["sglang"]}


def pinned():
    with open(os.path.join(ROLE, "defaults", "main.yml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)["sglang_gateway_version"]


def refusals(extra, version=None):
    return GW.sglang_gateway_refusals(dict(BASE, sglang_gateway_extra_args=extra,
                                           sglang_gateway_version=version or pinned()))


def test_the_pinned_version_has_a_catalog_of_smgs_own_options():
    cat = OPTIONS.catalog(pinned())
    assert cat["smg"] == pinned() == "1.13.0"
    assert len(cat["options"]) == 221
    assert cat["options"]["--policy"]["default"] == "cache_aware"
    assert "cache_aware" in cat["options"]["--policy"]["choices"]


def test_every_option_the_role_writes_is_an_option_of_the_pinned_smg():
    with open(os.path.join(ROLE, "templates", "args.json.j2"), encoding="utf-8") as fh:
        written = set(re.findall(r"'(--[a-z0-9-]+)'", fh.read()))
    assert len(written) == 18
    assert sorted(written - set(OPTIONS.catalog(pinned())["options"])) == []


def test_the_local_inventorys_extra_options_are_known():
    with open(os.path.join(ROOT, "inventories", "local", "group_vars", "all", "gateway.yml"), encoding="utf-8") as fh:
        extra = yaml.safe_load(fh)["sglang_gateway_extra_args"]
    assert extra and refusals(extra) == []


def test_an_option_the_pinned_smg_lacks_is_refused_with_the_closest():
    lines = refusals({"health-check-intervall-secs": 5, "disable-retries": True})
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith("sglang_gateway_extra_args['health-check-intervall-secs'] [input-gateway-option] "
                           "is not an option of smg 1.13.0 (closest: --health-check-interval-secs")
    assert "roles/sglang_gateway/files/catalogs/smg-1.13.0.json" in line


def test_a_credential_prefix_is_still_refused_as_a_key_first():
    assert any("[input-key-flag]" in x for x in refusals({"api-k": "K"}))


@pytest.mark.parametrize("version", ["1.12.0", "", None])
def test_a_version_without_a_catalog_is_not_judged_by_name(version):
    assert GW.sglang_gateway_refusals(dict(BASE, sglang_gateway_extra_args={"made-up-option": 1},
                                           sglang_gateway_version=version)) == []
