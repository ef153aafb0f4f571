"""The on-host GPU-count rule (host-tp-exceeds-gpu-count, roles/sglang_flags/files/sglang_preflight.py)
counts like the offline rule tp-exceeds-gpu-count: both with plugins/module_utils/flags/parallel_layout.py.
The script runs here without SGLang: a parsed ServerArgs is stood in for by its attributes."""

import os
from types import SimpleNamespace

import pytest
from ansible_collections.sglang.deploy.plugins.module_utils.flags import report
from ansible_collections.sglang.deploy.plugins.module_utils.flags import rules as F
from ansible_collections.sglang.deploy.plugins.module_utils.flags import parallel_layout as layout
from sglang_flags_rules_support import MINIMAL, ROLE, ROOT, RULES, by_rule, check

LAYOUT_FILE = os.path.join(ROOT, "plugins", "module_utils", "flags", "parallel_layout.py")
with open(LAYOUT_FILE, encoding="utf-8") as _fh:
    LAYOUT_SOURCE = _fh.read()

PREFLIGHT_FILE = os.path.join(ROLE, "files", "sglang_preflight.py")
with open(PREFLIGHT_FILE, encoding="utf-8") as _fh:
    PREFLIGHT_SOURCE = _fh.read()


def load_preflight(by_hand=False):
    """The script's functions, run as host_validate.yml runs it (its text exec'd, no __file__),
    or as run by hand from the repository (``by_hand``: with its path)."""
    namespace = {"__name__": "sglang_preflight"}
    if by_hand:
        namespace["__file__"] = PREFLIGHT_FILE
    exec(compile(PREFLIGHT_SOURCE, "sglang_preflight.py", "exec"), namespace)  # noqa: S102
    return SimpleNamespace(**namespace)


preflight = load_preflight()


def server_args(tp=1, pp=1, dp=1, nnodes=1, attn_dp=None, dp_attention=False):
    """The attributes SGLang 0.5.23's ServerArgs holds after parsing (argparse dests)."""
    return SimpleNamespace(tp_size=tp, pp_size=pp, dp_size=dp, nnodes=nnodes, attn_dp_size=attn_dp,
                           enable_dp_attention=dp_attention, device=None)


def host_check(sa, gpu_count=8, with_source=True):
    request = {"rules": F.sglang_flags_host_rules(RULES)["rules"]}
    if with_source:
        request["layout_source"] = LAYOUT_SOURCE
    verdict = preflight.Verdict(request)
    preflight.check_gpu_count(verdict, sa, request, gpu_count)
    return verdict.out


def test_dp2_tp4_fits_8_gpus():
    out = host_check(server_args(tp=4, dp=2))
    assert out["ok"] and out["errors"] == []


def test_dp2_tp8_is_refused_naming_host_flags_figure_and_fix():
    out = host_check(server_args(tp=8, dp=2))
    assert not out["ok"]
    (error,) = out["errors"]
    assert error["rule"] == "host-tp-exceeds-gpu-count" and error["flag"] == "tp-size"
    line = report.sglang_flags_format(out["errors"], "gpu-a")[0]
    assert line.startswith("gpu-a: --tp-size [host-tp-exceeds-gpu-count]")
    assert "needs tp-size 8 x pp-size 1 x dp-size 2 = 16 GPUs on this host" in line
    assert "but 8 are visible" in line
    assert "Fix: make tp x pp x dp at most 8 (e.g. tp-size 4 with dp-size 2 on 8 GPUs)" in line
    assert "{" not in line


def test_dp_attention_adds_no_gpus_on_the_host_either():
    # --dp-size 8 --enable-dp-attention: attention DP 8 inside tp 8 (handle_deprecated_dp_attention)
    assert host_check(server_args(tp=8, dp=8, dp_attention=True))["ok"]
    assert host_check(server_args(tp=8, attn_dp=4))["ok"]


def test_unknown_gpu_count_is_not_judged():
    assert host_check(server_args(tp=8, dp=2), gpu_count=None)["ok"]


def test_without_the_layout_source_the_check_says_so():
    out = host_check(server_args(tp=8, dp=2), with_source=False)
    assert [e["rule"] for e in out["errors"]] == ["preflight"]
    assert "layout_source" in out["errors"][0]["message"]
    # run by hand from the repository, the script reads the file itself
    by_hand = load_preflight(by_hand=True)
    verdict = by_hand.Verdict({"rules": {}})
    by_hand.check_gpu_count(verdict, server_args(tp=8, dp=2), {"rules": {}}, 8)
    assert [e["rule"] for e in verdict.out["errors"]] == ["host-tp-exceeds-gpu-count"]


@pytest.mark.parametrize("tp,pp,dp,nnodes,attn_dp,dp_attention,refused", [
    (8, 1, 1, 1, None, False, False), (4, 1, 2, 1, None, False, False), (8, 1, 2, 1, None, False, True),
    (4, 1, 4, 1, None, False, True), (2, 1, 4, 1, None, False, False), (4, 2, 1, 1, None, False, False),
    (4, 2, 2, 1, None, False, True), (8, 2, 1, 2, None, False, False), (8, 1, 8, 1, None, True, False),
    (8, 1, 1, 1, 2, False, False), (16, 1, 1, 1, None, False, True), (1, 1, 8, 1, None, False, False),
    (1, 1, 9, 1, None, False, True)])
def test_host_and_offline_rules_agree(tp, pp, dp, nnodes, attn_dp, dp_attention, refused):
    """On 8 GPUs: dp x tp x pp / nnodes, attention DP inside tp."""
    sa = server_args(tp=tp, pp=pp, dp=dp, nnodes=nnodes, attn_dp=attn_dp, dp_attention=dp_attention)
    flags = layout.flags_from_server_args(sa)
    host_refuses = not host_check(sa)["ok"]
    offline_refuses = "tp-exceeds-gpu-count" in by_rule(check(dict(MINIMAL, **flags)))
    assert host_refuses == offline_refuses == refused


def test_flags_from_server_args_leaves_out_what_is_unset():
    assert layout.flags_from_server_args(server_args(tp=4, dp=2)) == {
        "tp-size": 4, "pp-size": 1, "dp-size": 2, "nnodes": 1}
    assert layout.flags_from_server_args(SimpleNamespace(tp_size=8)) == {"tp-size": 8}
