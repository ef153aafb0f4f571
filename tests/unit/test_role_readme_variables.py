"""A role's variables are described once, in its meta/argument_specs.yml, and its README agrees
with it (docs/architecture.md; the prometheus-community roles check theirs the same way):

- every variable with the role's prefix that a variable table of the README lists (a table whose
  header starts with `variable` or `parameter`, first column) is an option of one of the role's
  entry points, so a renamed or removed variable does not stay documented;
- every option with the role's prefix of any entry point is named in the README: in the first
  column of a table, or in backticks (`sglang_verify_port`); a row's shorthand for a sibling
  (`sglang_monitoring_scrape_interval`, `_evaluation_interval`) names it too;
- a README without a variable table says where the descriptions are (`defaults/main.yml` or
  `meta/argument_specs.yml`) and still names every option.

Roles without an argument spec (sglang_defaults: shared defaults, no entry point) are skipped."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta" / "argument_specs.yml").is_file())
# an inline code span, also over a line break (not over a blank line)
CODE = re.compile(r"(?<!`)`((?:[^`\n]|\n(?!\s*\n))+)`(?!`)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
NAME = re.compile(r"[a-z_][a-z0-9_]*")
TABLE_HEADERS = ("variable", "parameter")
POINTER = re.compile(r"`(?:defaults/main\.yml|meta/argument_specs\.yml)`")


def spec_options(role):
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    return {name for entry in specs.values() for name in (entry.get("options") or {})}


def cells(line):
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def tables(text):
    """[(header's first cell, [first cells of the rows])] of the Markdown tables of a text."""
    out, rows, in_table = [], None, False
    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            row = cells(line)
            if not in_table:
                rows = []
                out.append((row[0].lower() if row else "", rows))
                in_table = True
            elif row and not set(row[0]) <= set("-: "):
                rows.append(row[0])
        else:
            in_table = False
    return out


def names_in(cell_text):
    """The names a cell or a code span spells out, with `_suffix` shorthands as written."""
    return [word for span in CODE.findall(cell_text) for word in NAME.findall(span)]


def readme_names(text, prefix):
    """(names the variable tables list with the prefix, every name the README mentions)."""
    listed, mentioned = set(), set()
    for header, rows in tables(text):
        for first in rows:
            words = names_in(first)
            if header in TABLE_HEADERS:
                listed.update(w for w in words if w.startswith(prefix))
            mentioned.update(words)
            # `sglang_server_restore_unit` / `_env`: a shorthand names the sibling of the full name
            full = [w for w in words if w.startswith(prefix)]
            for short in (w for w in words if w.startswith("_")):
                for name in full:
                    mentioned.update(name[:i] + short for i, c in enumerate(name) if c == "_" and i > 0)
    mentioned.update(names_in(FENCE.sub("", text)))  # an example in a fenced block names nothing
    return listed, mentioned


def drift(role, text, options):
    """(listed but no option, options not named, no table and no pointer) for one README."""
    prefix = role + "_"
    listed, mentioned = readme_names(text, prefix)
    own = {o for o in options if o.startswith(prefix)}
    has_table = any(h in TABLE_HEADERS for h, _ in tables(text))
    return (sorted(listed - options), sorted(own - mentioned),
            not has_table and not POINTER.search(text))


@pytest.mark.parametrize("role", ROLES)
def test_the_readme_names_the_argument_spec_and_nothing_else(role):
    text = (ROOT / "roles" / role / "README.md").read_text(encoding="utf-8")
    unknown, unnamed, nowhere = drift(role, text, spec_options(role))
    assert not unknown, f"roles/{role}/README.md lists variables no entry point of its argument spec has: {unknown}"
    assert not unnamed, f"roles/{role}/README.md names none of these options of its argument spec: {unnamed}"
    assert not nowhere, f"roles/{role}/README.md has no variable table and points at no defaults/main.yml"


README = """\
# r

| variable | default | meaning |
| --- | --- | --- |
| `r_port` | 1 | the port |
| `r_scrape_interval`, `_evaluation_interval` | 15s | globals |

| fact | set by | meaning |
| --- | --- | --- |
| `r_result` | main | not an input |

Also `r_timeout`.
"""


@pytest.mark.parametrize("options, expected", [
    ({"r_port", "r_scrape_interval", "r_evaluation_interval", "r_timeout"}, ([], [], False)),
    # a variable renamed in the spec: the table's old name and the new option are both found
    ({"r_listen_port", "r_scrape_interval", "r_evaluation_interval", "r_timeout"},
     (["r_port"], ["r_listen_port"], False)),
    # an option the README never names
    ({"r_port", "r_scrape_interval", "r_evaluation_interval", "r_timeout", "r_retries"}, ([], ["r_retries"], False)),
    # options of another prefix are not the role's to document
    ({"r_port", "r_scrape_interval", "r_evaluation_interval", "r_timeout", "other_x"}, ([], [], False)),
])
def test_the_check_finds_a_drift(options, expected):
    assert drift("r", README, options) == expected


def test_a_readme_without_a_table_must_point_at_the_defaults():
    bare = "# r\n\nThe options: `r_port`, `r_timeout`.\n"
    assert drift("r", bare, {"r_port", "r_timeout"}) == ([], [], True)
    pointed = bare + "Each described in `meta/argument_specs.yml`.\n"
    assert drift("r", pointed, {"r_port", "r_timeout"}) == ([], [], False)


def test_the_check_fails_on_a_real_readme_that_drifted():
    """roles/cuda_toolkit's README with one table row renamed, and roles/sglang_gateway's (names in
    a list, no table) with one name dropped: both are found."""
    text = (ROOT / "roles" / "cuda_toolkit" / "README.md").read_text(encoding="utf-8")
    options = spec_options("cuda_toolkit")
    renamed = sorted(options)[0]
    assert f"| `{renamed}` |" in text
    drifted = text.replace(f"| `{renamed}` |", f"| `{renamed}_old` |")
    assert drift("cuda_toolkit", drifted, options)[0] == [renamed + "_old"]
    text = (ROOT / "roles" / "sglang_gateway" / "README.md").read_text(encoding="utf-8")
    dropped = text.replace("`sglang_gateway_queue_size`,", "")
    assert drift("sglang_gateway", dropped, spec_options("sglang_gateway")) == ([], ["sglang_gateway_queue_size"], False)
