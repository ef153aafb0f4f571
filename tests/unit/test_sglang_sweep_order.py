"""The sweep's all-reduce axis ordered by the canary's admission
(plugins/module_utils/sweep/order.py): the lowest measured small-message
latency first, never a value skipped, the sweep file's order when nothing was measured; and the
Blackwell sweep file's declaration of which implementation each value runs."""

import os

from ansible_collections.sglang.deploy.plugins.module_utils.sweep import order
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AXES = {"moe-runner-backend": ["a", "b"], "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE": [None, "1"]}
ORDER = {"axis": "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE",
         "values": [{"value": None, "implementation": "nccl"}, {"value": "1", "implementation": "sglang_custom_all_reduce"}]}


def admission(**latency):
    return {"world_size": 8, "allreduce_small_bytes": 32768, "allreduce_small_us": latency}


def test_the_faster_implementation_goes_first_and_nothing_is_skipped():
    out = order.order_axes(AXES, ORDER, admission(nccl=31.0, sglang_custom_all_reduce=12.5))
    assert out["axes"]["SGLANG_ENABLE_PCIE_IPC_ALLREDUCE"] == ["1", None]
    assert out["axes"]["moe-runner-backend"] == ["a", "b"] and AXES["SGLANG_ENABLE_PCIE_IPC_ALLREDUCE"] == [None, "1"]
    assert out["line"] == ("all-reduce order: SGLANG_ENABLE_PCIE_IPC_ALLREDUCE ['1', 'unset'], by the canary's "
                           "admission at 32 KiB (sglang_custom_all_reduce 12.5 us, nccl 31.0 us)")
    out = order.order_axes(AXES, ORDER, admission(nccl=9.0, sglang_custom_all_reduce=12.5))
    assert out["axes"]["SGLANG_ENABLE_PCIE_IPC_ALLREDUCE"] == [None, "1"]


def test_unmeasured_values_keep_their_place_after_the_measured_ones():
    out = order.order_axes(AXES, ORDER, admission(sglang_custom_all_reduce=12.5))
    assert out["axes"]["SGLANG_ENABLE_PCIE_IPC_ALLREDUCE"] == ["1", None]
    assert "not measured, kept last: [None]" in out["line"]


def test_nothing_measured_keeps_the_sweep_files_order_and_says_why():
    one_gpu = {"world_size": 1, "allreduce_small_us": {}}
    out = order.order_axes(AXES, ORDER, one_gpu)
    assert out["axes"] == AXES and "measured no all-reduce (world size 1)" in out["line"]
    assert "never admitted" in order.order_axes(AXES, ORDER, {})["line"]
    assert order.order_axes(AXES, {}, one_gpu) == {"axes": AXES, "line": ""}
    assert "has no axis" in order.order_axes({"x": [1]}, ORDER, one_gpu)["line"]


def test_the_blackwell_sweep_declares_its_all_reduce_axis():
    with open(os.path.join(ROOT, "sweeps", "blackwell-backends.yml"), encoding="utf-8") as handle:
        sweep = yaml.safe_load(handle)
    declared = sweep["sweep_allreduce_order"]
    assert declared["axis"] in sweep["sweep_axes"]
    assert [v["value"] for v in declared["values"]] == sweep["sweep_axes"][declared["axis"]]
    out = order.order_axes(sweep["sweep_axes"], declared, admission(nccl=40.0, sglang_custom_all_reduce=20.0))
    assert sorted(map(str, out["axes"][declared["axis"]])) == sorted(map(str, sweep["sweep_axes"][declared["axis"]]))
