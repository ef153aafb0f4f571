"""The gateway's inputs (roles/sglang_gateway/meta/input_kinds.yml through the catalogue of kinds, which
every entry point of the role runs first; plugins/module_utils/gateway/inputs.py for smg's options) and its launcher's key refusal
(roles/sglang_gateway/files/smg_launcher.py): the issue's inputs and the classes they stand for."""

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.gateway import inputs as GW
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as GUARD

DEFAULTS = {"sglang_gateway_service": "smg", "sglang_gateway_venv": "/opt/smg", "sglang_gateway_config_dir": "/etc/smg",
            "sglang_gateway_python": "/usr/bin/python3", "sglang_gateway_user": "smg",
            "sglang_gateway_extra_args": {}, "foreign": ["sglang", "sglang-firewall"]}


def refusals(**changed):
    return GW.sglang_gateway_refusals(dict(DEFAULTS, **changed))


def test_the_defaults_and_the_local_inventorys_options_pass():
    assert refusals() == []
    assert refusals(sglang_gateway_extra_args={"disable-retries": True,
                                               "mm-allowed-media-domains": ["a.example", "b.example"],
                                               "cache-threshold": 0.5, "balance-abs-threshold": -1}) == []


@pytest.mark.parametrize("name", ["ssh", "sshd", "systemd-x", "--help", "../../../tmp/x", "sglang", "sglang-firewall",
                                  "smg\nExecStartPre=/tmp/x", "a/b"])
def test_a_unit_name_not_of_its_own_is_refused(name):
    assert any(x.startswith(("sglang_gateway_service [input-unit-name]", "sglang_gateway_service [input-unit-reserved]",
                             "sglang_gateway_service [input-control-char]")) for x in refusals(sglang_gateway_service=name))


@pytest.mark.parametrize("variable", ["sglang_gateway_venv", "sglang_gateway_config_dir", "sglang_gateway_python"])
@pytest.mark.parametrize("bad", ["/opt/smg\nExecStartPre=/tmp/x", "/opt/smg\u2028x", "/opt/smg\u0085x", "opt/smg",
                                 "/opt/../etc"])
def test_a_path_with_a_control_character_or_traversal_is_refused(variable, bad):
    assert any(x.startswith((f"{variable} [input-path]", f"{variable} [input-control-char]"))
               for x in refusals(**{variable: bad}))


@pytest.mark.parametrize("path", ["/tmp", "/etc", "/", "/usr/local/bin", "/var/lib"])
def test_a_system_directory_as_config_dir_is_refused(path):
    assert any(x.startswith(("sglang_gateway_config_dir [input-system-dir]", "sglang_gateway_config_dir [input-user-tree]"))
               for x in refusals(sglang_gateway_config_dir=path))


@pytest.mark.parametrize("user", ["root", "0", "smg\nExecStartPre=/tmp/x", "smg\u2029", "a b"])
def test_root_or_a_broken_user_is_refused(user):
    assert any(x.startswith(("sglang_gateway_user [input-user]", "sglang_gateway_user [input-control-char]"))
               for x in refusals(sglang_gateway_user=user))


@pytest.mark.parametrize("args", [{"api-key": "K"}, {"api-k": "K"}, {"control-plane-api-keys": ["admin:x:admin:K"]},
                                  {"control-plane-api": ["admin:x:admin:K"]}, {"tenant-api": "t:K"},
                                  {"jwt-role-mapping": ["x=admin"]}, {"jwt-role": ["x=admin"]},
                                  {"jwt-issuer": "https://evil"}, {"--api-key": "K"}, {"oracle-pass": "p"}])
def test_a_credential_option_by_any_prefix_is_refused(args):
    lines = refusals(sglang_gateway_extra_args=args)
    assert any("[input-key-flag]" in x for x in lines)
    assert all("'K'" not in x and "admin:K" not in x for x in lines)  # the value is never quoted


@pytest.mark.parametrize("args", [{"mm-allowed-media-domains": ["a.example", "--api-key", "K"]},
                                  {"mm-allowed-media-domains": ["a.example", "--control-plane-api-keys=admin:x:admin:K"]},
                                  {"model-id-from": "--tenant-api-key"}])
def test_a_credential_option_inside_a_value_is_refused(args):
    assert any("[input-dash-value]" in x for x in refusals(sglang_gateway_extra_args=args))


def test_a_control_character_in_an_option_is_refused():
    assert any("[input-control-char]" in x for x in refusals(sglang_gateway_extra_args={"log-dir": "/x\n/y"}))


def test_the_launcher_and_the_guard_name_the_same_options(smg_launcher):
    assert smg_launcher.KEY_OPTIONS == GUARD.SMG_KEY_OPTIONS


@pytest.mark.parametrize("item", ["--api-key", "--api-k", "--api", "--control-plane-api", "--tenant-api-key=t:K",
                                  "--jwt-role", "--oracle-pass"])
def test_the_launcher_refuses_a_key_option_by_any_prefix(smg_launcher, item):
    with pytest.raises(SystemExit, match="keys belong in the credential file"):
        smg_launcher.build_argv(["--port", "1", item, "K"], {})


def test_the_launcher_refuses_what_smgs_parser_made_a_key(smg_launcher):
    class Parsed:  # what parse_router_args returns for the options alone (RouterArgs fields)
        api_key, control_plane_api_keys, jwt_role_mapping = None, [], {"x": "admin"}
    with pytest.raises(SystemExit, match="jwt_role_mapping"):
        smg_launcher.check_parsed(Parsed())
    Parsed.jwt_role_mapping = {}
    smg_launcher.check_parsed(Parsed())
