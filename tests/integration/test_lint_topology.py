"""playbooks/lint.yml refuses a parallel layout that cannot run, before any host is touched: a
copy of the production inventory where one host asks for tp-size 2 x dp-size 4 (8 GPUs, but two
96 GB GPUs cannot hold the 230 GB checkpoint). The refusal names the host, the flags, the figure
and the fix (docs/blackwell-profile.md, Topology); the other rules are unit-tested in
tests/unit/test_sglang_flags_rules_topology.py."""

import re

import pytest
import yaml
from test_lint_playbook import flat, production_copy, run_lint

SMALL = "gpu-node-02.example.invalid"


@pytest.fixture
def topology_inventory(tmp_path):
    copy, profile = production_copy(tmp_path)
    args = dict(profile["sglang_server_args"], **{"tp-size": 2, "dp-size": 4})
    (copy / "host_vars").mkdir(exist_ok=True)
    (copy / "host_vars" / f"{SMALL}.yml").write_text(
        yaml.safe_dump({"sglang_server_args": args}, sort_keys=False), encoding="utf-8")
    return copy


def _refused(inventory, head):
    """The lint's output, its failure message and the one line that starts with ``head``."""
    rc, out = run_lint("-i", str(inventory))
    failure = flat(out).split("FAILED! =>", 1)[-1].split("PLAY RECAP", 1)[0]
    assert rc != 0 and head in failure, failure[:3000]
    return out, failure, re.split(r" - '?gpu-node-0\d", failure[failure.index(head):])[0]


def test_a_group_too_small_for_the_model_is_refused_naming_host_flags_figure_and_fix(topology_inventory):
    out, failure, line = _refused(topology_inventory, f"{SMALL}: --tp-size [group-too-small-for-model]")
    for part in ("tp-size 2 x pp-size 1 = 2 GPUs cannot hold the model", "214.2 GiB of weights",
                 "107.1 GiB a GPU", "97887 MiB", "0.895", "Fix: shard the weights over at least 4 GPUs",
                 "docs/blackwell-profile.md#topology"):
        assert part in line, (part, line)
    # 2 x 4 = 8 GPUs: the count fits; the good host is not blamed
    assert f"{SMALL}: --tp-size [tp-exceeds-gpu-count]" not in failure
    assert "gpu-node-01.example.invalid: " not in failure
    assert "unreachable=1" not in out and "changed=1" not in out
