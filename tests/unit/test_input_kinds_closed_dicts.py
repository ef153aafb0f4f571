"""A misspelt key of a fixed-shape dict turns a check off silently unless it is refused: every
closed dict of every role's kinds (roles/<role>/meta/input_kinds.yml, found there, not listed here:
an option's own dict, a map's values, a list's items, a dict inside a dict) refuses a key it does not
have, naming the host, the variable (and the part of it), the key and the nearest valid key, through
the check every entry point and the lint run (plugins/module_utils/inputs/catalogue.py)."""

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.sglang.deploy.plugins.module_utils.inputs import catalogue as C

ROOT = Path(__file__).resolve().parents[2]
HOST = "gpu-node-09.example.invalid"


def closed_dicts():
    """(role, option, path, dict spec, key) for every key of every closed dict of every role."""
    found = []
    for path in sorted(ROOT.glob("roles/*/meta/input_kinds.yml")):
        role = path.parent.parent.name
        for option, spec in (yaml.safe_load(path.read_text())["options"] or {}).items():
            for where, dict_spec in C.closed_dicts(option, spec):
                for key in dict_spec["keys"]:
                    found.append((role, option, where, dict_spec, key))
    return found


CASES = closed_dicts()


def misspelt(key, keys):
    """``key`` with one slip (an underscore before its last character, else its last letter twice)
    that is no key of the dict."""
    for slip in (key[:-1] + "_" + key[-1], key + key[-1], "x" + key):
        if slip not in keys:
            return slip
    raise AssertionError(key)


def nest(where, value):
    """The option's value that holds ``value`` at ``where`` (``['h2d_gbps'][0]``: a map's key, a
    list's item)."""
    for part in reversed(re.findall(r"\[([^\]]*)\]", where)):
        value = [value] if part == "0" else {yaml.safe_load(part): value}
    return value


def test_every_fixed_shape_dict_is_found():
    options = {(role, option) for role, option, *_ in CASES}
    # the issue's examples are among them, and none of the roles' dict options hides a closed one
    assert {("sglang_verify", "sglang_verify_quality_tolerance"), ("sglang_verify", "sglang_verify_quality_same"),
            ("sglang_verify", "sglang_verify_quality_load_tolerance"), ("gpu_admit", "gpu_admit_expect"),
            ("sglang_sweep", "sweep_latency_target"), ("sglang_server", "sglang_server_allow_weaker_sandbox")} <= options
    assert len(CASES) >= 40


@pytest.mark.parametrize("role,option,where,spec,key", CASES,
                         ids=[f"{c[1]}{c[2]}.{c[4]}" for c in CASES])
def test_a_misspelt_key_is_refused_with_the_nearest_valid_key(role, option, where, spec, key):
    slip = misspelt(key, spec["keys"])
    kinds = C.load_kinds(role)
    value = nest(where, {slip: 1})
    lines = C.role_lines(HOST, {"options": {option: kinds["options"][option]}}, C.Ctx(HOST, (HOST,), {option: value}))
    expected = (f"{HOST}: {option}{where}[{slip!r}] [input-unknown-key] `{slip}` is not a key of {option}{where}; "
                f"did you mean `{key}`? Fix: write `{key}`")
    assert expected in lines, lines


def test_the_issues_example():
    kinds = C.load_kinds("sglang_verify")
    value = {"mean_abs_dlogprob": 0.02, "max_abs_dlogprob": 0.15, "min_top_1": 0.97}
    lines = C.role_lines(HOST, {"options": {"sglang_verify_quality_tolerance": kinds["options"][
        "sglang_verify_quality_tolerance"]}}, C.Ctx(HOST, (HOST,), {"sglang_verify_quality_tolerance": value}))
    assert lines == [f"{HOST}: sglang_verify_quality_tolerance['min_top_1'] [input-unknown-key] `min_top_1` is not a "
                     "key of sglang_verify_quality_tolerance; did you mean `min_top1`? Fix: write `min_top1`"]


def test_a_key_far_from_every_valid_one_lists_them():
    kinds = C.load_kinds("sglang_sweep")
    lines = C.role_lines(HOST, {"options": {"sweep_latency_target": kinds["options"]["sweep_latency_target"]}},
                         C.Ctx(HOST, (HOST,), {"sweep_latency_target": {"zzz": 1}}))
    assert lines and "its keys are `ttft_p99_ms`, `itl_median_ms`" in lines[0]
