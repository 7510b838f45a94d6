"""Plain integer edge lists: one ``u v`` pair (optionally followed by more integer columns) a line.

This is the format of the real graphs in ``../shared/data/graphs`` (1-based ids, each undirected
edge listed once, no header, no weights) and, with ``one_based=False`` and
``symmetrize=False``, of SNAP's lists (see :mod:`engines.io.snap`). Parsing goes through pandas'
C reader, never a Python loop; ``.gz`` files are decompressed on the fly.
"""

from __future__ import annotations

from pathlib import Path

from ..arguments import VERTEX_MAX
from ..graph import check_num_vertices
from ._text import format_error, read_int_table, locate_bad_line, require_regular_file
from .parsed import ParsedGraph, canonical_edges


def read_edge_list(
    path: str | Path,
    *,
    one_based: bool = True,
    symmetrize: bool = True,
    comment: str | None = "#",
    num_vertices: int | None = None,
) -> ParsedGraph:
    """Read an edge list into a :class:`ParsedGraph` (no weights).

    ``one_based``: ids start at 1 (shifted to 0-based). ``symmetrize``: the list names undirected
    edges, both directions are stored. ``num_vertices`` defaults to the largest id + 1 (after the
    shift). Self-loops are dropped and duplicate pairs removed. A line with a bad field, an id
    below the base, or an id too large for int32 raises ``FileFormatError`` naming the line; so
    does a file without any edge line when ``num_vertices`` is not given (its vertex count is
    unknown), and a file that cannot be read (bad or truncated gzip data).
    """
    path = Path(path)
    base = 1 if one_based else 0
    require_regular_file(path)
    num_vertices = None if num_vertices is None else check_num_vertices(num_vertices, f"reading {path}")

    def line_check(tokens: list[str]) -> str | None:
        for t in tokens[:2]:
            value = int(t)
            if value < base:
                return f"vertex id {value} below the first id {base}"
            if value - base > VERTEX_MAX - 1:
                return f"vertex id {value} does not fit a 32-bit vertex id"
        return None

    table = read_int_table(path, min_columns=2, max_columns=64, comment=comment, line_check=line_check)
    if table.shape[0] == 0 and num_vertices is None:
        raise format_error(path, None, "no edges: the file holds no 'u v' line (it is empty, or only "
                                       "blank and comment lines), so there is no graph to read")
    src = table[:, 0] - base
    dst = table[:, 1] - base
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) > VERTEX_MAX - 1):
        raise locate_bad_line(path, min_columns=2, max_columns=64, comment=comment,
                              line_check=line_check, fallback="vertex id out of range")
    largest = int(max(src.max(), dst.max())) if src.size else -1
    n = largest + 1 if num_vertices is None else num_vertices
    if n <= largest:
        raise locate_bad_line(path, min_columns=2, max_columns=64, comment=comment,
                              line_check=_beyond(n, base),
                              fallback=f"vertex id {largest + base} exceeds the stated {n} vertices")
    return canonical_edges(src, dst, n, symmetrize=symmetrize)


def _beyond(num_vertices: int, base: int):
    """A line check naming the first id past a stated vertex count (the error path's scan finds
    its line)."""
    def check(tokens: list[str]) -> str | None:
        for t in tokens[:2]:
            if int(t) - base >= num_vertices:
                return f"vertex id {int(t)} exceeds the stated {num_vertices} vertices"
        return None
    return check
