# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which GPUs form each data-parallel replica of one SGLang server, from the bus topology.

SGLang 0.5.23 gives DP replica i the visible devices at positions [i*T*P, (i+1)*T*P)
(T = --tp-size, P = --pp-size): DataParallelController.launch_dp_schedulers
(sglang/srt/managers/data_parallel_controller.py) starts base_gpu_id at 0 and adds
tp_size * pp_size * gpu_id_step per dp rank; launch_tensor_parallel_group gives each scheduler
gpu_id = base_gpu_id + pp_rank_in_node * tp_size_per_node + tp_rank * gpu_id_step
(--base-gpu-id 0 and --gpu-id-step 1 by default). So the order of CUDA_VISIBLE_DEVICES decides
the groups; this module chooses that order. (Under --enable-dp-attention the DP ranks share one
TP group instead, and this grouping does not apply.)

--numa-node at 0.5.23 is a list of ints, one per scheduler subprocess, read as
server_args.numa_node[gpu_id] (sglang/srt/utils/numa_utils.py: get_numa_node_if_available;
field in sglang/srt/arg_groups/fields/device.py): one entry per visible GPU position, not per
DP rank. ``numa_node_arg`` below is that list.

Input: the topology as roles/gpu_host gathers it (gpu_host_facts: gpus[].index,
interconnect.matrix {"GPU0": {"GPU1": "PIX", ...}}, interconnect.numa_affinity {"GPU0": "0"}).
Plain functions (tests/unit/test_gpu_topology_groups.py); gpu_order of topology_env.py calls
them for the roles, and gpu_topology_groups at the end raises their errors as filter errors.

Choice, best first: the groups' worst links, sorted from the worst group down, as low as they go
in the order NV#, PIX, PXB, PHB, NODE, SYS (a PCIe pair on two different NUMA nodes counts as
SYS whatever the matrix says; an NVLink pair stays NV#: its all-reduce does not cross the
sockets); then the fewest groups spanning NUMA nodes; then the lowest sum of the links inside
the groups; then the lowest GPU indices (groups ordered by their first GPU).
Exhaustive search with pruning, so the answer is the best one and never depends on dict order.
"""

from itertools import combinations

from ansible.errors import AnsibleFilterError

from ansible_collections.sglang.deploy.plugins.module_utils.gpu.host_interconnect import PATH_RANK

SYS_RANK = PATH_RANK.index("SYS")
# Words for the reason sentence, by the worst link inside a group.
_SCOPE = {
    "NV": "joined by NVLink",
    "PIX": "under one PCIe switch",
    "PXB": "under one PCIe switch tree",
    "PHB": "under one PCIe host bridge",
    "NODE": "under one socket",
    "SYS": "across sockets",
}
MAX_GPUS = 16


class GroupingError(ValueError):
    """The GPUs cannot be grouped as asked (too few GPUs, sizes below 1, no topology)."""


def _kind(cell):
    cell = (cell or "").strip().upper()
    if cell.startswith("NV") and cell[2:].isdigit():
        return "NV"
    if cell == "SOC":  # the name of SYS in old drivers
        return "SYS"
    return cell


def _numa(value):
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() else None


def _span(gpus):
    """[0, 1, 2, 3] -> '0-3'; [0, 2, 4, 6] -> '0,2,4,6'."""
    gpus = list(gpus)
    if len(gpus) > 2 and gpus == list(range(gpus[0], gpus[0] + len(gpus))):
        return "%d-%d" % (gpus[0], gpus[-1])
    return ",".join(str(g) for g in gpus)


def topology_from_facts(facts):
    """gpu_host_facts -> (gpu indices, {gpu: numa node or None}, {(a, b): matrix cell})."""
    facts = facts or {}
    gpus = sorted(g["index"] for g in facts.get("gpus") or [] if g.get("index") is not None)
    inter = facts.get("interconnect") or {}
    matrix = inter.get("matrix") or {}
    numa_affinity = inter.get("numa_affinity") or {}
    numa = dict((g, _numa(numa_affinity.get("GPU%d" % g))) for g in gpus)
    links = {}
    for a, b in combinations(gpus, 2):
        cell = (matrix.get("GPU%d" % a) or {}).get("GPU%d" % b) or \
            (matrix.get("GPU%d" % b) or {}).get("GPU%d" % a)
        if cell is not None:
            links[(a, b)] = cell
    return gpus, numa, links


class _Topology(object):
    def __init__(self, gpus, numa, links):
        self.gpus = sorted(gpus)
        self.numa = dict((g, (numa or {}).get(g)) for g in self.gpus)
        self.cell = {}
        self.rank = {}
        missing = []
        for a, b in combinations(self.gpus, 2):
            cell = (links or {}).get((a, b)) or (links or {}).get((b, a))
            if cell is None:
                missing.append("%d-%d" % (a, b))
                continue
            kind = _kind(cell)
            rank = PATH_RANK.index(kind) if kind in PATH_RANK else SYS_RANK
            na, nb = self.numa[a], self.numa[b]
            if kind != "NV" and na is not None and nb is not None and na != nb:
                rank = max(rank, SYS_RANK)
            self.cell[(a, b)] = cell.strip()
            self.rank[(a, b)] = rank
        if missing:
            raise GroupingError(
                "the nvidia-smi topo -m matrix has no path for GPU pair(s) %s: cannot group by the "
                "bus (gpu_host_facts.interconnect.matrix is empty when topo -m failed)"
                % ", ".join(missing[:6]))
        self.min_rank = min(self.rank.values()) if self.rank else 0

    def link(self, a, b):
        return self.rank[(a, b) if a < b else (b, a)]

    def worst(self, group):
        """(rank, cell) of the worst pair of a group, first such pair by GPU index; (-1, None)
        for one GPU."""
        best = (-1, None)
        for a, b in combinations(group, 2):
            rank = self.link(a, b)
            if rank > best[0]:
                cell = self.cell[(a, b)]
                best = (rank, "SYS" if rank == SYS_RANK and _kind(cell) != "SYS" else cell)
        return best

    def numa_nodes(self, group):
        return sorted(set(self.numa[g] for g in group if self.numa[g] is not None))

    def sockets(self):
        """Groups of GPUs joined by paths that never cross sockets (below SYS)."""
        seen, out = set(), []
        for g in self.gpus:
            if g in seen:
                continue
            part, todo = [], [g]
            seen.add(g)
            while todo:
                x = todo.pop()
                part.append(x)
                for y in self.gpus:
                    if y not in seen and self.link(x, y) < SYS_RANK:
                        seen.add(y)
                        todo.append(y)
            out.append(sorted(part))
        return out


def _group_cost(topo, group):
    worst = topo.worst(group)[0]
    spans = 1 if len(topo.numa_nodes(group)) > 1 else 0
    total = sum(topo.link(a, b) for a, b in combinations(group, 2))
    return worst, spans, total


def _key(costs, pending, size, topo):
    """Lower bound of a partition's key, from the costs of its groups so far and the number of
    groups still to form (each at least the host's best link)."""
    pair_count = size * (size - 1) // 2
    floor = topo.min_rank if size > 1 else -1
    worsts = sorted([c[0] for c in costs] + [floor] * pending, reverse=True)
    return (tuple(worsts), sum(c[1] for c in costs),
            sum(c[2] for c in costs) + pending * pair_count * max(topo.min_rank, 0))


def _best_partition(topo, candidates, size, count):
    """The best `count` disjoint groups of `size` GPUs among `candidates` (sorted)."""
    best = {"key": None, "groups": None}
    spare = len(candidates) - size * count

    def walk(left, groups, costs, skipped):
        pending = count - len(groups)
        if pending == 0:
            key = _key(costs, 0, size, topo)
            if best["key"] is None or key < best["key"]:
                best["key"], best["groups"] = key, list(groups)
            return
        if best["key"] is not None and _key(costs, pending, size, topo) >= best["key"]:
            return
        first, rest = left[0], left[1:]
        for others in combinations(rest, size - 1):
            group = (first,) + others
            remaining = [g for g in rest if g not in others]
            walk(remaining, groups + [group], costs + [_group_cost(topo, group)], skipped)
        if skipped < spare:
            walk(rest, groups, costs, skipped + 1)

    walk(list(candidates), [], [], 0)
    return best["groups"]


def _order_inside(topo, group, tp, pp):
    """Order the GPUs of one replica: with pp > 1, SGLang gives pp rank k the positions
    [k*tp, (k+1)*tp) of the replica, so the TP subgroups are chosen the same way."""
    if pp == 1 or tp == 1:
        return list(group)
    parts = _best_partition(topo, list(group), tp, pp)
    return [g for part in parts for g in part]


def _reason(topo, group, worst_cell):
    nodes = topo.numa_nodes(group)
    gpus = _span(sorted(group))
    if len(group) == 1:
        where = " on NUMA node %d" % nodes[0] if nodes else ""
        return "GPU %d alone%s (no link inside the group)" % (group[0], where)
    kind = _kind(worst_cell)
    if kind == "SYS":
        where = "NUMA nodes %s" % " and ".join(str(n) for n in nodes) if len(nodes) > 1 else "sockets"
        return "GPUs %s span %s (SYS): every all-reduce crosses the sockets" % (gpus, where)
    if len(nodes) > 1:
        where = ", on NUMA nodes %s" % " and ".join(str(n) for n in nodes)
    elif nodes:
        where = " on NUMA node %d" % nodes[0]
    else:
        where = ""
    if kind == "NODE" and len(nodes) == 1:
        return "GPUs %s under NUMA node %d (NODE)" % (gpus, nodes[0])
    scope = _SCOPE.get(kind, "linked by %s" % kind)
    return "GPUs %s %s%s (%s)" % (gpus, scope, where, worst_cell)


def plan_groups(gpus, numa, links, tp, pp=1, dp=1):
    """Group `gpus` into `dp` replicas of tp*pp GPUs each.

    gpus: GPU indices; numa: {gpu: NUMA node or None}; links: {(a, b): topo -m cell such as
    'PIX', 'NODE', 'SYS', 'NV18'}. Returns a dict: groups, cuda_visible_devices, numa_node_arg,
    replicas (dp_rank, gpus, numa_node, worst_link, crosses_sockets, reason), crosses_sockets
    (some group's all-reduce goes over SYS), cross_socket (None or the sentence saying why no
    grouping avoids it), unused (GPUs left out). Raises GroupingError.
    """
    try:
        tp, pp, dp = int(tp), int(pp), int(dp)
    except (TypeError, ValueError):
        raise GroupingError("tp, pp and dp must be integers: tp=%r pp=%r dp=%r" % (tp, pp, dp))
    if min(tp, pp, dp) < 1:
        raise GroupingError("tp, pp and dp must be at least 1: tp=%d pp=%d dp=%d" % (tp, pp, dp))
    gpus = sorted(set(int(g) for g in gpus or []))
    size = tp * pp
    need = size * dp
    label = "TP%d" % tp + ("xPP%d" % pp if pp > 1 else "")
    if need > len(gpus):
        raise GroupingError(
            "--dp-size %d x --tp-size %d x --pp-size %d needs %d GPUs; this host has %d (%s): "
            "lower dp or tp, or run on a host with more GPUs"
            % (dp, tp, pp, need, len(gpus), "GPU " + _span(gpus) if gpus else "none"))
    if len(gpus) > MAX_GPUS:
        raise GroupingError("%d GPUs: grouping searches hosts of at most %d GPUs" % (len(gpus), MAX_GPUS))
    topo = _Topology(gpus, numa, links if len(gpus) > 1 else {})
    groups = _best_partition(topo, gpus, size, dp)
    groups = [_order_inside(topo, group, tp, pp) for group in groups]

    replicas, crossing = [], []
    for rank, group in enumerate(groups):
        worst_rank, worst_cell = topo.worst(group)
        nodes = topo.numa_nodes(group)
        crosses = worst_rank >= SYS_RANK
        if crosses:
            crossing.append(rank)
        replicas.append({
            "dp_rank": rank,
            "gpus": list(group),
            "numa_node": nodes[0] if len(nodes) == 1 and all(topo.numa[g] is not None for g in group) else None,
            "worst_link": worst_cell,
            "crosses_sockets": crosses,
            "reason": _reason(topo, group, worst_cell),
        })
    order = [g for group in groups for g in group]
    numa_arg = [topo.numa[g] for g in order]
    cross = None
    if crossing:
        nodes = set(n for n in topo.numa.values() if n is not None)
        n_sockets = len(nodes) if nodes else len(topo.sockets())
        if dp == 1:
            cross = ("%d GPUs over %d sockets cannot form a %s group within one socket: every "
                     "all-reduce crosses the sockets (SYS)" % (need, n_sockets, label))
        else:
            cross = ("%d GPUs over %d sockets cannot form %d %s groups each within one socket: "
                     "every all-reduce of DP rank(s) %s crosses the sockets (SYS)"
                     % (need, n_sockets, dp, label, ",".join(str(r) for r in crossing)))
    used = set(order)
    return {
        "tp": tp, "pp": pp, "dp": dp,
        "groups": [list(g) for g in groups],
        "cuda_visible_devices": ",".join(str(g) for g in order),
        "numa_node_arg": numa_arg if all(n is not None for n in numa_arg) else None,
        "replicas": replicas,
        "crosses_sockets": bool(crossing),
        "cross_socket": cross,
        "unused": [g for g in gpus if g not in used],
    }


def plan_groups_from_facts(facts, tp, pp=1, dp=1):
    """plan_groups over gpu_host_facts (roles/gpu_host)."""
    gpus, numa, links = topology_from_facts(facts)
    return plan_groups(gpus, numa, links, tp, pp, dp)


def gpu_topology_groups(facts, tp=1, pp=1, dp=1):
    """plan_groups_from_facts with its errors as filter errors: a dict with groups,
    cuda_visible_devices (the groups concatenated), numa_node_arg, replicas (gpus, numa_node,
    worst_link, reason per DP rank), crosses_sockets, cross_socket and unused. Not published as a
    filter: no role calls it (tests/unit/test_collection_layout.py refuses a filter that no
    playbook, role or template uses); gpu_topology_env is how the grouping reaches the roles."""
    if not isinstance(facts, dict):
        raise AnsibleFilterError("gpu_topology_groups expects gpu_host_facts (a dict), got %s"
                                 % type(facts).__name__)
    try:
        return plan_groups_from_facts(facts, tp, pp, dp)
    except GroupingError as exc:
        raise AnsibleFilterError("gpu_topology_groups: %s" % exc)
