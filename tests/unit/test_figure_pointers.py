"""A figure quoted outside docs/figures.md points at its row instead of being copied (one home
per figure, docs/figures.yml, rendered by `make figures`): every pointer
`docs/figures.md, "<what>"` in a tracked text file names the start of a row of docs/figures.yml
(its `what`, spaces folded), so a renamed or removed row does not leave a pointer to nothing."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SELF = Path(__file__).resolve()
# docs/figures.md, "<the start of a row's what>": the quoted words may run over lines (Markdown,
# or a comment's next line with its #)
POINTER = re.compile(r"docs/figures\.md`?,\s*\"([^\"]+)\"")


def fold(text):
    return " ".join(re.sub(r"\n\s*#", " ", text).split())


def rows():
    return [fold(str(entry["what"])) for entry in yaml.safe_load((ROOT / "docs" / "figures.yml").read_text())]


def dangling(text, whats):
    """The pointers of this text that name no row: (line, the words)."""
    for match in POINTER.finditer(text):
        words = fold(match.group(1))
        if not any(what.startswith(words) for what in whats):
            yield text.count("\n", 0, match.start()) + 1, words


def tracked_texts():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for path in sorted(p for p in out.decode().split("\0") if p):
        full = ROOT / path
        if full == SELF or path == "docs/figures.md" or not full.is_file():
            continue
        try:
            yield path, full.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def test_every_pointer_to_a_figure_names_a_row_of_figures_yml():
    whats = rows()
    pointers = [(path, text) for path, text in tracked_texts() if POINTER.search(text)]
    bad = ["%s:%d: %r" % (path, line, words) for path, text in pointers for line, words in dangling(text, whats)]
    assert not bad, "these point at no row of docs/figures.yml (its `what`): %s" % bad
    assert len(pointers) >= 3, "the scan found too few pointers to docs/figures.md: %s" % [p for p, _ in pointers]


@pytest.mark.parametrize("text, expected", [
    ('(its time: docs/figures.md, "on-host flag\n   validation by SGLang\'s own parser")', []),
    ('# how often: docs/figures.md, "SGLang\'s own stop (SIGTERM to exit,\n# journal)"', []),
    ('the stop: docs/figures.md, "SGLang\'s stop time"', [(1, "SGLang's stop time")]),
    ('\n`docs/figures.md`, "a row that went"', [(2, "a row that went")]),
])
def test_a_pointer_to_no_row_is_found(text, expected):
    assert list(dangling(text, rows())) == expected
