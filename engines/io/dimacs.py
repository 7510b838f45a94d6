"""DIMACS shortest-path graphs (``.gr``/``.gr.gz``, 9th DIMACS Implementation Challenge).

Lines: ``c <text>`` comments; one problem line ``p sp <n> <m>`` before the arcs; arcs
``a <u> <v> <w>`` with 1-based ids and an integer weight, directed. The arc count must equal
``m``. Weights are returned as an int64 ``(m,)`` column. Self-loops are dropped and duplicate
arcs removed (the first one's weight is kept).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ._text import format_error, iter_lines
from .parsed import ParsedGraph, canonical_edges


def _scan_for_error(path: Path, n: int | None) -> Exception:
    """The exact first bad line (only called when the fast parse or its checks fail)."""
    seen_problem = False
    arcs = 0
    m = None
    for number, line in iter_lines(path):
        tokens = line.split()
        if not tokens or tokens[0] == "c":
            continue
        kind = tokens[0]
        if kind == "p":
            if seen_problem:
                return format_error(path, number, "second problem line")
            if len(tokens) != 4 or tokens[1] != "sp" or not tokens[2].isdigit() or not tokens[3].isdigit():
                return format_error(path, number, f"bad problem line {line.strip()!r} (want 'p sp N M')")
            seen_problem = True
            n, m = int(tokens[2]), int(tokens[3])
            continue
        if kind != "a":
            return format_error(path, number, f"unknown line type {kind!r}")
        if not seen_problem:
            return format_error(path, number, "arc before the problem line")
        if len(tokens) != 4:
            return format_error(path, number, f"arc line needs 'a u v w', found {line.strip()!r}")
        try:
            u, v, w = int(tokens[1]), int(tokens[2]), int(tokens[3])
        except ValueError:
            return format_error(path, number, f"non-integer field in {line.strip()!r}")
        if not (1 <= u <= n and 1 <= v <= n):
            return format_error(path, number, f"vertex id outside [1, {n}] in {line.strip()!r}")
        if w < 0:
            return format_error(path, number, f"negative arc weight in {line.strip()!r}")
        arcs += 1
    if not seen_problem:
        return format_error(path, None, "no problem line 'p sp N M'")
    if arcs != m:
        return format_error(path, None, f"{arcs} arcs, but the problem line states {m}")
    return format_error(path, None, "unreadable arc lines")


def read_dimacs(path: str | Path) -> ParsedGraph:
    path = Path(path)
    if not path.is_file():
        raise format_error(path, None, "no such file")
    # The header (comments and the problem line) is read with a short loop; the arcs in bulk.
    header_lines = 0
    n = m = None
    for number, line in iter_lines(path):
        tokens = line.split()
        if not tokens or tokens[0] == "c":
            header_lines = number
            continue
        if tokens[0] == "p":
            if len(tokens) != 4 or tokens[1] != "sp":
                raise format_error(path, number, f"bad problem line {line.strip()!r} (want 'p sp N M')")
            try:
                n, m = int(tokens[2]), int(tokens[3])
            except ValueError:
                raise format_error(path, number, f"bad problem line {line.strip()!r}") from None
            header_lines = number
        break
    if n is None:
        raise _scan_for_error(path, None)
    try:
        frame = pd.read_csv(
            path, sep=r"\s+", header=None, names=["t", "u", "v", "w"], skiprows=header_lines,
            comment="c", dtype={"t": "category", "u": np.int64, "v": np.int64, "w": np.int64},
            engine="c", compression="infer",
        )
    except pd.errors.EmptyDataError:
        frame = pd.DataFrame({"t": pd.Categorical([]), "u": [], "v": [], "w": []})
    except (ValueError, OverflowError, pd.errors.ParserError, UnicodeDecodeError):
        raise _scan_for_error(path, n) from None
    types = frame["t"].cat.categories
    u = frame["u"].to_numpy(np.int64)
    v = frame["v"].to_numpy(np.int64)
    w = frame["w"].to_numpy(np.int64)
    if (len(frame) and (list(types) != ["a"])) or len(frame) != m:
        raise _scan_for_error(path, n)
    if u.size and (min(u.min(), v.min()) < 1 or max(u.max(), v.max()) > n or w.min() < 0):
        raise _scan_for_error(path, n)
    return canonical_edges(u - 1, v - 1, n, w)
