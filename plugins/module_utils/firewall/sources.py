"""Who may reach the SGLang port, as nftables sets (roles/sglang_firewall, docs/firewall.md).

Three steps, each a filter:

* ``sglang_firewall_sources``: the inventory's sources (the allow list, the gateway group's
  hosts, the monitoring hosts, the controller's address) split into networks, which
  go into the ruleset as they are, and host names, which the host itself resolves
  (``getent ahosts``, tasks/plan.yml), plus an error for each entry that is neither;
* ``sglang_firewall_sets``: networks and resolved names as the two sets of the ruleset (IPv4,
  IPv6), overlapping entries merged, or an error naming a name that did not resolve;
* ``sglang_firewall_findings``: the lint of tasks/lint.yml: an unfiltered wildcard bind (on
  sglang_flags_normalized, the normalised flags the unit is rendered from), bad entries, ports,
  placeholder networks, and the variables of the unit template (the control-character and path
  checks of plugins/module_utils/flags/inputs.py).
"""

from __future__ import annotations

import ipaddress
import re

# the server's unit checks judge this role's unit variables too, so there is one control-character check.
from ansible_collections.sglang.deploy.plugins.module_utils.flags import inputs as _inputs
# SGLang's --host value read as an address, as the API key check reads it
from ansible_collections.sglang.deploy.plugins.module_utils.flags import exposure as _exposure
# paths, unit names and the union of the admitted networks, as every renderer judges them
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as _guard
# The variables templates/sglang-firewall.service.j2 and templates/sglang-firewall.nft.j2 are
# made of (the unit's file name included: tasks/apply.yml), and their kind
# (roles/sglang_firewall/meta/input_kinds.yml, judged by the catalogue through unit_input_findings)
UNIT_INPUTS = {
    "sglang_firewall_ruleset_path": "file",
    "sglang_firewall_service_name": "unit-name",
    "sglang_firewall_server_service": "unit-name",
    "sglang_firewall_table": "name",
}
# What the templates are made of besides UNIT_INPUTS, and the checked inputs each comes from
# (tests/unit/test_unit_inputs_complete.py fails on a template variable in neither).
UNIT_DERIVED = {
    "ansible_managed": "ansible.cfg (a comment line)",
    "_sglang_firewall_ports": "sglang_firewall_port and sglang_firewall_extra_ports (1-65535, below)",
    "_sglang_firewall_sets": "addresses and networks parsed by ipaddress (sglang_firewall_sets)",
    "sglang_firewall_action": "compared only ('reject' or else drop), never written",
}

# host names: labels of letters, digits and hyphens, dot separated
_NAME = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?$")
# the documentation networks (docs/firewall.md): the production profile's placeholder
_PLACEHOLDERS = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")]
# host names that bind every address of the host (the addresses are parsed: sglang_firewall_wildcard)
_WILDCARDS = {"", "*"}


def _network(text):
    """An ip_network for an address or a network in CIDR form; None for anything else.
    Raises ValueError for a CIDR with host bits set (10.0.0.5/8: which one was meant?)."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        return ipaddress.ip_network(text, strict=True)
    except ValueError as exc:
        if "/" in text and "has host bits set" in str(exc):
            raise ValueError(f"{text} has host bits set: write {ipaddress.ip_network(text, strict=False)} "
                             f"or the single address {text.split('/')[0]}") from None
        return None


def _written(net):
    """A network as the ruleset writes it: a single address without /32 or /128."""
    return str(net.network_address) if net.prefixlen == net.max_prefixlen else str(net)


def _classify(value, origin, out):
    text = str(value if value is not None else "").strip()
    try:
        net = _network(text)
    except ValueError as exc:
        out["errors"].append(f"{origin}: {exc}")
        return
    if net is not None:
        out["networks"].append({"network": _written(net), "origin": origin})
    elif _NAME.match(text) and not text.replace(".", "").isdigit():
        if not any(n["name"] == text for n in out["names"]):
            out["names"].append({"name": text, "origin": origin})
    else:
        out["errors"].append(f"{origin}: {value!r} is neither an address, a network (CIDR) nor a host name")


def sglang_firewall_sources(allow, gateways=None, monitoring=None, extra_monitoring=None, controller=""):
    """The sources admitted to the port: {"networks": [{network, origin}], "names": [{name,
    origin}], "errors": [text]}. `gateways` are the gateway group's hosts (roles/sglang_gateway:
    smg sends requests and health checks to the port), `monitoring` the monitoring group's hosts
    (each ansible_host or the inventory name), `controller` the address SSH_CONNECTION names
    (empty: not admitted)."""
    out = {"networks": [], "names": [], "errors": []}
    if allow is None:
        allow = []
    if isinstance(allow, str) or not isinstance(allow, (list, tuple)):
        out["errors"].append(f"sglang_firewall_allow: a list of addresses, networks or host names, not {allow!r}")
        allow = []
    for item in allow:
        _classify(item, "sglang_firewall_allow", out)
    for item in gateways or []:
        _classify(item, "gateway group", out)
    for item in monitoring or []:
        _classify(item, "monitoring group", out)
    for item in extra_monitoring or []:
        _classify(item, "sglang_firewall_allow_monitoring", out)
    if str(controller or "").strip():
        _classify(controller, "controller (SSH_CONNECTION)", out)
    return out


def _addresses(getent_stdout):
    """The addresses in `getent ahosts NAME` output (first column, each once)."""
    seen = []
    for line in (getent_stdout or "").splitlines():
        fields = line.split()
        if fields and fields[0] not in seen:
            seen.append(fields[0])
    return seen


WAIVER = "sglang_firewall_admit_all"


def admit_all_finding(networks, waiver="") -> list:
    """An error when the union of ``networks`` admits every address of a family, whatever its
    spelling (0.0.0.0/0; 0.0.0.0/1 and 128.0.0.0/1; ::/0), unless ``waiver``
    (sglang_firewall_admit_all) says why as text: then a warning repeating it."""
    every = _guard.admits_every_address(networks)
    if not every:
        return []
    what = f"the admitted sources together admit every {every} address: the firewall filters nothing"
    reason = waiver.strip() if isinstance(waiver, str) else ""
    if reason:
        return [{"severity": "warning", "msg": f"{what}; accepted in {WAIVER}: {reason}"}]
    return [{"severity": "error", "msg": (
        f"sglang_firewall_allow [firewall-admits-all] {what}. Fix: list your client networks, or turn the "
        f"firewall off and bind a declared address; {WAIVER}: '<why every address may connect>' accepts it")}]


def sglang_firewall_sets(sources, resolved=None, admit_all=""):
    """{"ipv4": [...], "ipv6": [...], "comments": [...], "errors": [...]}: the networks of
    `sources` and the addresses its names resolved to (`resolved`: name -> getent ahosts
    output, or the results of the resolving loop), merged and sorted. A name without an
    address is an error: the host could not be admitted; so is a union that admits every
    address unless `admit_all` (sglang_firewall_admit_all) says why."""
    if isinstance(resolved, list):  # the registered loop results of tasks/plan.yml
        resolved = {r.get("item"): (r.get("stdout", "") if r.get("rc", 1) == 0 else "") for r in resolved}
    resolved = resolved or {}
    nets, comments, errors = [], [], list(sources.get("errors", []))
    for entry in sources.get("networks", []):
        nets.append(ipaddress.ip_network(entry["network"]))
        comments.append(f"{entry['network']} ({entry['origin']})")
    for entry in sources.get("names", []):
        found = _addresses(resolved.get(entry["name"], ""))
        if not found:
            errors.append(f"{entry['origin']}: {entry['name']} does not resolve on this host (getent ahosts); "
                          "fix its DNS or put its address into sglang_firewall_allow")
            continue
        for addr in found:
            nets.append(ipaddress.ip_network(addr))
        comments.append(f"{entry['name']} -> {', '.join(found)} ({entry['origin']})")
    errors += [f["msg"] for f in admit_all_finding(nets, admit_all) if f["severity"] == "error"]
    return {
        "ipv4": [_written(n) for n in ipaddress.collapse_addresses(n for n in nets if n.version == 4)],
        "ipv6": [_written(n) for n in ipaddress.collapse_addresses(n for n in nets if n.version == 6)],
        "comments": comments,
        "errors": errors,
    }


def sglang_firewall_wildcard(host):
    """True when SGLang's --host value binds every address of the host: "" and "*", the
    unspecified address of either family (0.0.0.0, ::, [::], 0:0::0), an IPv4-mapped one
    (::ffff:0.0.0.0), and IPv4 short forms as inet_aton reads them (0, 0.0, 0x0, 00.0.0)."""
    if host is None:
        return False  # SGLang's default is 127.0.0.1
    if isinstance(host, (list, tuple, dict)):  # argv would give each item (a mapping: its keys)
        return any(sglang_firewall_wildcard(item) for item in host)
    if str(host).strip() in _WILDCARDS:
        return True
    address = _exposure.bind_address(host)  # None: a host name (SGLang resolves it; not judged here)
    return address is not None and address.is_unspecified


def _unit_input_findings(unit):
    """Errors for the unit template's variables (UNIT_INPUTS), each by the kind the firewall's kinds
    file declares (roles/sglang_firewall/meta/input_kinds.yml: the ruleset a .nft file below /etc's
    nftables directories, the unit names the deploy's own, the table an nftables name)."""
    found = []
    unit = unit or {}
    for name, value in unit.items():
        if name not in UNIT_INPUTS or value is None:
            continue
        foreign = [unit.get("sglang_firewall_server_service") or "sglang", "smg", "sglang-watchdog"] \
            if name == "sglang_firewall_service_name" else None
        found += _inputs.unit_input_findings(name, value, foreign=foreign)
    return [{"severity": "error", "msg": f"{f['flag']} [{f['rule']}] {f['message']} Fix: {f['fix']}"}
            for f in found]


def sglang_firewall_findings(flags, enabled=False, open_bind_ok=False, sources=None, ports=None, unit=None,
                             admit_all=""):
    """[{"severity": "error"|"warning", "msg": text}] for lint.yml. `flags`: sglang_flags_normalized,
    the normalised flags the unit is rendered from (its `host`: "--host" and "host" are one flag
    there); `sources`: sglang_firewall_sources' result; `ports`: the filtered ports; `unit`: the
    UNIT_INPUTS variables; `admit_all`: sglang_firewall_admit_all (admit_all_finding)."""
    findings = _unit_input_findings(unit)
    flags = flags or {}
    host = flags.get("host", None) if isinstance(flags, dict) else None
    if sglang_firewall_wildcard(host) and not enabled and not open_bind_ok:
        findings.append({"severity": "error", "msg": (
            f"--host [firewall-open-bind] {host!r} (sglang_server_args) binds every address of the host "
            "and sglang_firewall_enabled is false: anyone who reaches the host reaches the SGLang port. Fix: bind "
            "a declared address (sglang_server_args host), or turn the firewall on (sglang_firewall_enabled: true, "
            "sglang_firewall_allow: [your client networks]); sglang_firewall_open_bind_ok: true accepts it for "
            "hosts on a private network")})
    if not enabled:
        return findings
    for port in ports if ports is not None else []:
        try:
            ok = 1 <= int(str(port)) <= 65535
        except ValueError:
            ok = False
        if not ok:
            findings.append({"severity": "error", "msg": f"port {port!r} is not a TCP port (1-65535)"})
    for err in (sources or {}).get("errors", []):
        findings.append({"severity": "error", "msg": err})
    findings += admit_all_finding([e["network"] for e in (sources or {}).get("networks", [])], admit_all)
    for entry in (sources or {}).get("networks", []):
        net = ipaddress.ip_network(entry["network"])
        if any(net.version == p.version and net.subnet_of(p) for p in _PLACEHOLDERS):
            findings.append({"severity": "warning", "msg": (
                f"{entry['network']} ({entry['origin']}) is a documentation network (a placeholder): "
                "put your client networks into sglang_firewall_allow")})
    return findings
