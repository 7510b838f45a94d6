"""DIMACS shortest-path graphs (``.gr``/``.gr.gz``, 9th DIMACS Implementation Challenge).

Lines: ``c <text>`` comments (whole lines only: a ``c`` inside an arc line is an error, not the
start of a comment); one problem line ``p sp <n> <m>`` before the arcs; arcs
``a <u> <v> <w>`` with 1-based ids and an integer weight, directed; every field is an exact
decimal integer (``1e3`` or ``7.0`` is refused, naming the line). The arc count must equal
``m``. Weights are returned as an int64 ``(m,)`` column. Self-loops are dropped and duplicate
arcs removed (the first one's weight is kept).

32-bit limits: ``n`` at most 2^31 - 1 (int32 vertex ids) and weights in [0, 2^31 - 1]; a file
beyond them is refused with the line, never wrapped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..arguments import VERTEX_MAX, WEIGHT_MAX
from ..errors import FileFormatError
from ._text import (COMMENT_TAIL, INTEGER, READ_ERRORS, first_inexact_line, format_error, is_integer_text, iter_lines,
                    out_of_memory, quiet_parse, require_regular_file)
from .parsed import ParsedGraph, canonical_edges


def _is_count(token: str) -> bool:
    return token.isascii() and token.isdigit()  # str.isdigit alone also takes "²", which int() refuses


def _problem_line(path: Path, number: int, line: str, tokens: list[str]) -> tuple[int, int]:
    """``(n, m)`` of a ``p sp N M`` line, checked (non-negative, n fits 32-bit ids)."""
    if len(tokens) != 4 or tokens[1] != "sp" or not _is_count(tokens[2]) or not _is_count(tokens[3]):
        raise format_error(path, number, f"bad problem line {line.strip()!r} (want 'p sp N M', "
                                         "N and M non-negative integers)")
    n, m = int(tokens[2]), int(tokens[3])
    if n > VERTEX_MAX:
        raise format_error(path, number, f"the problem line states {n:,} vertices; 32-bit vertex ids "
                                         f"allow at most {VERTEX_MAX:,}")
    return n, m


# A line of the arc section: an arc, or a comment. A comment is a whole line whose first field
# starts with "c"; a "c" anywhere else (``a 2 3 12c34``) is part of a field, never a comment.
_ARC_SECTION_LINE = (rb"a[ \t]+" + INTEGER + rb"[ \t]+" + INTEGER + rb"[ \t]+" + INTEGER
                     + rb"|c" + COMMENT_TAIL)  # (c: see _is_comment)


def _is_comment(line: str) -> bool:
    return line.startswith("c")


def _non_integer(path: Path, number: int, line: str, tokens: list[str]) -> Exception | None:
    bad = next((t for t in tokens[1:] if not is_integer_text(t)), None)
    if bad is None:
        return None
    hint = " (a comment is a whole line starting with 'c', never the end of a line)" if "c" in bad else ""
    return format_error(path, number, f"not an integer: {bad!r} in {line.strip()!r}{hint}")


def _scan_for_error(path: Path, n: int | None) -> Exception:
    """The exact first bad line (only called when the fast parse or its checks fail)."""
    seen_problem = False
    arcs = 0
    m = None
    for number, line in iter_lines(path):
        tokens = line.split()
        if not tokens or _is_comment(line):
            continue
        kind = tokens[0]
        if kind == "p":
            if seen_problem:
                return format_error(path, number, "second problem line")
            try:
                n, m = _problem_line(path, number, line, tokens)
            except FileFormatError as exc:
                return exc
            seen_problem = True
            continue
        if kind.startswith("c"):  # pandas' comment option would keep an indented one as a row
            return format_error(path, number, f"a comment line starts with 'c' in its first column, found "
                                              f"{line.rstrip()!r}")
        if kind != "a":
            return format_error(path, number, f"unknown line type {kind!r}")
        if not seen_problem:
            return format_error(path, number, "arc before the problem line")
        if len(tokens) != 4:
            return format_error(path, number, f"arc line needs 'a u v w', found {line.strip()!r}")
        problem = _non_integer(path, number, line, tokens)
        if problem is not None:
            return problem
        u, v, w = int(tokens[1]), int(tokens[2]), int(tokens[3])
        if not (1 <= u <= n and 1 <= v <= n):
            return format_error(path, number, f"vertex id outside [1, {n}] in {line.strip()!r}")
        if w < 0:
            return format_error(path, number, f"negative arc weight in {line.strip()!r}")
        if w > WEIGHT_MAX:
            return format_error(path, number, f"arc weight {w} does not fit 32 bits (at most {WEIGHT_MAX}) "
                                              f"in {line.strip()!r}")
        arcs += 1
    if not seen_problem:
        return format_error(path, None, "no problem line 'p sp N M'")
    if arcs != m:
        return format_error(path, None, f"{arcs} arcs, but the problem line states {m}")
    return format_error(path, None, "unreadable arc lines")


def read_dimacs(path: str | Path) -> ParsedGraph:
    path = Path(path)
    require_regular_file(path)
    # The header (comments and the problem line) is read with a short loop; the arcs in bulk.
    header_lines = 0
    n = m = None
    for number, line in iter_lines(path):
        tokens = line.split()
        if not tokens or _is_comment(line):
            header_lines = number
            continue
        if tokens[0] == "p":
            n, m = _problem_line(path, number, line, tokens)
            header_lines = number
        break
    if n is None:
        raise _scan_for_error(path, None)
    try:
        with quiet_parse():
            frame = pd.read_csv(
                path, sep=r"\s+", header=None, names=["t", "u", "v", "w"], skiprows=header_lines,
                comment="c", dtype={"t": "category", "u": np.int64, "v": np.int64, "w": np.int64},
                engine="c", compression="infer",
            )
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame({"t": pd.Categorical([]), "u": [], "v": [], "w": []})
    except MemoryError:
        raise out_of_memory(path) from None
    except FileFormatError:
        raise
    except (ValueError, OverflowError, pd.errors.ParserError, UnicodeDecodeError, *READ_ERRORS):
        raise _scan_for_error(path, n) from None
    types = frame["t"].cat.categories
    u = frame["u"].to_numpy(np.int64)
    v = frame["v"].to_numpy(np.int64)
    w = frame["w"].to_numpy(np.int64)
    if (len(frame) and (list(types) != ["a"])) or len(frame) != m:
        raise _scan_for_error(path, n)
    if u.size and (min(u.min(), v.min()) < 1 or max(u.max(), v.max()) > n or w.min() < 0 or w.max() > WEIGHT_MAX):
        raise _scan_for_error(path, n)
    # pandas' comment="c" cuts a line at any "c", and its int64 columns take "1e3" and "7.": the
    # parse above is exact only where neither happened, which this scan of the arc lines checks.
    if first_inexact_line(path, _ARC_SECTION_LINE, skip_lines=header_lines, suspicious=b"c.eE") is not None:
        raise _scan_for_error(path, n)
    return canonical_edges(u - 1, v - 1, n, w)
