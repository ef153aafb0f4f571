# -*- coding: utf-8 -*-
"""Keeps the server's API keys out of its own output (installed by roles/sglang_server).

SGLang 0.5.23 logs its resolved arguments at start (``server_args={...}``, with ``api_key``
and ``admin_api_key`` in clear) and its launch command; both go to the journal. Python imports
``sitecustomize`` at start from PYTHONPATH, which the environment file of the unit sets (only
when a key is configured) to the directory holding this file, so every Python process of the
service, the workers that multiprocessing spawns included, runs this first: it reads the
values of the keys file named by SGLANG_DEPLOY_REDACT_FILE (``name: "json string"`` lines, as
templates/sglang.keys.yaml.j2 writes them) and wraps sys.stdout and sys.stderr so that every
occurrence of a value is written as ``<redacted>``. logging handlers, print(), warnings and
tracebacks all write through them. Standard library only; never fails the process: without a
readable file it does nothing.

Each value is also replaced in the forms other code prints it in: JSON-escaped (``json.dumps``),
repr-escaped (``repr``, ``%r``) and percent-encoded (a URL). A value written in two pieces (one
write ends with its beginning) is caught too: a write's tail that could begin a value is held
back until the next write or flush. What this cannot see (docs/security.md, "What the journal
redaction cannot cover"): output that does not pass through sys.stdout / sys.stderr as text
(C extensions, NCCL and CUDA writing to the file descriptors, a non-Python child process,
sys.stdout.buffer), a value split by a flush between its pieces, and other encodings of it
(base64, hex, a hash).
"""

import json
import os
import sys
from urllib.parse import quote, quote_plus

REDACTED = "<redacted>"
# shorter values are not replaced: they would mangle ordinary output (lint refuses keys under 16
# characters: plugins/module_utils/flags/exposure.py)
MIN_LENGTH = 4


def forms(value):
    """``value`` and the escaped spellings Python code prints it in."""
    return {value, json.dumps(value)[1:-1], repr(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
            quote(value), quote(value, safe=""), quote_plus(value)}


def read_secrets(path):
    """The values of the keys file, longest first; [] when it cannot be read."""
    values = []
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("#") or ":" not in line:
                    continue
                text = line.split(":", 1)[1].strip()
                value = json.loads(text) if text.startswith('"') else text
                if isinstance(value, str) and len(value) >= MIN_LENGTH:
                    values.extend(forms(value))
    except (OSError, ValueError):
        return []
    return sorted(set(values), key=len, reverse=True)


def redact(text, secrets):
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


def partial_tail(text, secrets):
    """How many characters at the end of ``text`` could begin a secret (0: none)."""
    longest = 0
    for secret in secrets:
        for size in range(min(len(secret) - 1, len(text)), longest, -1):
            if text.endswith(secret[:size]):
                longest = size
                break
    return longest


class RedactingStream:
    """A text stream that writes through to ``stream`` with every secret replaced; the end of a
    write that could begin a secret waits for the next write (or a flush)."""

    def __init__(self, stream, secrets):
        self._stream = stream
        self._secrets = secrets
        self._held = ""

    def write(self, text):
        if not isinstance(text, str):
            return self._stream.write(text)
        whole = redact(self._held + text, self._secrets)
        keep = partial_tail(whole, self._secrets)
        self._held = whole[len(whole) - keep:] if keep else ""
        if len(whole) > keep:
            self._stream.write(whole[:len(whole) - keep])
        return len(text)

    def flush(self):
        if self._held:
            held, self._held = self._held, ""
            self._stream.write(held)
        return self._stream.flush()

    def close(self):
        self.flush()
        return self._stream.close()

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def install(path=None):
    """Wrap sys.stdout and sys.stderr when the keys file has secrets; returns how many."""
    path = path or os.environ.get("SGLANG_DEPLOY_REDACT_FILE", "")
    secrets = read_secrets(path) if path else []
    if secrets:
        for name in ("stdout", "stderr"):
            stream = getattr(sys, name, None)
            if stream is not None and not isinstance(stream, RedactingStream):
                setattr(sys, name, RedactingStream(stream, secrets))
    return len(secrets)


try:
    install()
except Exception:  # noqa: BLE001 - must never stop a Python process from starting
    pass
