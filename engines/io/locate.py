"""Where in a graph file an edge comes from: the line to name when one of its values is refused
after parsing (a CSR position means nothing to the person who wrote the file).

Only called on error paths, so a line-by-line scan is fine here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._text import is_integer_text, iter_lines


@dataclass(frozen=True)
class EdgeSource:
    line: int
    text: str  # the line as written, stripped
    reverse: bool  # the edge is the reverse of this entry (a symmetric file, or --symmetrize)
    symmetry: str | None = None  # a Matrix Market file's symmetry ("skew-symmetric" ...)


def _pair(tokens: list[str]) -> tuple[int, int] | None:
    if len(tokens) < 2 or not (is_integer_text(tokens[0]) and is_integer_text(tokens[1])):
        return None
    return int(tokens[0]) - 1, int(tokens[1]) - 1


def _find(entries, u: int, v: int, symmetry: str | None) -> EdgeSource | None:
    """The first entry naming u -> v, else the first naming v -> u (a reverse comes after every
    entry as written, so an entry of its own wins, as in canonical_edges)."""
    reverse = None
    for number, line, pair in entries:
        if pair == (u, v):
            return EdgeSource(number, line.strip(), False, symmetry)
        if reverse is None and pair == (v, u):
            reverse = EdgeSource(number, line.strip(), True, symmetry)
    return reverse


def _matrix_market_entries(path: Path, found: dict):
    in_entries = False
    for number, line in iter_lines(path):
        if number == 1:
            tokens = line.lower().split()
            found["symmetry"] = tokens[4] if len(tokens) == 5 else None
            continue
        if not in_entries:
            in_entries = bool(line.strip()) and not line.startswith("%")  # the size line
            continue
        yield number, line, _pair(line.split())


def _dimacs_entries(path: Path):
    for number, line in iter_lines(path):
        tokens = line.split()
        if tokens and tokens[0] == "a":
            yield number, line, _pair(tokens[1:])


def edge_source(path: str | Path, format: str, u: int, v: int) -> EdgeSource | None:
    """The line of a Matrix Market or DIMACS file that gives the 0-based edge u -> v (None for
    other formats, or when no line does)."""
    path = Path(path)
    if format == "matrix_market" and not path.name.endswith((".tar.gz", ".tgz")):
        found: dict = {}
        source = _find(_matrix_market_entries(path, found), u, v, None)
        return None if source is None else EdgeSource(source.line, source.text, source.reverse,
                                                        found.get("symmetry"))
    if format == "dimacs":
        return _find(_dimacs_entries(path), u, v, None)
    return None


def first_data_line(path: str | Path, comment: str | None) -> tuple[int, str] | None:
    """``(number, text)`` of the first line that is neither blank nor a ``comment`` line."""
    for number, line in iter_lines(Path(path)):
        text = line.strip()
        if text and not (comment and text.startswith(comment)):
            return number, text
    return None
