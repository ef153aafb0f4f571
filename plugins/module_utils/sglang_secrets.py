# -*- coding: utf-8 -*-
"""Secret flag values out of text that is shown: journal lines, launch commands, reprs; and which
environment variable (or URL query parameter) holds a credential by its name (``is_secret_env``).

A secret is found by the flag's normalised name (plugins/module_utils/flags/model.py
SECRET_FLAGS), in every spelling SGLang and Python print it: ``--api-key VALUE``,
``--api_key=VALUE``, ``'api_key': 'VALUE'`` (the ``server_args={...}`` line SGLang 0.5.23 logs
at start), ``"api_key": "VALUE"`` (JSON), ``api_key='VALUE'`` (a repr) and ``api-key: VALUE``
(YAML). The value becomes ``<redacted>``; ``None``/``null`` and empty values are left as they
are. Shipped as ``ansible_collections.sglang.deploy.plugins.module_utils.sglang_secrets``. Standard
library only.
"""

import re

from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import SECRET_FLAGS

REDACTED = "<redacted>"
_NOT_SECRET = ("None", "null", "''", '""', "")

_NAMES = "|".join(sorted({re.escape(s) for flag in SECRET_FLAGS for s in (flag, flag.replace("-", "_"))},
                         key=len, reverse=True))
_VALUE = r"""("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^\s,;)}\]]+)"""
# --api-key VALUE, --api-key=VALUE, --api_key VALUE
_CLI = re.compile(r"(--(?:%s))(=|\s+)%s" % (_NAMES, _VALUE))
# 'api_key': 'VALUE', "api_key": "VALUE", api_key='VALUE', api-key: VALUE (not part of a longer name)
_KEYED = re.compile(r"""(?<![\w-])(['"]?)(%s)\1(\s*[:=]\s*)%s""" % (_NAMES, _VALUE))


def _keep_or_redact(value):
    if value in _NOT_SECRET:
        return value
    if value[:1] in ("'", '"') and value[-1:] == value[:1]:
        return value[0] + REDACTED + value[0]
    return REDACTED


def redact_text(text):
    """``text`` with the value of every secret flag replaced by ``<redacted>``."""
    if not text:
        return text
    text = _CLI.sub(lambda m: m.group(1) + m.group(2) + _keep_or_redact(m.group(3)), text)
    return _KEYED.sub(lambda m: m.group(1) + m.group(2) + m.group(1) + m.group(3) + _keep_or_redact(m.group(4)),
                      text)


def redact_lines(lines):
    """Every line through redact_text."""
    return [redact_text(line) for line in lines or []]


# the words of a variable name that make it a credential (HF_TOKEN, WANDB_API_KEY, DB_PASS,
# MYSQL_PWD), and the endings of a word that do (PGPASSWORD, GITHUBTOKEN, AWS_SECRETKEY); a word
# that only begins with one is not (TOKENIZERS_PARALLELISM, MONKEY, KEYBOARD)
_SECRET_ENV_WORDS = frozenset(("TOKEN", "TOKENS", "KEY", "KEYS", "APIKEY", "SECRET", "SECRETS", "PASSWORD",
                               "PASSWD", "PASS", "PWD", "CREDENTIAL", "CREDENTIALS", "AUTH", "PASSPHRASE",
                               "COOKIE", "SESSION", "BEARER", "PRIVATE"))
_SECRET_ENV_ENDINGS = ("TOKEN", "PASSWORD", "PASSWD", "SECRET", "APIKEY", "ACCESSKEY", "SECRETKEY",
                       "CREDENTIALS", "PASSPHRASE")


def is_secret_env(name):
    """Whether the environment variable (or query parameter) ``name`` holds a credential: one of
    its words (split at '_', '-' and '.') is one of _SECRET_ENV_WORDS, or ends in one of
    _SECRET_ENV_ENDINGS (PGPASSWORD); ``PWD`` alone is the shell's working directory."""
    text = str(name).upper()
    if text == "PWD":
        return False
    words = [w for w in re.split(r"[_.\-]", text) if w]
    return any(w in _SECRET_ENV_WORDS or w.endswith(_SECRET_ENV_ENDINGS) for w in words)
