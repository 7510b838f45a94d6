"""The reader-neutral result of parsing a graph file, and the edge clean-up every reader shares."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ParsedGraph:
    """A directed graph as a file describes it, in CSR order.

    ``src``/``dst`` are int32 and sorted by ``(src, dst)``; each ``(u, v)`` pair occurs once (the
    first occurrence in file order wins) and self-loops are gone, unless the reader documents
    otherwise. ``weights`` is ``None`` for files without values (pattern matrices, plain edge
    lists), else an array of shape ``(m,)`` or ``(m, K)`` in the same edge order.
    """

    num_vertices: int
    src: np.ndarray
    dst: np.ndarray
    weights: np.ndarray | None = None

    @property
    def num_edges(self) -> int:
        return int(self.src.size)

    @property
    def row_ptr(self) -> np.ndarray:
        """CSR offsets (int64, n + 1) of the sorted edge list."""
        counts = np.bincount(self.src, minlength=self.num_vertices)
        row_ptr = np.zeros(self.num_vertices + 1, dtype=np.int64)
        np.cumsum(counts, out=row_ptr[1:])
        return row_ptr

    @property
    def col_ind(self) -> np.ndarray:
        return self.dst


def canonical_edges(
    src: np.ndarray,
    dst: np.ndarray,
    num_vertices: int,
    weights: np.ndarray | None = None,
    *,
    symmetrize: bool = False,
) -> ParsedGraph:
    """Drop self-loops, optionally add reverse edges, remove duplicate pairs, sort into CSR order.

    Duplicates keep their first occurrence in the given order (the original edges come before
    the added reverse ones), so the weight a file states first for a pair is the one kept.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    if weights is not None:
        weights = np.asarray(weights)[keep]
    if symmetrize:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        if weights is not None:
            weights = np.concatenate([weights, weights])
    key = src * np.int64(max(num_vertices, 1)) + dst
    # np.unique returns the first index of each key after a stable sort: first occurrence wins
    # and the kept keys come out sorted by (src, dst).
    _, first = np.unique(key, return_index=True)
    out_src = src[first].astype(np.int32)
    out_dst = dst[first].astype(np.int32)
    out_w = None if weights is None else np.ascontiguousarray(weights[first])
    return ParsedGraph(int(num_vertices), out_src, out_dst, out_w)


def symmetrized(graph: ParsedGraph) -> ParsedGraph:
    """Both directions of every edge (the reverse of (u, v) gets its weights); an edge already
    present in both directions keeps the weights the file gave each, as ``canonical_edges`` does."""
    return canonical_edges(graph.src, graph.dst, graph.num_vertices, graph.weights, symmetrize=True)
