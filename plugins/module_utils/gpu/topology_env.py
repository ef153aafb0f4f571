# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether one host's SGLang server gets its GPUs in the grouped order, and what it says.

The server's environment (sglang_flags_server_env, roles/sglang_flags/defaults/main.yml) gains
``CUDA_VISIBLE_DEVICES`` in the order gpu/topology_groups.py chooses when all of these hold:
the flags run data-parallel replicas (dp-size > 1) or leave GPUs over (tp x pp below the
host's GPU count); gpu_host gathered the GPUs and their topology; the flags fit the host
(the rule tp-exceeds-gpu-count refuses them otherwise); one node (no --nnodes); and the
inventory does not set CUDA_VISIBLE_DEVICES itself (sglang_server_env wins: it is kept and
the grouping is only reported). The layout is counted by flags/parallel_layout.py, the flags
read through the flag model (flags/model.py). Plain functions; the filters gpu_topology_env and
gpu_topology_candidate_env (plugins/filter/filters.py) are the two at the end, which check their
input and call ``gpu_order`` and ``candidate_env``.
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.module_utils.gpu.topology_groups import (
    GroupingError, plan_groups_from_facts)
from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import (
    FlagModelError, normalize_args)
from ansible_collections.sglang.deploy.plugins.module_utils.flags.parallel_layout import (
    LayoutError, gpus_needed, layout)

VAR = "CUDA_VISIBLE_DEVICES"


def _result(why, plan=None, env=None, lines=None, warnings=None):
    return {"applies": bool(env), "why": why, "env": env or {}, "plan": plan,
            "lines": lines or [], "warnings": warnings or []}


def _lines(plan):
    lines = ["DP rank %d: GPUs %s: %s" % (r["dp_rank"], ",".join(str(g) for g in r["gpus"]), r["reason"])
             for r in plan["replicas"]]
    if plan["unused"]:
        lines.append("GPUs %s are not used by this layout" % ",".join(str(g) for g in plan["unused"]))
    return lines


def gpu_order(facts, flags, env=None):
    """The grouping of one host: {applies, why, env ({} or {CUDA_VISIBLE_DEVICES: ...}), plan
    (gpu_topology_groups.plan_groups' dict or None), lines (which GPUs each DP rank got and why),
    warnings (no grouping keeps each group under one socket)}.

    facts: gpu_host_facts (gpus[].index, interconnect.matrix and numa_affinity); flags: the
    launch flags as the inventory writes them; env: sglang_server_env (the inventory's).
    """
    facts = facts if isinstance(facts, dict) else {}
    count = len(facts.get("gpus") or [])
    if not count:
        return _result("no GPUs in gpu_host_facts (not gathered here, or a host without GPUs)")
    try:
        args = normalize_args(flags or {})
        lay = layout(args)
    except (FlagModelError, LayoutError) as exc:
        return _result("the flags cannot be read (the lint names why): %s" % exc)
    tp, pp, dp = lay["tp"], lay["pp"], lay["dp"]
    if lay["nnodes"] > 1:
        return _result("--nnodes %d: one server over several hosts is not grouped" % lay["nnodes"])
    if dp == 1 and tp * pp >= count:
        return _result("one replica over all %d GPUs: the order does not choose its all-reduce" % count)
    need = gpus_needed(args)  # the count's one owner, as tp-exceeds-gpu-count counts
    if need > count:
        return _result("dp x tp x pp = %d GPUs on a host of %d: refused by tp-exceeds-gpu-count" % (need, count))
    if count > 1 and not (facts.get("interconnect") or {}).get("matrix"):
        return _result("gpu_host_facts hold no topology (interconnect.matrix): GPUs kept in index order")
    try:
        plan = plan_groups_from_facts(facts, tp, pp, dp)
    except GroupingError as exc:
        return _result("no grouping: %s" % exc)
    lines = _lines(plan)
    warnings = [plan["cross_socket"]] if plan["cross_socket"] else []
    env = env if isinstance(env, dict) else {}
    if VAR in env:
        given = env[VAR]
        return _result("the inventory sets %s=%s (sglang_server_env): kept; the grouping would be %s"
                       % (VAR, given, plan["cuda_visible_devices"]), plan, None, lines, warnings)
    return _result("dp-size %d x tp-size %d x pp-size %d on %d GPUs: %s=%s, each replica's GPUs as "
                   "close as the topology allows" % (dp, tp, pp, count, VAR, plan["cuda_visible_devices"]),
                   plan, {VAR: plan["cuda_visible_devices"]}, lines, warnings)


def candidate_env(facts, flags, env, pinned=False):
    """A sweep candidate's environment with its own GPU order: ``gpu_order``'s dict, ``env`` being
    the whole environment to launch with.

    A candidate's environment is the canary's with the candidate's changes, so it carries the
    CUDA_VISIBLE_DEVICES the canary's grouping chose for the canary's layout (none for a layout
    with nothing to order). Unless ``pinned`` (sglang_server_env or the candidate's own changes
    set it), that order is dropped and the candidate's layout is grouped anew: a tp 4 x dp 2
    candidate on a tp 8 canary gets each replica under one socket, as a deploy of it would."""
    env = dict(env) if isinstance(env, dict) else {}
    if not pinned:
        env.pop(VAR, None)
    result = gpu_order(facts, flags, env)
    result["env"] = dict(env, **result["env"])
    return result


def gpu_topology_env(facts, flags, env=None):
    """The filter gpu_topology_env (roles/sglang_flags: defaults/main.yml, the server's environment;
    tasks/model.yml, the report): ``gpu_order`` of the host's gpu_host_facts and flags."""
    if flags is not None and not isinstance(flags, dict):
        raise AnsibleFilterError("gpu_topology_env expects the launch flags (a dict), got %s"
                                 % type(flags).__name__)
    return gpu_order(facts, flags, env)


def gpu_topology_candidate_env(facts, flags, env, pinned=False):
    """The filter gpu_topology_candidate_env (roles/sglang_sweep/tasks/candidate.yml): the same for a
    sweep candidate, the canary's own order dropped unless pinned; its env is the whole environment
    to launch with."""
    if not isinstance(flags, dict) or not isinstance(env, dict):
        raise AnsibleFilterError("gpu_topology_candidate_env expects the candidate's flags and environment (dicts)")
    return candidate_env(facts, flags, env, bool(pinned))
