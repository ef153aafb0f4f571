"""Rules of the table about SM120 (RTX PRO 6000 Blackwell) judged the way playbooks/lint.yml judges
a host (input checks and catalog of the declared version, then the rules table; the
``lint`` helper of sglang_flags_rules_support.py), on every SGLang version that has a catalog."""

import pytest
from sglang_flags_rules_support import MINIMAL, lint

VERSIONS = ["0.5.17", "0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"]
ATTENTION_FLAGS = ["attention-backend", "prefill-attention-backend", "decode-attention-backend", "mm-attention-backend"]


def rules_of(found, severity="error"):
    return {f["rule"] for f in found if f["severity"] == severity}


# --- fa3 and fa4 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("flag", ATTENTION_FLAGS)
def test_fa3_is_refused_on_sm120_in_every_cataloged_version(version, flag):
    found = lint(dict(MINIMAL, **{flag: "fa3"}), version=version)
    assert rules_of(found) == {"sm120-attention-fa3"}, found
    f = next(f for f in found if f["rule"] == "sm120-attention-fa3")
    assert f["flag"] == flag and "SM>=80 and SM<=90" in f["message"]
    assert f["source"] == "docs/sglang-versions.md#sm120-attention-fa3"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("flag", ATTENTION_FLAGS)
def test_fa4_is_refused_on_sm120_only_before_0_5_19(version, flag):
    found = lint(dict(MINIMAL, **{flag: "fa4"}), version=version)
    expected = {"sm120-attention-fa4-before-0.5.19"} if version == "0.5.17" else set()
    assert rules_of(found) == expected, found


def test_fa3_and_fa4_pass_off_sm120():
    assert rules_of(lint(dict(MINIMAL, **{"attention-backend": "fa3"}), sm="9.0")) == set()
    assert rules_of(lint(dict(MINIMAL, **{"attention-backend": "fa4"}), version="0.5.17", sm="10.0")) == set()
