"""A server reachable from other hosts needs an API key (docs/security.md, "A key wherever the
port is reachable"), judged offline.

SGLang answers every request without a key unless ``--api-key`` is set (sglang/srt/utils/auth.py,
0.5.23). roles/sglang_server gives the key from ``sglang_server_api_key`` (vault-encrypted). A
bind other than loopback (``--host``; SGLang's default is 127.0.0.1) with no key is an error,
unless ``sglang_server_allow_no_api_key`` names, as text, why no key is needed there (a private
network only this machine reaches): then it is a warning that repeats the reason.

A key that is set must have at least MIN_KEY_LENGTH characters: a short one is guessable, and
the server's output redaction (roles/sglang_server/files/sitecustomize.py) skips values under 4
characters, which would mangle ordinary output.
"""

from __future__ import annotations

import ipaddress
import re
import socket

# what a key must be (a string without whitespace), shared with the server's render guard
from ansible_collections.sglang.deploy.plugins.module_utils import sglang_input_guard as _guard

SOURCE = "plugins/module_utils/flags/exposure.py"
MIN_KEY_LENGTH = 16
KEY_VARIABLES = ("sglang_server_api_key", "sglang_server_admin_api_key")
# characters of an IPv4 address as inet_aton reads it (127.1, 0x7f.1)
_INET_ATON = re.compile(r"^[0-9A-Fa-fXx.]+$")


def bind_address(host):
    """The address SGLang's ``--host`` value names: an IPv4-mapped IPv6 address as its IPv4
    address, the IPv4 short forms as inet_aton reads them (127.1, 0x7f.1, 0), brackets
    dropped; None for a host name, "" and "*" (roles/sglang_firewall reads wildcards with it)."""
    text = str(host).strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        address = None
    if address is not None:
        return getattr(address, "ipv4_mapped", None) or address
    if not text or not _INET_ATON.match(text):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text))
    except OSError:
        return None


def loopback(host) -> bool:
    """Whether SGLang's ``--host`` value binds loopback only: unset (SGLang's default
    127.0.0.1), ``localhost``, 127.0.0.0/8 in any inet_aton spelling, ::1 (bracketed too)."""
    if host is None or str(host).strip().lower() == "localhost":
        return True
    address = bind_address(host)
    return address is not None and address.is_loopback  # "", "*" and names: not known to be


def _finding(severity, host, message, fix, rule="exposed-without-key", flag="host"):
    return {"rule": rule, "severity": severity,
            "status": "violation" if severity == "error" else "waived", "flag": flag, "value": host,
            "message": message, "fix": fix, "source": SOURCE}


def _short_key_findings(lengths):
    return [_finding("error", None, f"{name} has {lengths[name]} characters: a short key is guessable, and the "
                     "server's output redaction skips keys under 4 characters",
                     f"at least {MIN_KEY_LENGTH} characters: ansible-vault encrypt_string \"$(openssl rand -hex 32)\" "
                     f"--name {name}", "input-key-short", name)
            for name in KEY_VARIABLES if 0 < int(lengths.get(name) or 0) < MIN_KEY_LENGTH]


def sglang_key_problem(value) -> str:
    """Why ``value`` cannot be an API key ("" when it can, or is not set), never quoting it."""
    return _guard.key_problem(value)


def _key_shape_findings(problems):
    return [_finding("error", None, f"{name} {problems[name]}: SGLang and smg compare the bearer token "
                     "with the key as written, and the keys file would hold it as text",
                     f"a string without whitespace of at least {MIN_KEY_LENGTH} characters: ansible-vault "
                     f"encrypt_string \"$(openssl rand -hex 32)\" --name {name}", "input-key-shape", name)
            for name in KEY_VARIABLES if (problems or {}).get(name)]


def sglang_flags_key_findings(flags, key_lengths=None, allow_no_key="", key_problems=None) -> list:
    """An error when ``flags`` (the flags as argparse reads them) bind beyond loopback and no API
    key is set, a warning instead when ``allow_no_key`` gives the reason; an error for a key
    shorter than MIN_KEY_LENGTH, and for one that ``key_problems`` (KEY_VARIABLES ->
    sglang_key_problem of the key) refuses. ``key_lengths``: KEY_VARIABLES -> the length of each
    key (the keys themselves never come here)."""
    lengths = key_lengths if isinstance(key_lengths, dict) else {}
    findings = _short_key_findings(lengths) + _key_shape_findings(key_problems)
    host = (flags or {}).get("host") if isinstance(flags, dict) else None
    if int(lengths.get("sglang_server_api_key") or 0) > 0 or loopback(host):
        return findings
    what = (f"{host!r} (sglang_server_args) binds beyond loopback and sglang_server_api_key is empty: whoever reaches "
            "the port uses the model without a key (SGLang checks none)")
    reason = allow_no_key.strip() if isinstance(allow_no_key, str) else ""
    if reason:
        return findings + [_finding("warning", host, f"{what}; accepted in sglang_server_allow_no_api_key: {reason}", "")]
    if allow_no_key not in (None, "", False):
        what += f"; sglang_server_allow_no_api_key must say why as text, not {allow_no_key!r}"
    return findings + [_finding("error", host, what,
                     "set sglang_server_api_key, vault-encrypted (README.md, 'Production use', API keys: "
                     "ansible-vault encrypt_string \"$(openssl rand -hex 32)\" --name sglang_server_api_key), "
                     "or bind 127.0.0.1, or name the risk in sglang_server_allow_no_api_key: "
                     "'<why no key is needed on this network>'")]
