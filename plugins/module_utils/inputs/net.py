"""The kinds of the catalogue that name a place on the network: a TCP port, a URL (its schemes,
whether it may leave the host, whether it may carry a credential), the path part of a URL, an
address, a network to admit, a HOST:PORT endpoint (base.py says what a kind is). A URL that may
carry a credential is printed through ``public_url`` of plugins/module_utils/sglang_http.py, the
project's one HTTP client, which also drops a credential on a redirect to another origin."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import parse_qsl, urlsplit

from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as _guard
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_secrets as _secrets
from ansible_collections.sglang.deploy.plugins.module_utils.inputs.base import Problem, kind, shown
from ansible_collections.sglang.deploy.plugins.module_utils.inputs.scalars import control_problems, range_problems

# a DNS name (RFC 1123 labels), optionally fully qualified
HOST_NAME = re.compile(r"(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
                       r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?")
LOOPBACK_NAMES = ("localhost", "localhost.localdomain", "ip6-localhost")


def _address(text):
    try:
        return ipaddress.ip_address(str(text).strip("[]"))
    except ValueError:
        return None


def is_loopback(host) -> bool:
    address = _address(host)
    if address is not None:
        mapped = getattr(address, "ipv4_mapped", None)
        return (mapped or address).is_loopback
    return str(host).lower().rstrip(".") in LOOPBACK_NAMES


def is_this_host(host, ctx) -> bool:
    """Loopback, or one of the host's own names and addresses: its inventory name, ansible_host, the
    address its server binds (the normalised --host), and the addresses gathered facts list."""
    own = set(ctx.addresses)
    flags = ctx.var("sglang_flags_normalized")
    if isinstance(flags, dict) and flags.get("host"):
        own.add(str(flags["host"]).lower())
    facts = ctx.var("ansible_facts")
    if isinstance(facts, dict):
        own.update(str(a).lower() for a in (facts.get("all_ipv4_addresses") or []) + (facts.get("all_ipv6_addresses") or []))
    return is_loopback(host) or str(host).lower().strip("[]").rstrip(".") in {a.strip("[]").rstrip(".") for a in own}


@kind("port", "a TCP port, 1-65535")
def _port(value, spec, ctx):
    return [p._replace(rule="input-port") for p in range_problems(value, {"min": 1, "max": 65535}, integer=True)]


def url_credentials(parts) -> str:
    """What of a split URL is a credential: its user information, or a query parameter named like
    one (token, key, password, secret ...); "" when none."""
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "user information (user:password@)"
    secret = next((k for k, _ in parse_qsl(parts.query, keep_blank_values=True) if _secrets.is_secret_env(k)), "")
    return f"the query parameter {secret!r}" if secret else ""


@kind("url", "a URL: one of `schemes` (http, https), a host (only this host where `local`), no user information or "
      "secret query parameter unless `credentials: allow` (then printed without them: sglang_http.public_url, "
      "and never resent on a redirect to another origin)", ("schemes", "local", "credentials", "base"))
def _url(value, spec, ctx):
    if isinstance(value, (list, dict, bool, int, float)):
        return [Problem("input-type", f"is a {type(value).__name__}, not a URL", "e.g. http://127.0.0.1:30000")]
    text = str(value)
    found = control_problems(text, spec)
    if found:
        return found
    redacted = dict(spec, secret=True) if spec.get("credentials") == "allow" else spec
    schemes = spec.get("schemes") or ["http", "https"]
    try:
        parts = urlsplit(text)
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        return [Problem("input-url", f"{shown(value, redacted)} is not a URL ({exc})", "e.g. http://HOST:PORT")]
    if re.search(r"\s", text) or parts.scheme not in schemes or not host:
        return [Problem("input-url", f"{shown(value, redacted)} is not a {'/'.join(schemes)} URL with a host",
                        f"e.g. {schemes[0]}://HOST:PORT")]
    credential = url_credentials(parts)
    if credential and spec.get("credentials") != "allow":
        return [Problem("input-url-credential", f"<redacted> carries {credential}: a URL is printed, logged and "
                        "stored as it is", "give the URL without it; a key travels in its own variable "
                        "(vault-encrypted)")]
    if spec.get("local") and not is_this_host(host, ctx):
        return [Problem("input-url-host", f"{shown(value, redacted)} names {host}, not this host ({ctx.host}): "
                        "the requests carry this host's key and must never leave it",
                        "give loopback (http://127.0.0.1:PORT) or this host's own address")]
    if spec.get("base") and (parts.path not in ("", "/") or parts.query or parts.fragment):
        return [Problem("input-url", f"{shown(value, redacted)} has a path, query or fragment",
                        "give only scheme://HOST:PORT")]
    if port == 0:
        return [Problem("input-port", f"{shown(value, redacted)} names port 0", "give a port 1-65535")]
    return []


@kind("url-path", "the path of a URL: starts with '/', no whitespace or control character")
def _url_path(value, spec, ctx):
    text = str(value)
    found = control_problems(text, spec)
    if found:
        return found
    if not text.startswith("/") or re.search(r"\s", text) or ".." in text.split("/"):
        return [Problem("input-url-path", f"{shown(value, spec)} is not a URL path (starting with '/', no "
                        "whitespace or '..')", "e.g. /health_generate")]
    return []


@kind("address", "an IP address or a host name (a wildcard bind only where `wildcard: allow`)", ("wildcard",))
def _address_kind(value, spec, ctx):
    text = str(value).strip()
    found = control_problems(text, spec)
    if found:
        return found
    address = _address(text)
    if address is None and not HOST_NAME.fullmatch(text):
        return [Problem("input-address", f"{shown(value, spec)} is neither an IP address nor a host name",
                        "e.g. 127.0.0.1 or gpu-node-01")]
    if address is not None and address.is_unspecified and spec.get("wildcard") != "allow":
        return [Problem("input-address", f"{shown(value, spec)} is every address of the host",
                        "give one address")]
    return []


@kind("network", "an address, a network in CIDR without host bits, or a host name (resolved on the host)")
def _network(value, spec, ctx):
    text = str(value).strip()
    found = control_problems(text, spec)
    if found:
        return found
    if "/" in text:
        try:
            ipaddress.ip_network(text, strict=True)
            return []
        except ValueError as exc:
            return [Problem("input-network", f"{shown(value, spec)} is not a network ({exc})",
                            "e.g. 10.0.0.0/8 (no host bits)")]
    if _address(text) is None and not HOST_NAME.fullmatch(text):
        return [Problem("input-network", f"{shown(value, spec)} is neither an address, a network nor a host name",
                        "e.g. 10.0.0.0/8, 192.0.2.7 or client-01")]
    return []


@kind("endpoint", "HOST:PORT (a host name or address, [v6]:PORT), the port 1-65535")
def _endpoint(value, spec, ctx):
    text = str(value).strip()
    match = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[^:\s\[\]]+):([0-9]+)", text)
    if _guard.control_char(text) or not match or not 1 <= int(match.group(2)) <= 65535 or (
            _address(match.group(1)) is None and not HOST_NAME.fullmatch(match.group(1))):
        return [Problem("input-endpoint", f"{shown(value, spec)} is not HOST:PORT", "e.g. alertmanager-1:9093")]
    return []
