"""`make drift`'s check of the facts the rules rest on (scripts/sglang_drift.py).

A rule of the table (roles/sglang_flags/vars/main.yml) that rests on a line of a wheel's source
names it under ``watch``: the package (``sglang``, or ``flashinfer-python``), the version the line
was read in (``read_in``), the file in the wheel, a regular expression that is ``present`` (or
``absent``) there while the rule holds (multi-line mode), and what that ``means``. ``make drift``
reads each file again in the newest sglang wheel, and in the flashinfer-python wheel that version
pins, and names every rule whose fact changed: the file gone, a ``present`` text no longer there,
an ``absent`` one found. An open upstream PR a rule waits for (SGLang PR 30364, PR 36357) changes
such a line when it lands; a fact still as read says nothing.

A package at the version a watch was read in is not read again (as read); a wheel that cannot be
had (``--newest-catalog``, no network) leaves its watches "not checked", named.
"""

from __future__ import annotations

import re
import zipfile

PACKAGES = ("sglang", "flashinfer-python")


def watches(rules) -> list:
    """[(rule id, source, watch)] of every rule of ``rules`` that names facts under ``watch``."""
    out = []
    for rule in rules or []:
        for watch in rule.get("watch") or []:
            out.append((rule["id"], rule.get("source", ""), watch))
    return out


def problems(rules) -> list:
    """What is wrong with the table's watches (a list of sentences; [] when none)."""
    found = []
    for rule_id, _, watch in watches(rules):
        where = f"rule {rule_id}: watch {watch.get('file', '?')}"
        if watch.get("package") not in PACKAGES:
            found.append(f"{where}: package must be one of {', '.join(PACKAGES)}")
        if not watch.get("read_in") or not watch.get("file") or not watch.get("means"):
            found.append(f"{where}: read_in, file and means are required")
        if ("present" in watch) == ("absent" in watch):
            found.append(f"{where}: give exactly one of present, absent")
        try:
            re.compile(watch.get("present") or watch.get("absent") or "", re.M)
        except re.error as exc:
            found.append(f"{where}: not a regular expression ({exc})")
    return found


def read(wheel, name):
    """The text of ``name`` in the wheel (a zip) at ``wheel``; None when it holds no such file."""
    with zipfile.ZipFile(wheel) as archive:
        try:
            return archive.read(name).decode("utf-8", errors="replace")
        except KeyError:
            return None


def changed(watch, text) -> str:
    """Why ``watch`` no longer holds for ``text`` (the file's text, None: gone); "" when it holds."""
    if text is None:
        return f"{watch['file']} is gone"
    if "present" in watch:
        if not re.search(watch["present"], text, re.M):
            return f"{watch['file']} no longer has /{watch['present']}/"
        return ""
    if re.search(watch["absent"], text, re.M):
        return f"{watch['file']} now has /{watch['absent']}/"
    return ""


def report_lines(rules, versions, fetch) -> list:
    """The report's lines. ``versions``: {package: version} to judge (the newest sglang, the
    flashinfer-python it pins); ``fetch(package, version)``: the path of that wheel, or None when
    it cannot be had (called only for a version a watch was not read in, once per package)."""
    wheels, lines, held, unchecked = {}, [], 0, 0
    for rule_id, source, watch in watches(rules):
        package, version = watch["package"], versions.get(watch["package"]) or ""
        if version and version == str(watch["read_in"]):
            held += 1
            continue
        if package not in wheels:
            wheels[package] = fetch(package, version) if version else None
        if not wheels[package]:
            unchecked += 1
            lines.append(f"  {rule_id}: not checked, no {package} {version or '(version unknown)'} wheel "
                         f"({watch['means']}, read in {watch['read_in']})")
            continue
        why = changed(watch, read(wheels[package], watch["file"]))
        if why:
            lines.append(f"  {rule_id}: {package} {version}: {why} ({watch['means']}, read in "
                         f"{watch['read_in']}): re-read the rule, {source}")
        else:
            held += 1
    moved = len(lines) - unchecked
    head = (f"== facts the rules rest on: {moved} changed, {held} as read, {unchecked} not checked "
            f"(sglang {versions.get('sglang') or '?'}, flashinfer-python {versions.get('flashinfer-python') or '?'})")
    return [head] + lines
