"""The lint's second check (tasks/lint.yml): every host's variables against the argument specs
of the roles (``roles/<role>/meta/argument_specs.yml``), with ``validate_argument_spec``.

``sglang_flags_spec_files`` finds the specs, ``sglang_flags_lint_spec`` keeps what the
inventory can be judged on, and ``sglang_flags_spec_findings`` turns the results into findings
(flags/report.py prints them with the rules' findings).
"""

from __future__ import annotations

import glob
import os


def sglang_flags_lint_spec(spec) -> dict:
    """A role's argument spec options with ``required`` and ``default`` dropped (recursively):
    the lint checks the types and choices of what the inventory sets. What a play passes is
    checked when the role runs, and a spec's ``default`` may be documentation ("computed
    from facts") rather than a value."""
    if isinstance(spec, dict):
        return {
            k: sglang_flags_lint_spec(v)
            for k, v in spec.items()
            if k not in ("required", "default")
        }
    if isinstance(spec, list):
        return [sglang_flags_lint_spec(v) for v in spec]
    return spec


def sglang_flags_spec_findings(results) -> list:
    """Findings from a loop of ``validate_argument_spec`` results (one per role)."""
    findings = []
    for res in results or []:
        item = str(res.get("item", ""))
        role = os.path.basename(os.path.dirname(os.path.dirname(item))) or item
        errors = res.get("argument_errors") or []
        if errors:
            for err in errors:
                findings.append(
                    {
                        "rule": "argument-spec",
                        "severity": "error",
                        "status": "violation",
                        "flag": f"role {role}",
                        "value": None,
                        "message": f"{err}.",
                        "fix": f"correct the variable (see roles/{role}/meta/argument_specs.yml)",
                        "source": f"roles/{role}/meta/argument_specs.yml",
                    }
                )
        elif res.get("failed") or res.get("failed_when_result") or (
            res.get("msg") and "passed" not in str(res.get("msg"))
        ):
            findings.append(
                {
                    "rule": "argument-spec-unchecked",
                    "severity": "warning",
                    "status": "unknown",
                    "flag": f"role {role}",
                    "value": None,
                    "message": f"could not check the variables against the spec: {res.get('msg')}",
                    "fix": f"check roles/{role}/meta/argument_specs.yml and the variables it names",
                    "source": f"roles/{role}/meta/argument_specs.yml",
                }
            )
    return findings


def sglang_flags_spec_files(roles_dir, roles=None) -> list:
    """``roles_dir/*/meta/argument_specs.yml`` (sorted), limited to ``roles`` when given."""
    found = sorted(glob.glob(os.path.join(str(roles_dir), "*", "meta", "argument_specs.yml")))
    if roles:
        wanted = set(roles)
        found = [f for f in found if os.path.basename(os.path.dirname(os.path.dirname(f))) in wanted]
    return found
