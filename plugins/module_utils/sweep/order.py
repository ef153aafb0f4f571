# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter of the sglang_sweep role: the all-reduce axis of a sweep ordered by the canary's
admission (roles/gpu_admit), so that the implementation that measured the lowest small-message
all-reduce latency on this host starts first. Order only: every value stays, the values of an
implementation the admission did not measure keep their order after the measured ones, and the
candidates' keys (their content) do not change, so a resumed sweep finds what it finished.

sglang_sweep_order_axes(axes, order, admission) -> {"axes": ..., "line": ...}, where `order` is
the sweep file's sweep_allreduce_order ({axis, values: [{value, implementation}]}) and
`admission` the admission's summary (allreduce_small_us: {implementation: us},
allreduce_small_bytes). Pure function (tests/unit/test_sglang_sweep_order.py).
"""


def _same(a, b):
    """Axis values compared as the environment gets them (None = unset, else a string)."""
    return (a is None and b is None) or (a is not None and b is not None and str(a) == str(b))


def order_axes(axes, order=None, admission=None):
    axes = dict(axes or {})
    order = order or {}
    axis = order.get("axis")
    if not axis:
        return {"axes": axes, "line": ""}
    if axis not in axes:
        return {"axes": axes, "line": "all-reduce order: the sweep has no axis %s; nothing ordered" % axis}
    latency = (admission or {}).get("allreduce_small_us") or {}
    values = list(axes[axis])
    measured, rest = [], []
    for position, value in enumerate(values):
        impl = next((v.get("implementation") for v in order.get("values") or [] if _same(v.get("value"), value)), None)
        if impl in latency and latency[impl] is not None:
            measured.append((float(latency[impl]), position, value, impl))
        else:
            rest.append(value)
    measured.sort()
    axes[axis] = [m[2] for m in measured] + rest
    if not measured:
        why = ("the canary was never admitted" if not admission else
               "its admission measured no all-reduce (world size %s)" % admission.get("world_size"))
        return {"axes": axes, "line": "all-reduce order: %s as the sweep file gives it; %s" % (axis, why)}
    size = (admission.get("allreduce_small_bytes") or 0) // 1024
    return {"axes": axes, "line": "all-reduce order: %s %s, by the canary's admission at %d KiB (%s)%s" % (
        axis, [("unset" if m[2] is None else m[2]) for m in measured] + [("unset" if r is None else r) for r in rest],
        size, ", ".join("%s %s us" % (m[3], m[0]) for m in measured),
        "; not measured, kept last: %s" % rest if rest else "")}
