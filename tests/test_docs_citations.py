"""Every citation of docs/<file>.md §N(.M)* in the repository resolves to a section of docs/.

A citation names its file: ``docs/algorithm.md §5.12``, ``docs/protocol.md §7``, ``docs/inputs.md
§3`` (the older short form ``algorithm.md §5.12`` is read the same way, into docs/). Sections
listed after it (``docs/algorithm.md §4.1-§4.3``, ``docs/protocol.md §2, §7``) belong to the same
file. A section exists when docs/<file>.md has a heading starting with its number (``## 5.``,
``### 5.12``). Inside docs/ a bare ``§N`` means the page's own section.

A bare ``§N`` elsewhere does not say which file it cites, and is forbidden everywhere outside
docs/ except in the paths of ``BARE_ALLOWED`` (``bare_citations()`` counts them per folder): those
are still being converted, and each leaves the list once it has none.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
DOC_NAMES = ("algorithm", "protocol", "inputs")
SUFFIXES = (".py", ".cu", ".cuh", ".md", ".j2")
# the only places outside docs/ where a bare § is still allowed, for now: a folder ends in "/"
BARE_ALLOWED: tuple[str, ...] = ()  # every folder converted (issue 31)

SECTION = r"§\s?(\d+(?:\.\d+)*)"
# a named citation and the sections listed right after it
NAMED = re.compile(
    r"(?<![\w/.-])(docs/)?(" + "|".join(DOC_NAMES) + r")\.md`?\)?,?\s+" + SECTION
    + r"((?:\s*(?:,|-|–|and|or|to)\s*" + SECTION + r")*)"
)
ANY = re.compile(SECTION)
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?(?:\s|$)", re.MULTILINE)


def repository_files() -> list[Path]:
    """Tracked files and untracked ones git does not ignore, with a cited suffix."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split("\n")
    return sorted({ROOT / p for p in out if p.endswith(SUFFIXES) and (ROOT / p).is_file()})


def sections(name: str) -> set[str]:
    path = DOCS / f"{name}.md"
    return set(HEADING.findall(path.read_text(encoding="utf-8"))) if path.is_file() else set()


def scan(path: Path):
    """(named, bare): named = [(line, file name, section)], bare = [(line, section)]."""
    text = path.read_text(encoding="utf-8", errors="replace")
    named, covered = [], set()
    for match in NAMED.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        cited = [match.group(3)] + ANY.findall(match.group(4) or "")
        named.extend((line, match.group(2), section) for section in cited)
        covered.update(m.start() for m in ANY.finditer(text, match.start(), match.end()))
    bare = [
        (text.count("\n", 0, m.start()) + 1, m.group(1))
        for m in ANY.finditer(text)
        if m.start() not in covered
    ]
    return named, bare


def folder(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0] if len(rel.parts) > 1 else "."


def bare_allowed(path: Path) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return any(rel.startswith(p) if p.endswith("/") else rel == p for p in BARE_ALLOWED)


def bare_citations() -> Counter:
    """Bare ``§N`` citations outside docs/, per top folder ('.' for files at the root)."""
    counts = Counter()
    for path in repository_files():
        if folder(path) != "docs":
            counts[folder(path)] += len(scan(path)[1])
    return +counts


def test_the_docs_exist_with_their_sections():
    for name in DOC_NAMES:
        found = sections(name)
        assert found, f"docs/{name}.md has no numbered sections"
    assert {"5.12", "3.6", "13.4"} <= sections("algorithm")
    assert {"2.4", "7", "9", "10"} <= sections("protocol")
    assert {"1.2", "3", "4"} <= sections("inputs")


def test_every_named_citation_resolves():
    known = {name: sections(name) for name in DOC_NAMES}
    missing = []
    count = 0
    for path in repository_files():
        named, bare = scan(path)
        if folder(path) == "docs":  # a bare § inside a page cites that page
            named += [(line, path.stem, section) for line, section in bare]
        for line, name, section in named:
            count += 1
            if section not in known[name]:
                missing.append(f"{path.relative_to(ROOT)}:{line}: docs/{name}.md §{section}")
    assert count > 100, f"only {count} citations found: the pattern no longer matches"
    assert not missing, "citations of sections that do not exist:\n" + "\n".join(missing)


def test_no_bare_citations_outside_the_allowed_paths():
    bare = [
        f"{path.relative_to(ROOT)}:{line}: §{section}"
        for path in repository_files()
        if folder(path) != "docs" and not bare_allowed(path)
        for line, section in scan(path)[1]
    ]
    assert not bare, "a citation must name its file (docs/<file>.md §N):\n" + "\n".join(bare)


def test_no_citation_points_outside_the_repository():
    """The design inputs (../shared/spec) are not in a clone: cite docs/ instead."""
    outside = re.compile(r"shared/spec/\w+\.md")
    found = [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
        for path in repository_files()
        if path.suffix == ".md"
        for text in [path.read_text(encoding="utf-8", errors="replace")]
        for m in outside.finditer(text)
    ]
    assert not found, "Markdown cites ../shared/spec (not in a clone): " + ", ".join(found)


def test_the_pattern_reads_lists_and_bare_citations():
    named = [
        (m.group(2), m.group(3), ANY.findall(m.group(4)))
        for m in NAMED.finditer("see docs/algorithm.md §4.1-§4.3 and protocol.md §2, §7; \u00a79 alone")
    ]
    assert named == [("algorithm", "4.1", ["4.3"]), ("protocol", "2", ["7"])]
