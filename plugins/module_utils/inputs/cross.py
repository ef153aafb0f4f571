"""The cross-checks of the catalogue: what only makes sense of two variables together (a role's
``checks:`` in its meta/input_kinds.yml names them). Each reads the host's variables through the
context (``ctx.var``) and returns ``[(variable, Problem)]``; a variable that is not defined here
is not judged (the role that reads it judges it when it runs)."""

from __future__ import annotations

from urllib.parse import urlsplit

from ansible_collections.sglang.deploy.plugins.module_utils.flags import model as _model
from ansible_collections.sglang.deploy.plugins.module_utils.inputs.base import Problem
from ansible_collections.sglang.deploy.plugins.module_utils.inputs.scalars import number

CHECKS = {}


def cross(name, summary):
    def register(func):
        CHECKS[name] = (func, summary)
        return func
    return register


def _defined(ctx, *names):
    values = [ctx.var(n) for n in names]
    return None if any(v is ctx.missing for v in values) else values


def server_unit(ctx):
    unit = ctx.var("sglang_server_service_name")
    return "sglang" if unit is ctx.missing or unit in (None, "") else str(unit)


def server_port(ctx):
    """The port the server listens on: the normalised flags' (sglang_flags' output), else the
    inventory's flags as argparse reads them (--port, or a prefix of it), else SGLang's 30000."""
    flags = ctx.var("sglang_flags_normalized")
    if not isinstance(flags, dict):
        try:
            flags = _model.normalize_args(ctx.var("sglang_server_args") if isinstance(
                ctx.var("sglang_server_args"), dict) else {})
        except _model.FlagModelError:
            return None  # the flags kind refuses the names
    port = 30000
    for name, value in flags.items():  # argparse keeps the last, an abbreviation included
        kind, names = _model.resolve_flag(name)
        if kind in ("known", "abbreviation") and names[0] == "port":
            port = number(value, integer=True)
    return port


def _same_unit(variable, ctx, what):
    found = _defined(ctx, variable)
    if found is None or found[0] in (None, ""):
        return []
    unit = server_unit(ctx)
    if str(found[0]).removesuffix(".service") == unit:
        return []
    return [(variable, Problem("input-server-unit", f"{found[0]!r} is not the server's unit ({unit}, "
                               f"sglang_server_service_name): {what}",
                               f"leave it unset (it follows sglang_server_service_name) or set it to {unit!r}"))]


@cross("admit-unit-is-server-unit", "the admission's \"is a server running?\" asks about the server's own unit")
def _admit_unit(ctx):
    return _same_unit("gpu_admit_server_unit", ctx, "the admission would not see the live server and could run "
                      "its GPU burn beside it")


@cross("watchdog-unit-is-server-unit", "the watchdog restarts the server's own unit, nothing else")
def _watchdog_unit(ctx):
    return _same_unit("sglang_watchdog_service", ctx, "the watchdog would restart another unit (and watch "
                      "nothing)")


@cross("firewall-server-unit-is-server-unit", "the firewall's drop-in goes to the server's own unit")
def _firewall_unit(ctx):
    return _same_unit("sglang_firewall_server_service", ctx, "the drop-in that starts the server only behind the "
                      "firewall would go to another unit")


@cross("firewall-port-is-server-port", "the firewall filters the port the server listens on")
def _firewall_port(ctx):
    found = _defined(ctx, "sglang_firewall_port", "sglang_firewall_enabled")
    if found is None or found[0] in (None, "") or str(found[1]).lower() not in ("true", "yes", "1", "on"):
        return []
    port, server = number(found[0], integer=True), server_port(ctx)
    if port is None or server is None or port == server:
        return []
    return [("sglang_firewall_port", Problem(
        "input-firewall-port", f"{port} is not the port the server listens on ({server}, --port of "
        "sglang_server_args): the firewall would filter a port nothing of the deploy's serves (22 would cut SSH) "
        "and leave the server's port open", "leave it unset (it follows the server's --port) or set it to "
        f"{server}"))]


@cross("worker-url-is-the-servers-port", "the URL the gateways reach this host's server by names the server's port "
       "(the clients' requests and key go there; its host may be any name of this host)")
def _worker_url(ctx):
    found = _defined(ctx, "sglang_gateway_worker_url")
    if found is None or found[0] in (None, ""):
        return []
    try:
        port = urlsplit(str(found[0])).port or 80
    except ValueError:
        return []  # the url kind refuses it
    server = server_port(ctx)
    if server is None or port == server:
        return []
    return [("sglang_gateway_worker_url", Problem(
        "input-url-port", f"names port {port}, not the server's {server}: the gateways would send this host's "
        "clients and key to whatever listens there", "leave it unset (http://<ansible_host>:<the server's port>) "
        "or name the server's port"))]
