"""Comments and docs cite only what a reader of this repository can open.

1. No tracked text file cites material that is not in the repository: the original hand-tuning
   session of the production profile or the measurement notes by a private name, a numbered
   issue of a tracker the repository does not have, or a file of a reference directory outside
   it. The rationale lives in docs/ (docs/blackwell-profile.md, docs/local-profile.md,
   docs/containers.md, docs/sglang-versions.md); public issues are cited with their project
   ("SGLang #28407", "FlashInfer PR #3853").
2. Every backticked repository path in docs/*.md and README*.md exists (`roles/x/y.yml`,
   `docs/z.md#section`, or, in a role's README, a path relative to the role), and a
   ``docs/<page>.md#anchor`` names a heading of that page.
3. Every pointer "(docs/<page>.md, Section)" in any tracked text file names a heading of that
   page (or a heading's words before a parenthesis: "NEXTN with structured output").

Recorded tool output under tests/fixtures/ (everything there but the READMEs) is not the
project's prose and is skipped, as are binary files and this file (its examples are citations).
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (name, pattern, allowed): a hit is allowed when the text just before it matches `allowed`.
# The patterns are written so that their own source text does not match them.
CITATIONS = [
    # the word on its own or as "<word>'s"; not an option (--random-seed), an attribute
    # (args.seed), part of an identifier (manual_seed, SEED_ARGS) or a call
    ("the hand-tuning session by a private name", re.compile(r"(?<![\w.-])seed(?![\w(-])", re.I),
     re.compile(r"random\s+$", re.I)),
    ("the measurement notes by a private name", re.compile(r"\bfield[\s_-]*notes?\b", re.I), None),
    # "issue 7", "issues 3 and 5", "issue #12": allowed after a named public project or owner/repo
    ("a numbered issue without its project", re.compile(r"\bissues?[ \t]+#?\d+", re.I),
     re.compile(r"(?:sglang|flashinfer|pytorch|torch|nccl|vllm|ansible|molecule|[\w.-]+/[\w.-]+)[ \t]+$",
                re.I)),
    ("a file of a reference directory outside the repository",
     re.compile(r"(?<![\w./-])reference[/][\w.-]+"), None),
]

CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
SECTION_POINTER = re.compile(
    r"`?(docs/[\w.-]+\.md)`?,[ \t]*(?:\n[ \t]*#[ \t]*)?\"?([A-Z][^()/`\"\n]*(?:\n[ \t]*#[ \t]*[^()/`\"\n]+)*)\"?\)")


def _git_files(*args):
    out = subprocess.run(["git", "ls-files", "-z", *args], cwd=ROOT, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def _text(path):
    data = (ROOT / path).read_bytes()
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _is_recorded_output(path):
    return path.startswith("tests/fixtures/") and not path.endswith(".md")


THIS = str(Path(__file__).resolve().relative_to(ROOT))


def tracked_texts():
    """(path, text) of every tracked text file as it is in the working tree."""
    for path in _git_files("--cached"):
        if path == THIS or _is_recorded_output(path) or not (ROOT / path).is_file():
            continue
        text = _text(path)
        if text is not None:
            yield path, text


def find_citations(text):
    """[(line number, what, the matched text)] of every citation of outside material."""
    hits = []
    for what, pattern, allowed in CITATIONS:
        for m in pattern.finditer(text):
            before = text[max(0, m.start() - 40):m.start()]
            if allowed is not None and allowed.search(before):
                continue
            hits.append((text.count("\n", 0, m.start()) + 1, what, m.group(0)))
    return sorted(hits)


def slug(heading):
    """GitHub's anchor of a Markdown heading."""
    text = heading.strip().lower()
    return "".join(c for c in text.replace(" ", "-") if c.isalnum() or c in "-_")


def headings(path):
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    fence = False
    out = []
    for line in lines:
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            out.append(line.lstrip("#").strip())
    return out


def _code_spans(text):
    """Inline code spans of a Markdown text, outside fenced blocks."""
    fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            for m in CODE_SPAN.finditer(line):
                yield number, m.group(1)


class Repo:
    """The repository's files: tracked ones and new ones git does not ignore, as on disk."""

    def __init__(self):
        self.files = {p for p in _git_files("--cached", "--others", "--exclude-standard") if (ROOT / p).exists()}
        self.tracked = {p for p in _git_files("--cached") if (ROOT / p).is_file()}
        self.dirs = {str(Path(p).parents[i]) for p in self.files for i in range(len(Path(p).parents) - 1)}
        self.top = {p.split("/", 1)[0] for p in self.files}

    def exists(self, path):
        path = path.rstrip("/")
        if any(c in path for c in "*?["):
            return any(fnmatch.fnmatchcase(p, path) or fnmatch.fnmatchcase(p, path + "/*") for p in self.files)
        return path in self.files or path in self.dirs


def repository_paths(md_path, text, repo):
    """[(line, the path as written, its candidates from the root, anchor)] of the backticked paths:
    in a role's README a path is the role's own file, or else one from the repository's root."""
    base = str(Path(md_path).parent)
    out = []
    for number, span in _code_spans(text):
        for word in span.split():
            word = word.rstrip(".,;:)")
            path, _, anchor = word.partition("#")
            path = re.sub(r":\d+(?:-\d+)?$", "", path)      # file.py:12
            path = re.sub(r"<[^<>]*>|\{[^{}]*\}", "*", path)  # placeholders: sglang-<version>.json
            if "/" not in path or path.startswith(("/", "./", "../", "~")) or "://" in word or "=" in path:
                continue
            first = path.split("/", 1)[0]
            candidates = []
            if base != "." and f"{base}/{first}" in repo.dirs:
                candidates.append(f"{base}/{path}")
            if first in repo.top:
                candidates.append(path)
            if candidates:
                out.append((number, word, candidates, anchor))
    return out


def markdown_pages(repo):
    """The tracked docs/*.md and README*.md pages."""
    return sorted(p for p in repo.tracked if p.endswith(".md") and (
        (p.startswith("docs/") and p.count("/") == 1) or Path(p).name.startswith("README")))


# ---------------------------------------------------------------------------------------------
# the guard
# ---------------------------------------------------------------------------------------------
def test_no_tracked_file_cites_material_outside_the_repository():
    found = [f"{path}:{line}: {what}: {hit!r}" for path, text in tracked_texts()
             for line, what, hit in find_citations(text)]
    assert found == [], (
        "cite what is in the repository (docs/blackwell-profile.md, docs/local-profile.md, "
        "docs/containers.md) or a public source with its project:\n" + "\n".join(found))


def test_every_backticked_repository_path_in_the_docs_exists():
    repo = Repo()
    missing = []
    for page in markdown_pages(repo):
        text = (ROOT / page).read_text(encoding="utf-8")
        for line, word, candidates, anchor in repository_paths(page, text, repo):
            path = next((p for p in candidates if repo.exists(p)), None)
            if path is None:
                missing.append(f"{page}:{line}: `{word}` (no {' or '.join(candidates)})")
            elif anchor and path.endswith(".md") and anchor not in {slug(h) for h in headings(path)}:
                missing.append(f"{page}:{line}: `{word}` (no heading with the anchor #{anchor} in {path})")
    assert missing == [], "\n".join(missing)


def test_every_docs_section_pointer_names_a_heading():
    bad = []
    for path, text in tracked_texts():
        for m in SECTION_POINTER.finditer(text):
            page = m.group(1)
            section = re.sub(r"\s*\n\s*#\s*", " ", m.group(2)).strip()
            line = text.count("\n", 0, m.start()) + 1
            if not (ROOT / page).is_file():
                bad.append(f"{path}:{line}: {page} does not exist")
            elif not any(slug(h) == slug(section) or h.startswith(section + " (") for h in headings(page)):
                bad.append(f"{path}:{line}: {page} has no section {section!r}")
    assert bad == [], "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# the patterns themselves: what they flag and what they leave alone
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    "# Seed: triton was the attention backend",
    "kept because the seed proved it",
    "the seed's command",
    "SEED = [",
    "(field notes, section 4)",
    "field-notes section 1",
    "ml_env generations (issue 5)",
    "Issue 7: three hosts",
    "see issue #12",
    "as reference" + "/sglang_preflight_probe.py does",
])
def test_a_citation_of_outside_material_is_found(text):
    assert find_citations(text), text


@pytest.mark.parametrize("text", [
    '"--random-seed":{"default":null}',
    '"--seed", "1",',
    "torch.manual_seed(args.seed)",
    "ap.add_argument('--seed', type=int)",
    '"--remote-instance-weight-loader-seed-instance-ip"',
    "sets a random seed for the benchmark",
    "SEED_ARGS = {}",
    "seeds and seeded generators",
    "FlashInfer issue #3398",
    "SGLang issue 28407",
    "sgl-project/sglang issue 123",
    "https://github.com/sgl-project/sglang/issues/28407",
    "docs/reference/x.md and roles/x/reference/y",
    "the field of notes",
])
def test_legitimate_words_are_not_flagged(text):
    assert find_citations(text) == [], text


def test_backticked_paths_are_resolved_from_the_role_or_the_root():
    repo = Repo()
    text = ("`roles/sglang_flags/vars/main.yml` `tasks/main.yml` `plugins/module_utils/sglang_http.py` `docs/nope.md` "
            "`roles/sglang_flags/files/catalogs/sglang-<version>.json` `/root/ml-env` "
            "`reports/latest.md` `srt/server_args.py` `ansible-playbook playbooks/lint.yml -l x` "
            "`docs/sglang-versions.md#removed-flags` `https://flashinfer.ai/whl`\n")
    found = {word: paths for _, word, paths, _ in repository_paths("roles/sglang_verify/README.md", text, repo)}
    assert found == {
        "roles/sglang_flags/vars/main.yml": ["roles/sglang_flags/vars/main.yml"],
        "tasks/main.yml": ["roles/sglang_verify/tasks/main.yml"],
        "plugins/module_utils/sglang_http.py": ["plugins/module_utils/sglang_http.py"],
        "docs/nope.md": ["docs/nope.md"],
        "roles/sglang_flags/files/catalogs/sglang-<version>.json": ["roles/sglang_flags/files/catalogs/sglang-*.json"],
        "playbooks/lint.yml": ["playbooks/lint.yml"],
        "docs/sglang-versions.md#removed-flags": ["docs/sglang-versions.md"],
    }
    exists = {word: [p for p in paths if repo.exists(p)] for word, paths in found.items()}
    assert exists["plugins/module_utils/sglang_http.py"] == ["plugins/module_utils/sglang_http.py"]
    assert exists["docs/nope.md"] == []
    assert all(exists[w] for w in found if w != "docs/nope.md")


def test_a_section_pointer_is_read_across_a_wrapped_comment():
    text = ("  # all-reduce switches itself off (docs/blackwell-profile.md,\n"
            "  # Communication flags).\n"
            "x (rule r; `docs/sglang-versions.md`, \"Project checks\")\n")
    found = [(m.group(1), re.sub(r"\s*\n\s*#\s*", " ", m.group(2)).strip()) for m in SECTION_POINTER.finditer(text)]
    assert found == [("docs/blackwell-profile.md", "Communication flags"),
                     ("docs/sglang-versions.md", "Project checks")]
