# -*- coding: utf-8 -*-
"""The one reader of Prometheus' text exposition (an SGLang server's /metrics) for the
project's modules: the probe of roles/sglang_verify (speculative accept length) and the drain
of roles/sglang_gateway (running, queued and active requests). Shipped with each module as
``ansible_collections.sglang.deploy.plugins.module_utils.sglang_prometheus``."""

import math


def prometheus_samples(text, names, skip=None):
    """(name, value) of every sample of a metric in ``names``, in page order, leaving out
    comment lines, lines that contain ``skip``, values that are not numbers, NaN and Inf."""
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or (skip and skip in line):
            continue
        name = line.split("{", 1)[0].split(None, 1)[0]
        if name not in names:
            continue
        # the value follows the labels (which may contain spaces); an optional timestamp follows it
        rest = line[len(name):]
        if rest.startswith("{"):
            end = rest.rfind("}")
            if end < 0:
                continue
            rest = rest[end + 1:]
        fields = rest.split()
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        if math.isnan(value) or math.isinf(value):
            continue
        yield name, value


def parse_prometheus_sums(text, names, skip=None):
    """Sum over all label sets of each metric in names, leaving out samples whose line contains
    `skip`. A name with no sample maps to None."""
    sums = dict.fromkeys(names)
    for name, value in prometheus_samples(text, sums, skip):
        sums[name] = (sums[name] or 0.0) + value
    return sums


def parse_prometheus_value(text, name):
    """First sample of metric `name` (any labels), or None."""
    for _, value in prometheus_samples(text, (name,)):
        return value
    return None
