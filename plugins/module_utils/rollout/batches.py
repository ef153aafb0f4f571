# -*- coding: utf-8 -*-
# Controller side only (the sglang_rollout_batches module, the sglang_rollout filters and the
# deploy-scope lint rules of roles/sglang_flags): how many hosts deploy.yml's rollout play takes
# out at once. The serial spec follows Ansible's own `serial` (ansible-core 2.19,
# executor/playbook_executor.py _get_serialized_batches and utils/helpers.py pct_to_int); the
# floor comes from the gateway's listing of the workers. Standard library only.
# Why and how a rollout grows with the fleet: docs/rollout-growth.md.
"""Capacity-safe rollout batches.

* ``sglang_rollout_serial``: an int >= 1, a percentage ``"N%"`` (1..100), or a non-empty list of
  them. As Ansible's ``serial``: a percentage is of the play's hosts (the pending hosts, all of
  them, not the ones left), rounded down, at least 1; the list's last item repeats.
* ``sglang_rollout_min_serving``: how many of the gateway's workers must stay healthy while a
  batch is out, an int >= 0 or a percentage ``"N%"`` (0..100) of the workers the gateway lists
  (the fleet), rounded up (a floor: ``"75%"`` of 10 is 8). 0 = no floor.

A pending host is healthy when the gateway lists its worker URL (compared normalised,
``normalize_url`` of gateway/listing.py) as healthy; a host the gateway does not know is not
serving, and taking it out costs no capacity. Workers already unhealthy count against the floor.

Pending hosts whose server is not running at all (``idle``: a fresh host, a stopped one) serve
nothing, so a restart there takes nothing out of service: they go first, all in one batch, and
the serial spec then applies to the serving hosts from its first item (the canary among them).
"""

import math
import re

from ansible_collections.sglang.deploy.plugins.module_utils.gateway.listing import normalize_url

SERIAL_VAR = "sglang_rollout_serial"
FLOOR_VAR = "sglang_rollout_min_serving"
GATEWAY_VAR = "sglang_gateway_urls"
DOC = "docs/rollout-growth.md"
_PCT = re.compile(r"^\s*(\d+)\s*%\s*$")
_INT = re.compile(r"^\s*(\d+)\s*$")


class RolloutError(ValueError):
    """A refused input or a refused rollout; the message names the variable, the value, the
    rule and the fix."""


def _item(value, lowest, var):
    """('int', n) or ('pct', p) of one value, or a RolloutError."""
    if isinstance(value, bool) or value is None:
        raise RolloutError("%s is %r: not a number or a percentage" % (var, value))
    if isinstance(value, int):
        kind, number = "int", value
    elif isinstance(value, float) and value.is_integer():
        kind, number = "int", int(value)
    elif isinstance(value, str) and _PCT.match(value):
        kind, number = "pct", int(_PCT.match(value).group(1))
    elif isinstance(value, str) and _INT.match(value):
        kind, number = "int", int(_INT.match(value).group(1))
    elif isinstance(value, str) and value.strip().startswith("-"):
        raise RolloutError("%s is %r: negative" % (var, value))
    else:
        raise RolloutError("%s is %r: not a whole number or a percentage such as \"25%%\"" % (var, value))
    if number < lowest:
        raise RolloutError("%s is %r: below %d" % (var, value, lowest))
    if kind == "pct" and number > 100:
        raise RolloutError("%s is %r: a percentage above 100%%" % (var, value))
    return kind, number


def parse_serial(value):
    """The serial spec as a list of ('int', n) / ('pct', p); RolloutError when malformed.
    0 and negative numbers are refused: Ansible reads them as "every remaining host at once"."""
    items = value if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise RolloutError(_with_fix("%s is []: an empty list" % SERIAL_VAR, SERIAL_VAR))
    try:
        return [_item(v, 1, SERIAL_VAR) for v in items]
    except RolloutError as exc:
        where = " (an item of %r)" % (value,) if isinstance(value, (list, tuple)) else ""
        raise RolloutError(_with_fix(str(exc) + where, SERIAL_VAR))


def parse_floor(value):
    """The floor as ('int', n) or ('pct', p); RolloutError when malformed."""
    try:
        return _item(0 if value in ("", None) else value, 0, FLOOR_VAR)
    except RolloutError as exc:
        raise RolloutError(_with_fix(str(exc), FLOOR_VAR))


def _with_fix(text, var):
    if var == SERIAL_VAR:
        rule = ("the rule: an int >= 1, a percentage \"N%\" of the pending hosts (1..100), or a "
                "non-empty list of them, e.g. [1, \"10%\", \"25%\"]")
        fix = "set %s to such a value, e.g. 1 (one host at a time)" % SERIAL_VAR
    else:
        rule = ("the rule: an int >= 0 or a percentage \"N%\" (0..100) of the workers the gateway "
                "lists, e.g. \"75%\"")
        fix = "set %s to such a value, 0 for no floor" % FLOOR_VAR
    return "%s; %s; fix: %s (%s)" % (text, rule, fix, DOC)


def _problem(parse, value):
    try:
        parse(value)
    except RolloutError as exc:
        return str(exc)
    return ""


def serial_problem(value):
    """'' when value is a valid sglang_rollout_serial, else the message (for the lint)."""
    return _problem(parse_serial, value)


def floor_problem(value):
    """'' when value is a valid sglang_rollout_min_serving, else the message (for the lint)."""
    return _problem(parse_floor, value)


def batch_size(item, total):
    """One serial item as Ansible resolves it for a play of `total` hosts (pct_to_int):
    int(p / 100 * total), at least 1."""
    kind, number = item
    if kind == "pct":
        return int((number / 100.0) * total) or 1
    return number


def resolve_floor(floor, fleet):
    """The floor as a count of workers: a percentage of the fleet rounded up."""
    kind, number = floor
    if kind == "pct":
        return int(math.ceil(number * fleet / 100.0))
    return number


def floor_text(value, floor, fleet):
    """'sglang_rollout_min_serving is '75%' (8 of the gateway's 10 worker(s) must stay healthy)'."""
    return "%s is %r (%d of the gateway's %d worker(s) must stay healthy)" % (FLOOR_VAR, value, floor, fleet)


def read_workers(workers):
    """The listing as [(normalised url, healthy)]; RolloutError on an entry without url or
    healthy (the gateway listing's interface: [{url, healthy}])."""
    out = []
    for entry in workers or []:
        if not isinstance(entry, dict) or not entry.get("url") or not isinstance(entry.get("healthy"), bool):
            raise RolloutError("the gateway's listing has an entry without url or a boolean healthy: %r "
                               "(expected [{url, healthy}])" % (entry,))
        out.append((normalize_url(entry["url"]), entry["healthy"]))
    return out


class Fleet:
    """The gateway's view: which workers are healthy and which pending host is which worker."""

    def __init__(self, workers, worker_urls):
        self.listing = read_workers(workers)
        self.urls = {host: normalize_url(url) for host, url in (worker_urls or {}).items()}
        self.healthy_urls = {url for url, healthy in self.listing if healthy}

    @property
    def size(self):
        return len(self.listing)

    @property
    def healthy(self):
        return sum(1 for _, healthy in self.listing if healthy)

    def host_healthy(self, host):
        return self.urls.get(host, "") in self.healthy_urls

    def unhealthy(self):
        """The listed workers that are not healthy (their URLs)."""
        return [url for url, healthy in self.listing if not healthy]

    def unknown(self, hosts):
        """The hosts whose worker URL the gateway does not list."""
        listed = {url for url, _ in self.listing}
        return [h for h in hosts if self.urls.get(h, "") not in listed]

    def describe(self, hosts=()):
        """'8 healthy (unhealthy: a, b; not known to the gateway: h3)'."""
        parts = []
        if self.unhealthy():
            parts.append("unhealthy: " + ", ".join(self.unhealthy()))
        unknown = self.unknown(hosts)
        if unknown:
            parts.append("not known to the gateway, counted as not serving: " + ", ".join(unknown))
        return "%d healthy%s" % (self.healthy, " (%s)" % "; ".join(parts) if parts else " (none unhealthy)")


def idle_first(hosts, idle):
    """(the hosts with the idle ones first, how many are idle): both in the given order."""
    idle = set(idle or [])
    first = [h for h in hosts if h in idle]
    return first + [h for h in hosts if h not in idle], len(first)


def serial_batches(total, spec, idle_count=0):
    """The batch sizes for `total` hosts of which the first `idle_count` are idle: those in one
    batch, then the serial spec over the rest from its first item (a percentage still of all
    `total` pending hosts, as Ansible's serial counts it)."""
    rest = total - idle_count
    sizes, index = [], 0
    while rest > 0:
        size = min(batch_size(spec[index], total), rest)
        sizes.append(size)
        rest -= size
        index = min(index + 1, len(spec) - 1)
    return ([idle_count] if idle_count else []) + sizes


def _idle_text(count):
    return ("; the %d idle host(s) (no server running) first, in one batch" % count) if count else ""


def plan(hosts, serial=1, min_serving=0, workers=None, worker_urls=None, idle=None):
    """The batches of the rollout play for the ordered pending `hosts`, the `idle` ones of them
    (no server running) first and together.

    workers None: no gateway (the floor cannot be read). Returns {batches, order, idle, shrunk,
    enforced, floor, fleet, healthy, msg}; raises RolloutError when the rollout is refused."""
    hosts, idle_count = idle_first(list(hosts or []), idle)
    spec = parse_serial(serial)
    floor_spec = parse_floor(min_serving)
    given = serial_batches(len(hosts), spec, idle_count)
    ordered = {"order": hosts, "idle": hosts[:idle_count]}
    if workers is None:
        if floor_spec[1] != 0:
            raise RolloutError(
                "%s is %r but there is no gateway (%s is empty): the floor is read from the gateway's "
                "listing of the workers, and without it no batch can be held to it. Nothing was touched. "
                "Fix: set %s to the gateway that routes to these hosts, or set %s: 0 to roll out "
                "without a floor (%s)." % (FLOOR_VAR, min_serving, GATEWAY_VAR, GATEWAY_VAR, FLOOR_VAR, DOC))
        return dict(ordered, batches=given or [1], shrunk=False, enforced=False, floor=0, fleet=0, healthy=0,
                    msg="%d pending host(s) in batches %s (%s %r%s); the floor (%s) is not enforced without "
                        "a gateway (%s empty)" % (len(hosts), given, SERIAL_VAR, serial, _idle_text(idle_count),
                                                  FLOOR_VAR, GATEWAY_VAR))
    fleet = Fleet(workers, worker_urls)
    floor = resolve_floor(floor_spec, fleet.size)
    budget = fleet.healthy - floor  # healthy workers that may be out at once
    healthy_pending = [h for h in hosts[idle_count:] if fleet.host_healthy(h)]
    if floor > 0 and budget < 1 and healthy_pending:
        raise RolloutError(
            "the rollout is refused before any host is touched: %s, and the gateway lists %s now, so "
            "not even one of the %d healthy pending host(s) (%s) may leave. Fix: restore the unhealthy "
            "hosts (taking one out needs %d healthy), or lower %s to at most %d (%s)." % (
                floor_text(min_serving, floor, fleet.size), fleet.describe(hosts), len(healthy_pending),
                ", ".join(healthy_pending), floor + 1, FLOOR_VAR, max(fleet.healthy - 1, 0), DOC))
    batches, shrunk, left, index = ([idle_count] if idle_count else []), False, hosts[idle_count:], 0
    while left:
        want = min(batch_size(spec[index], len(hosts)), len(left))
        take, out = 0, 0
        for host in left[:want]:
            cost = 1 if fleet.host_healthy(host) else 0
            if floor > 0 and cost and out + cost > budget:
                break
            take, out = take + 1, out + cost
        if take == 0:  # cannot happen after the refusal above; never loop forever
            raise RolloutError("no host of %s may leave (%s)" % (", ".join(left[:want]), FLOOR_VAR))
        shrunk = shrunk or take < want
        batches.append(take)
        left = left[take:]
        index = min(index + 1, len(spec) - 1)
    msg = "%d pending host(s) in batches %s (%s %r%s%s); %s; %s" % (
        len(hosts), batches, SERIAL_VAR, serial, _idle_text(idle_count),
        ", shrunk from %s to keep the floor" % given if shrunk else "",
        floor_text(min_serving, floor, fleet.size), fleet.describe(hosts))
    return dict(ordered, batches=batches or [1], shrunk=shrunk, enforced=True, floor=floor,
                fleet=fleet.size, healthy=fleet.healthy, msg=msg)


def check_batch(batch, min_serving=0, workers=None, worker_urls=None):
    """Right before a batch leaves: may it? {ok, staying, floor, fleet, msg}.

    min_serving: the plan's resolved floor (an int), or the variable's value (a percentage is
    then of the workers listed now). ok when the healthy workers outside the batch are at least
    the floor."""
    batch = list(batch or [])
    fleet = Fleet(workers, worker_urls)
    floor_spec = parse_floor(min_serving)
    floor = resolve_floor(floor_spec, fleet.size)
    leaving = {fleet.urls.get(h, "") for h in batch}
    staying = sum(1 for url, healthy in fleet.listing if healthy and url not in leaving)
    ok = staying >= floor
    if ok:
        msg = "batch %s may leave: %d healthy worker(s) stay, floor %d (%s %r)" % (
            ", ".join(batch), staying, floor, FLOOR_VAR, min_serving)
    else:
        msg = ("batch %s may not leave the gateway: %d healthy worker(s) would stay, below the floor: "
               "%s; the gateway lists %s now. Fix: restore the unhealthy hosts, or lower %s to at most "
               "%d (%s)." % (", ".join(batch), staying, floor_text(min_serving, floor, fleet.size),
                             fleet.describe(batch), FLOOR_VAR, staying, DOC))
    return {"ok": ok, "staying": staying, "floor": floor, "fleet": fleet.size, "msg": msg}
