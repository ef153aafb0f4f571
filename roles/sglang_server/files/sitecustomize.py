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
"""

import json
import os
import sys

REDACTED = "<redacted>"
# shorter values are not replaced: they would mangle ordinary output
MIN_LENGTH = 4


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
                    values.append(value)
    except (OSError, ValueError):
        return []
    return sorted(set(values), key=len, reverse=True)


def redact(text, secrets):
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text


class RedactingStream:
    """A text stream that writes through to ``stream`` with every secret replaced."""

    def __init__(self, stream, secrets):
        self._stream = stream
        self._secrets = secrets

    def write(self, text):
        if isinstance(text, str):
            text = redact(text, self._secrets)
        return self._stream.write(text)

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
