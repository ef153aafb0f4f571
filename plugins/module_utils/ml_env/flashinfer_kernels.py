# -*- coding: utf-8 -*-
# Copyright: sglang_deploy contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""FlashInfer's prebuilt-kernel packages as FlashInfer publishes them: which distribution carries
a GPU's kernels for a flashinfer-python version, how their versions must match, and the
requirement lines that install them. Plain functions, standard library only: ml_env's file-list
check runs them on the hosts (ml_env/flashinfer.py), the deploy rules on the controller
(plugins/module_utils/flags/deploy.py).

Read from flashinfer-python's own wheels on PyPI (0.6.18.post1, 0.7.0, 0.7.0.post1, 0.7.1, 0.7.2,
0.7.4: ``flashinfer/jit/env.py``, ``flashinfer/__main__.py``, ``flashinfer/jit/_cuda_architecture.py``)
and FlashInfer's repository (PRs 4514 and 5096, ``flashinfer-jit-cache-provider/``);
docs/ml-env-checks.md has the detail:

* up to 0.6.18.post1 ``flashinfer-jit-cache`` is one wheel holding every module;
* from 0.7.0 it is a shim without kernels, and each architecture's modules are a distribution of
  their own, ``flashinfer-jit-cache-<tag>`` (``sm90a``, ``sm100a``, ``sm120f``, ...), package
  ``flashinfer_jit_cache.providers.<tag>``, found only through the shim. The shim requires every
  provider of its CUDA/CPU platform; FlashInfer's own minimal install is the shim and the one
  provider, both ``--no-deps`` (``flashinfer install-jit-cache-wheel --mode minimal``);
* versions: flashinfer-cubin equal to flashinfer-python's, the shim flashinfer-python's with the
  CUDA label (``0.7.2+cu130``), each provider equal to the shim. 0.7.0 and 0.7.1 refuse to import
  on a mismatch; from 0.7.2 a mismatched package is ignored with a warning (cubins downloaded at
  first use, modules compiled at first use).
"""

import re

INDEX = "https://flashinfer.ai/whl"
SHIM = "flashinfer-jit-cache"
CUBIN = "flashinfer-cubin"
PYTHON = "flashinfer-python"
PROVIDERS_FROM = (0, 7, 0)
MISMATCH_IGNORED_FROM = (0, 7, 2)
# The targets of the x86_64 cu130 jit-cache build (FlashInfer's ci/cuda-versions.json, x86_64_arch_list
# "7.5 8.0 8.9 9.0a 10.0a 10.3a 12.0f"; PR 4757 dropped 7.5): the providers a host can be offered.
PUBLISHED = ("sm75", "sm80", "sm89", "sm90a", "sm100a", "sm103a", "sm120f")

_TAG = re.compile(r"^sm(\d{1,2})(\d)([af]?)$")
_PROVIDER = re.compile(r"^flashinfer-jit-cache-(sm\d{2,3}[af]?)$")


def release(version):
    """(0, 7, 2) of "0.7.2+cu130", "0.7.0.post1", "0.7.0rc3"; () when it names none."""
    m = re.match(r"^\s*v?(\d+(?:\.\d+)*)", str(version or ""))
    return tuple(int(p) for p in m.group(1).split(".")) if m else ()


def public(version):
    """The version without its local label: "0.7.2+cu130" -> "0.7.2"."""
    return str(version or "").split("+", 1)[0]


def label(version):
    """The local label: "0.7.2+cu130" -> "cu130"; "" without one."""
    text = str(version or "")
    return text.split("+", 1)[1] if "+" in text else ""


def cuda_label(cuda):
    """"13.0" -> "cu130" (FlashInfer's index and local-version label); "" when not a version."""
    m = re.match(r"^\s*(\d+)\.(\d+)", str(cuda or ""))
    return "cu%s%s" % (m.group(1), m.group(2)) if m else ""


def providers_era(version):
    """Whether flashinfer ``version`` ships its jit-cache as a shim and per-architecture providers."""
    rel = release(version)
    return bool(rel) and rel >= PROVIDERS_FROM


def provider_tag(name):
    """"sm120f" of the distribution flashinfer-jit-cache-sm120f (any spelling); "" for another name."""
    m = _PROVIDER.match(re.sub(r"[-_.]+", "-", str(name or "")).lower())
    return m.group(1) if m else ""


def provider_dist(tag):
    return "%s-%s" % (SHIM, tag)


def _parse_tag(tag):
    m = _TAG.match(str(tag or "").lower())
    return (int(m.group(1)), int(m.group(2)), m.group(3)) if m else None


def _device(sm):
    """(major, minor) of "12.0"; None otherwise."""
    m = re.match(r"^\s*(\d+)\.(\d+)\s*$", str(sm or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def score(tag, sm):
    """FlashInfer's preference for a provider target on a device (flashinfer/jit/_cuda_architecture.py,
    cuda_binary_target_compatibility_score): an ``a`` target runs only on its exact SM; an ``f`` or
    unsuffixed one on every SM of its major whose minor is at least its own. None: it cannot run."""
    target, device = _parse_tag(tag), _device(sm)
    if target is None or device is None:
        return None
    major, minor, suffix = target
    if (major, minor) == device and suffix in ("", "a"):
        return (4 if not suffix else 3, minor)
    if suffix == "a" or major != device[0] or minor > device[1]:
        return None
    return (2 if suffix == "f" else 1, minor)


def serves(tag, sm):
    return score(tag, sm) is not None


def provider_for(sm, published=PUBLISHED):
    """The published provider tag FlashInfer would pick for SM ``sm`` ("12.0" -> "sm120f"); ""."""
    scored = [(score(tag, sm), tag) for tag in published]
    scored = [(s, tag) for s, tag in scored if s is not None]
    return max(scored)[1] if scored else ""


def install_hint(flashinfer_version, cuda, sm):
    """What to install for SM ``sm``: the requirement lines and where from, in words."""
    version, cu = public(flashinfer_version) or "<flashinfer-python's version>", cuda_label(cuda) or "cuXYZ"
    if flashinfer_version and not providers_era(flashinfer_version):
        return ("%s==%s+%s from %s/%s (before 0.7.0 one wheel holds every architecture's modules)"
                % (SHIM, version, cu, INDEX, cu))
    tag = provider_for(sm) or "sm<the GPU's SM>"
    return ("%s==%s+%s beside %s==%s+%s, both with --no-deps from %s/%s (ml_env_packages_nodeps; "
            "FlashInfer's own minimal install, `flashinfer install-jit-cache-wheel --mode minimal "
            "--sm %s`)" % (provider_dist(tag), version, cu, SHIM, version, cu, INDEX, cu, tag))


def version_problems(found):
    """What FlashInfer does with mismatched kernel packages: a list of sentences, [] when they match.

    ``found``: {distribution: version} of flashinfer-python, flashinfer-cubin, the shim and every
    provider (installed, or exact pins of a spec); a package that is absent is not judged."""
    fi = found.get(PYTHON)
    if not fi:
        return []
    if release(fi) and release(fi) < MISMATCH_IGNORED_FROM and providers_era(fi):
        effect = "flashinfer %s refuses to import (RuntimeError, flashinfer/jit/env.py)" % fi
    elif providers_era(fi):
        effect = ("flashinfer %s ignores it with a warning: its cubins are downloaded at first use, its "
                  "modules compiled at first use" % fi)
    else:
        effect = "flashinfer %s refuses to import (RuntimeError, flashinfer/jit/env.py)" % fi
    out = []
    cubin = found.get(CUBIN)
    if cubin and public(cubin) != public(fi):
        out.append("%s %s is not flashinfer-python's %s: %s" % (CUBIN, cubin, public(fi), effect))
    shim = found.get(SHIM)
    if shim and public(shim) != public(fi):
        out.append("%s %s is not flashinfer-python's %s: %s" % (SHIM, shim, public(fi), effect))
    for name in sorted(n for n in found if provider_tag(n)):
        version = found[name]
        if public(version) != public(fi):
            out.append("%s %s is not flashinfer-python's %s: %s" % (name, version, public(fi), effect))
        elif shim and version != shim:
            out.append("%s %s is not the shim's %s (FlashInfer requires the same CUDA-specific version): "
                       "the provider is ignored with a warning" % (name, version, shim))
    return out


def spec_hits(with_deps, nodeps, sm, cuda=""):
    """What the deploy rules flashinfer-kernel-version, flashinfer-jit-cache-provider and
    flashinfer-jit-cache-all-providers find in one ml_env spec: {rule id: {"value", "flag"}}.

    ``with_deps`` / ``nodeps``: [(canonical name, exact pin or "")] of ml_env_packages and
    ml_env_packages_nodeps; ``sm``: the GPU's compute capability ("12.0"; "" unknown); ``cuda``:
    the CUDA the spec installs for ("13.0"), when the shim's pin names none. A spec that pins
    neither flashinfer-python nor the shim exactly is not judged."""
    pins = dict((n, v) for n, v in list(with_deps) + list(nodeps) if v)
    deps, bare = set(n for n, _ in with_deps), set(n for n, _ in nodeps)
    era = pins.get(PYTHON) or public(pins.get(SHIM, ""))
    hits = {}
    problems = version_problems(dict((n, v) for n, v in pins.items()
                                     if n in (PYTHON, CUBIN, SHIM) or provider_tag(n)))
    if problems:
        hits["flashinfer-kernel-version"] = {"value": "; ".join(problems), "flag": "ml_env_packages"}
    if not era:
        return hits
    providers = sorted(n for n in deps | bare if provider_tag(n))
    shim_label = label(pins.get(SHIM, ""))
    if shim_label.startswith("cu") and len(shim_label) > 3:
        cuda = "%s.%s" % (shim_label[2:-1], shim_label[-1])
    hint = install_hint(era, cuda, sm)
    why = []
    if providers and not providers_era(era):
        why.append("%s for flashinfer %s, which has no provider distributions (they begin with 0.7.0)"
                   % (", ".join(providers), era))
    elif providers and SHIM not in deps | bare:
        why.append("%s without the %s shim, through which alone FlashInfer finds providers"
                   % (", ".join(providers), SHIM))
    elif SHIM in bare and SHIM not in deps and providers_era(era) and sm \
            and not any(serves(provider_tag(n), sm) for n in providers):
        why.append("%s with --no-deps and no provider for SM %s (%s)" % (
            SHIM, sm, ", ".join(providers) if providers else "none pinned"))
    if why:
        hits["flashinfer-jit-cache-provider"] = {
            "value": why[0], "flag": "ml_env_packages_nodeps", "fix_packages": hint}
    if SHIM in deps and providers_era(era):
        hits["flashinfer-jit-cache-all-providers"] = {
            "value": "%s==%s" % (SHIM, pins.get(SHIM, "")) if pins.get(SHIM) else SHIM,
            "flag": "ml_env_packages", "fix_packages": hint}
    return hits
