"""The frame of the catalogue of input kinds (docs/security.md, "Input kinds"): what a kind is,
how a value is judged by its kind, and the one line every refusal prints.

A kind is one function ``check(value, spec, ctx) -> [Problem]`` registered under its name
(``@kind("port")``); ``spec`` is the option's entry of ``roles/<role>/meta/input_kinds.yml`` (its
parameters: ``min``, ``roots``, ``keys`` ...) and ``ctx`` what a kind may need to know about the
host (its name, its addresses, another variable of it). A Problem names the rule, what is wrong
and the fix; ``line`` puts host, variable, rule, message and fix on one line. The kinds
themselves are in the modules beside this one (scalars, places, net, envs, shapes); catalogue.py
loads them all. Standard library only; a value is never quoted when its kind is secret.
"""

from __future__ import annotations

import re
from typing import Callable, Dict, NamedTuple


class Problem(NamedTuple):
    """One refusal: ``rule`` (``input-<kind>``), ``message`` (what is wrong, not naming the
    variable), ``fix`` and ``where`` (the part of the value: ``['key']``, ``[2]``, "" for all)."""

    rule: str
    message: str
    fix: str
    where: str = ""


class Kind(NamedTuple):
    name: str
    check: Callable
    summary: str
    params: tuple


KINDS: Dict[str, Kind] = {}
# values that mean "not set" (the option's default applies, or the feature is off): not judged
# unless the option's spec says ``required: true``
UNSET = (None, "")


class Ctx:
    """What a kind may read besides the value: the host's inventory name and addresses, and any
    other variable of the host (``var(name)``: its templated value, or ``missing`` when it is not
    defined or cannot be templated here)."""

    missing = object()

    def __init__(self, host="", addresses=(), variables=None, variable="", as_user=False):
        self.host = str(host or "")
        # the host is the controller, reached as the playbook's own (not root) user: the trees of
        # other users' (a home) are that user's own there (playbooks/verify_endpoint.yml)
        self.as_user = as_user
        self.variable = variable  # the option being judged (messages name it: "{here}")
        self.addresses = {str(a).lower() for a in addresses if a not in UNSET}
        self._variables = variables if variables is not None else {}

    def var(self, name):
        getter = getattr(self._variables, "get_value", None)
        if getter is not None:
            return getter(name, self.missing)
        return self._variables.get(name, self.missing)


def kind(name, summary, params=()):
    """Register ``check`` as the kind ``name`` (``params``: the spec keys it reads)."""

    def register(check):
        KINDS[name] = Kind(name, check, summary, tuple(params) + ("kind", "required", "why", "secret"))
        return check

    return register


def spec_of(spec) -> dict:
    """``"port"`` -> ``{"kind": "port"}``; a mapping as it is."""
    return {"kind": spec} if isinstance(spec, str) else dict(spec or {})


def check(spec, value, ctx=None, where="") -> list:
    """The problems of ``value`` judged by its kind (``spec``); [] when it may be used. A value in
    UNSET is not judged unless the spec has ``required: true``."""
    spec = spec_of(spec)
    ctx = ctx or Ctx()
    if value in UNSET if not isinstance(value, (list, dict)) else False:
        if spec.get("required"):
            return [Problem("input-required", "is empty", "give a value (it has no default)", where)]
        return []
    found = KINDS[spec["kind"]].check(value, spec, ctx)
    return [p._replace(where=where + p.where) for p in found]


def located(variable, problem):
    """``problem`` with ``{here}`` in its message (the mapping a key belongs to) named: the
    variable and the part of it that holds the key (``where`` less its last part)."""
    if "{here}" not in problem.message:
        return problem
    parent = re.sub(r"\[[^\[\]]*\]$", "", problem.where)
    return problem._replace(message=problem.message.replace("{here}", variable + parent))


def shown(value, spec) -> str:
    """``value`` as a message quotes it: ``<redacted>`` for a secret kind, else its repr, cut."""
    if spec_of(spec).get("secret") or spec_of(spec).get("kind") == "key":
        return "<redacted>"
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def line(host, variable, problem) -> str:
    """The one form of every refusal: ``host: variable[part] [rule] message Fix: fix``."""
    head = f"{host}: " if host else ""
    problem = located(variable, problem)
    return f"{head}{variable}{problem.where} [{problem.rule}] {problem.message} Fix: {problem.fix}"
