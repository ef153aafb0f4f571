# -*- coding: utf-8 -*-
"""The release state of a host (roles/sglang_release), in one place.

A release is the unit file and environment file of sglang_server, kept as
``<release_dir>/<id>/unit`` and ``<release_dir>/<id>/env`` with ``release.json`` beside them:
``{"id", "generation", "args", "recorded_at"}`` (the ml_env generation the environment file
names, the launch flags without secret flags, the UTC time of the record). The id is the
content hash of both files, as roles/sglang_release has always named releases.

The local fact (``/etc/ansible/facts.d/sglang_release.fact``) is the index: ``current`` and
``previous`` (ids, with their ``*_generation`` and ``*_args``), ``history`` (the last ``keep``
ids, newest first) and ``generations`` ({id: generation}). Every write is atomic
(plugins/module_utils/sglang_files.py). Releases recorded before release.json existed
are read from their environment copy and the index.

Shipped with plugins/modules/sglang_release.py and
plugins/modules/ml_env_prune_plan.py. Standard library only.
"""

import base64
import hashlib
import json
import os
import re
import time

from ansible_collections.sglang.deploy.plugins.module_utils.flags.model import SECRET_FLAGS
from ansible_collections.sglang.deploy.plugins.module_utils.sglang_files import write_bytes

# where roles/sglang_release keeps them (sglang_release_dir, sglang_release_fact)
RELEASE_DIR = "/var/lib/sglang-deploy/releases"
FACT = "/etc/ansible/facts.d/sglang_release.fact"
RELEASE_FILE = "release.json"
# the release's quality reference (roles/sglang_verify, docs/quality-gate.md): it follows the
# release through restores and goes with its directory
QUALITY_FILE = "quality.json"
SLOTS = ("current", "previous")
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# sglang_server writes the generation into the environment file as SGLANG_DEPLOY_ML_ENV="<name>"
_GENERATION = re.compile(r'^SGLANG_DEPLOY_ML_ENV="([^"]+)"\s*$', re.MULTILINE)


class ReleaseStateError(Exception):
    """A release or index that cannot be used; the message names the fix."""


# --- reading ------------------------------------------------------------------------------------

def release_id(unit_bytes, env_bytes):
    """sha256 of base64(unit) + newline + base64(env), first 12 hex characters."""
    joined = base64.b64encode(unit_bytes) + b"\n" + base64.b64encode(env_bytes)
    return hashlib.sha256(joined).hexdigest()[:12]


def is_secret(name):
    """Whether a flag's value is a secret (SECRET_FLAGS; names compared folded: api_key is api-key)."""
    return str(name).lstrip("-").replace("_", "-") in SECRET_FLAGS


def public_args(flags):
    """The flag set without secret flags: what a release may record."""
    return dict((name, value) for name, value in (flags or {}).items() if not is_secret(name))


def env_generation(text):
    """The generation an environment file names, or '' when it names none."""
    match = _GENERATION.search(text or "")
    return match.group(1) if match else ""


def _read_bytes(path):
    with open(path, "rb") as handle:
        return handle.read()


def _read_json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


# the type of each key an index may hold (a missing key, or null, reads as empty)
_INDEX_TYPES = dict([(slot, str) for slot in SLOTS] + [(slot + "_generation", str) for slot in SLOTS]
                    + [(slot + "_args", dict) for slot in SLOTS] + [("history", list), ("generations", dict)])


def _load_index(fact):
    """(data, problem): the index's JSON object and '' when it can be used; ({}, '') when it is
    missing (no release recorded yet); ({}, why) when it is unreadable, not JSON, not an object
    or holds a key of the wrong type."""
    if not os.path.lexists(fact):
        return {}, ""
    try:
        data = _read_json(fact)
    except (OSError, ValueError) as exc:
        return {}, "cannot be read as JSON (%s)" % exc
    if not isinstance(data, dict):
        return {}, "is not a JSON object (%s)" % type(data).__name__
    wrong = sorted(key for key, kind in _INDEX_TYPES.items()
                   if data.get(key) is not None and not isinstance(data[key], kind))
    return (({}, "has keys of the wrong type: %s" % ", ".join(wrong)) if wrong else (data, ""))


def read_index(fact, strict=True):
    """The index with every key present. A missing file is an empty index; an unreadable or
    malformed one raises (strict) or reads as empty."""
    data, problem = _load_index(fact)
    if problem and strict:
        raise ReleaseStateError(
            "%s %s. Fix: move it aside; the release copies under the release directory stay, and "
            "the next record writes a new index." % (fact, problem))
    index = {"history": [], "generations": {}}
    for slot in SLOTS:
        index[slot] = data.get(slot) or ""
        index[slot + "_generation"] = data.get(slot + "_generation") or ""
        index[slot + "_args"] = data.get(slot + "_args") if isinstance(data.get(slot + "_args"), dict) else {}
    if isinstance(data.get("history"), list):
        index["history"] = [r for r in data["history"] if isinstance(r, str) and r]
    if isinstance(data.get("generations"), dict):
        index["generations"] = dict((r, g) for r, g in data["generations"].items() if isinstance(g, str) and g)
    return index


def _copies(release_dir, rid):
    path = os.path.join(release_dir, rid)
    return os.path.join(path, "unit"), os.path.join(path, "env"), os.path.join(path, RELEASE_FILE)


def _stored(release_dir, rid):
    """release.json of a release, or {} when it has none (recorded before it existed)."""
    path = _copies(release_dir, rid)[2]
    try:
        data = _read_json(path)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("id") == rid else {}


def _copy_generation(release_dir, rid):
    """The generation a release's environment copy names ('' when it names none or is gone)."""
    try:
        return env_generation(_read_bytes(_copies(release_dir, rid)[1]).decode("utf-8", "replace"))
    except OSError:
        return ""


def _describe(release_dir, index, rid):
    """(generation, args) of a release: its release.json, else its environment copy and the
    index slot that names it."""
    stored = _stored(release_dir, rid)
    if stored:
        args = stored.get("args")
        return stored.get("generation") or "", args if isinstance(args, dict) else {}
    generation = _copy_generation(release_dir, rid)
    for slot in SLOTS:
        if rid and index[slot] == rid:
            return generation or index[slot + "_generation"], index[slot + "_args"]
    return generation or index["generations"].get(rid, ""), {}


def resolve(release_dir, fact, target):
    """{id, generation, args, unit, env} of `target` (current, previous or a release id)."""
    index = read_index(fact)
    rid = index[target] if target in SLOTS else target
    if not rid:
        raise ReleaseStateError(
            "no '%s' release is recorded in %s (a release is recorded when a host passes its gate), "
            "so there is nothing to go back to. The host is left as it is." % (target, fact))
    unit, env, _ = _copies(release_dir, rid)
    if not ID_RE.match(rid) or not (os.path.isfile(unit) and os.path.isfile(env)):
        raise ReleaseStateError(
            "release '%s' has no unit and environment copy in %s, so it cannot be restored. Nothing "
            "was written: the host is as it was before this restore. Fix: choose a recorded release "
            "id, one of %s." % (rid, os.path.join(release_dir, rid), ", ".join(index["history"]) or "(none)"))
    generation, args = _describe(release_dir, index, rid)
    return {"id": rid, "generation": generation, "args": args, "unit": unit, "env": env}


def current_quality(release_dir, fact):
    """(quality reference, id) of the current release: (None, id) when it has none, (None, None)
    when no release is recorded. An unreadable index or reference reads as none."""
    rid = read_index(fact, strict=False)["current"]
    if not rid or not ID_RE.match(rid):
        return None, None
    try:
        data = _read_json(os.path.join(release_dir, rid, QUALITY_FILE))
    except (OSError, ValueError):
        return None, rid
    return (data if isinstance(data, dict) else None), rid


def list_releases(release_dir, fact):
    """(index, releases): the index and, newest first, every release it names with its
    generation, its args and whether its copies are on the host."""
    index = read_index(fact)
    releases = []
    for rid in _named(index):
        generation, args = _describe(release_dir, index, rid)
        unit, env, _ = _copies(release_dir, rid)
        releases.append({"id": rid, "generation": generation, "args": args,
                         "recorded_at": _stored(release_dir, rid).get("recorded_at", ""),
                         "present": os.path.isfile(unit) and os.path.isfile(env)})
    return index, releases


def _named(index):
    """Every release id the index names: current, previous, the history, the generations map."""
    names = []
    for rid in [index["current"], index["previous"]] + index["history"] + sorted(index["generations"]):
        if rid and rid not in names:
            names.append(rid)
    return names


def _index_to_protect(release_dir, fact, what):
    """The index a prune protects `what` by. A missing one (a fresh host) is empty; an unreadable
    or malformed one raises, since reading it as empty would protect nothing and let the prune
    remove what a recorded release runs."""
    problem = _load_index(fact)[1]
    if problem:
        raise ReleaseStateError(
            "the release index %s %s, so the %s of the recorded releases are unknown and nothing was "
            "removed. Fix: repair the file (a JSON object: current, previous, history, generations; "
            "the copies under %s name each release's generation and flags), or restore it from a "
            "backup; moving it aside makes the next prune protect no release at all." % (fact, problem, what, release_dir))
    return read_index(fact)


def protected_generations(release_dir, fact):
    """{generation: [release ids]} for every release the index names. Each source of a release's
    generation counts (release.json, the environment copy, the index), so none is ever pruned
    while a release that runs it is kept. A missing index protects nothing; an unreadable or
    malformed one raises ReleaseStateError."""
    index = _index_to_protect(release_dir, fact, "ml_env generations")
    found = {}

    def add(generation, rid):
        if generation and rid not in found.setdefault(generation, []):
            found[generation].append(rid)

    for rid in _named(index):
        for generation in (_stored(release_dir, rid).get("generation"), _copy_generation(release_dir, rid),
                           index["generations"].get(rid)):
            add(generation or "", rid)
    for slot in SLOTS:
        add(index[slot + "_generation"], index[slot] or slot)
    return found


def protected_model_paths(release_dir, fact):
    """{model-path: [release ids]}: the model directory every release the index names runs
    (its recorded flags), so that no model revision is removed while a release that loads it is
    kept. A missing index protects nothing; an unreadable or malformed one raises ReleaseStateError."""
    index = _index_to_protect(release_dir, fact, "model directories")
    found = {}

    def add(args, rid):
        path = (args or {}).get("model-path") if isinstance(args, dict) else None
        if path and rid not in found.setdefault(path, []):
            found[path].append(rid)

    for rid in _named(index):
        add(_describe(release_dir, index, rid)[1], rid)
    for slot in SLOTS:
        add(index[slot + "_args"], index[slot] or slot)
    return found


# --- writing ------------------------------------------------------------------------------------

def _dump(data):
    return (json.dumps(data, indent=4, sort_keys=True, separators=(",", ": ")) + "\n").encode("utf-8")


def write_index(fact, index):
    os.makedirs(os.path.dirname(fact) or ".", mode=0o755, exist_ok=True)
    write_bytes(fact, _dump(index), 0o644)


def _with_current(release_dir, index, rid, generation, args, keep):
    """The index once `rid` is current: the old current becomes previous, rid heads the history."""
    new = dict(index)
    if rid != index["current"]:
        new["previous"] = index["current"]
        new["previous_generation"], new["previous_args"] = index["current_generation"], index["current_args"]
    new["current"], new["current_generation"], new["current_args"] = rid, generation, args
    history = [rid] + [r for r in index["history"] if r != rid]
    new["history"] = history[:max(int(keep), 1)]
    new["generations"] = {}
    for kept in _named(dict(new, generations={})):
        kept_generation = generation if kept == rid else _describe(release_dir, index, kept)[0]
        if kept_generation:
            new["generations"][kept] = kept_generation
    return new


def record(release_dir, fact, unit_path, env_path, generation, args, keep, check_mode=False, quality=""):
    """Keep the unit and environment in place as a release and make it current.
    ``quality``: a quality reference the gate wrote (roles/sglang_verify) to keep with it; it is
    moved into the release. (changed, id); in check_mode nothing is written."""
    try:
        unit, env = _read_bytes(unit_path), _read_bytes(env_path)
    except OSError as exc:
        raise ReleaseStateError("cannot read the release to record (%s). Fix: run sglang_server "
                                "(it writes %s and %s) before sglang_release." % (exc, unit_path, env_path))
    named = env_generation(env.decode("utf-8", "replace"))
    if generation and named and generation != named:
        raise ReleaseStateError(
            "generation %r was given but %s names SGLANG_DEPLOY_ML_ENV=%r. Fix: pass the "
            "sglang_server_generation of the same render that wrote the file." % (generation, env_path, named))
    rid, generation = release_id(unit, env), generation or named
    stored = {"id": rid, "generation": generation, "args": public_args(args)}
    old = _stored(release_dir, rid)
    stored["recorded_at"] = old.get("recorded_at") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    index = read_index(fact)
    new = _with_current(release_dir, index, rid, generation, stored["args"], keep)
    copy_unit, copy_env, copy_json = _copies(release_dir, rid)
    files = [(copy_unit, unit), (copy_env, env), (copy_json, _dump(stored))]
    if quality and os.path.isfile(quality):
        files.append((os.path.join(os.path.dirname(copy_unit), QUALITY_FILE), _read_bytes(quality)))
    stale = [(path, data) for path, data in files if not _same(path, data, path == copy_json)]
    changed = bool(stale) or new != index or not os.path.exists(fact)
    if changed and not check_mode:
        os.makedirs(os.path.dirname(copy_unit), mode=0o700, exist_ok=True)
        os.chmod(os.path.dirname(copy_unit), 0o700)
        for path, data in stale:
            write_bytes(path, data, 0o600)
        write_index(fact, new)
    if quality and os.path.isfile(quality) and not check_mode:
        os.unlink(quality)
    return changed, rid


def _same(path, data, as_json):
    try:
        if as_json:
            return _read_json(path) == json.loads(data.decode("utf-8"))
        return _read_bytes(path) == data
    except (OSError, ValueError):
        return False


def mark_current(release_dir, fact, rid, keep=None, check_mode=False):
    """After a restore: `rid` becomes current with its own generation and args, the old current
    becomes previous. (changed, index); in check_mode nothing is written."""
    release = resolve(release_dir, fact, rid)
    index = read_index(fact)
    new = _with_current(release_dir, index, rid, release["generation"], release["args"],
                        keep if keep is not None else max(len(index["history"]), 2))
    changed = new != index
    if changed and not check_mode:
        write_index(fact, new)
    return changed, new
