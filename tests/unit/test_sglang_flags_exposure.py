"""A server reachable beyond loopback needs an API key
(plugins/module_utils/flags/exposure.py): without sglang_server_api_key a
bind other than loopback is a lint error naming the variable and the fix, a warning naming the
risk when sglang_server_allow_no_api_key gives the reason, and nothing for loopback."""

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.flags import exposure as X
from ansible_collections.sglang.deploy.plugins.module_utils.flags import report as REPORT

HOST = "gpu-node-01.example.invalid"


def report(flags, key_set=False, allow="", lengths=None):
    lengths = lengths or {"sglang_server_api_key": 64 if key_set else 0}
    return REPORT.sglang_flags_report({HOST: X.sglang_flags_key_findings(flags, lengths, allow)})


@pytest.mark.parametrize("host", [None, "127.0.0.1", "127.1", "127.0.0.53", "localhost", "LOCALHOST", "::1",
                                  "[::1]", "::ffff:127.0.0.1", "0x7f.1"])
def test_loopback_needs_no_key(host):
    flags = {} if host is None else {"host": host}
    assert X.loopback(host) and report(flags) == {"errors": [], "warnings": []}


@pytest.mark.parametrize("host", ["0.0.0.0", "0", "::", "", "*", "10.0.0.5", "gpu-node-01", "128.0.0.1"])
def test_beyond_loopback_without_a_key_is_an_error_naming_the_variable_and_the_fix(host):
    out = report({"host": host})
    assert out["warnings"] == [] and len(out["errors"]) == 1
    line = out["errors"][0]
    assert line.startswith(f"{HOST}: --host [exposed-without-key] {host!r} (sglang_server_args) binds beyond "
                           "loopback and sglang_server_api_key is empty")
    assert "Fix: set sglang_server_api_key, vault-encrypted" in line
    assert "sglang_server_allow_no_api_key" in line


def test_a_key_is_enough():
    assert report({"host": "0.0.0.0"}, key_set=True) == {"errors": [], "warnings": []}


def test_the_reason_turns_it_into_a_warning_naming_the_risk():
    out = report({"host": "0.0.0.0"}, allow="a lab network nobody else reaches")
    assert out["errors"] == []
    assert "whoever reaches the port uses the model without a key" in out["warnings"][0]
    assert "accepted in sglang_server_allow_no_api_key: a lab network nobody else reaches" in out["warnings"][0]


@pytest.mark.parametrize("allow", [True, "   "])
def test_the_opt_out_must_be_a_reason(allow):
    out = report({"host": "0.0.0.0"}, allow=allow)
    assert len(out["errors"]) == 1
    if allow is True:
        assert "must say why as text, not True" in out["errors"][0]


@pytest.mark.parametrize("name", X.KEY_VARIABLES)
@pytest.mark.parametrize("length", [1, 3, 15])
def test_a_short_key_is_refused_naming_the_variable(name, length):
    out = report({"host": "127.0.0.1"}, lengths={name: length})
    assert len(out["errors"]) == 1
    line = out["errors"][0]
    assert line.startswith(f"{HOST}: {name} [input-key-short] {name} has {length} characters")
    assert "Fix: at least 16 characters" in line


def test_keys_of_16_characters_and_more_pass():
    assert report({"host": "0.0.0.0"}, lengths={"sglang_server_api_key": 16, "sglang_server_admin_api_key": 64}) == \
        {"errors": [], "warnings": []}
