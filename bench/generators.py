"""The graph generators every product shares (issue 29 step 3): one of each kind.

- **CSR from edges**: :func:`row_ptr_of` and :func:`csr_from_edges`, used by the input
  preparation (``bench.prepare``, ``bench.graph_file``), the golden corpus (``conformance``) and the
  tests.
- **Grid**: :func:`grid_pairs` (the 4-neighbour lattice, row-major ids) and :func:`both_directions`,
  used by the corpus's grid presets, the asv suite's road-like grid and the tests' grid shape. The
  gate stand-ins' ``road_grid`` (a spanning tree plus local edges, Z-order ids) stays in
  ``bench.standins``: it is the one generator of the stand-ins.
- **Random graph**: :func:`uniform_arcs` (uniform random arcs), :func:`with_copies_and_loops`
  (parallel copies and self-loops, then shuffled), :func:`simple_arcs` (first copy of each pair, no
  self-loop) and :func:`distinct_pairs` (a uniform sample of distinct undirected pairs), used by the
  corpus, the engine table and the tests.

Every function is a pure function of its inputs and, where it draws, of a seeded
``numpy.random.Generator``, in a fixed order of draws: the corpus, the stand-in caches and the asv
inputs are pinned by digests (tests/bench/test_generators.py), so a change to what any function
returns for given arguments changes those digests.
"""

from __future__ import annotations

import numpy as np


# -- CSR from edges -------------------------------------------------------------------------------
def row_ptr_of(src, n: int) -> np.ndarray:
    """The int64 row offsets (n + 1) of a CSR whose edges are grouped by source ``src``."""
    row_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=row_ptr[1:])
    return row_ptr


def csr_from_edges(n: int, src, dst, weights=None, *, presorted: bool = False, col_dtype=np.int64):
    """``(row_ptr, col_ind, weights)`` of the arcs ``src -> dst``: int64 row offsets, ``col_ind``
    as ``col_dtype`` and ``weights`` as int64 ``(m, K)`` (None stays None).

    The edges keep their input order within each row (a stable sort by source); ``presorted``
    skips the sort for edges already grouped by source (a large graph's input, where the sort would
    cost memory and time for nothing)."""
    src, dst = np.asarray(src), np.asarray(dst)
    if weights is not None:
        weights = np.asarray(weights, dtype=np.int64)
        if weights.ndim != 2:
            weights = weights.reshape(src.shape[0], -1)
    if not presorted:
        order = np.argsort(src, kind="stable")
        dst = dst[order]
        weights = weights[order] if weights is not None else None
    return row_ptr_of(src, n), np.ascontiguousarray(dst, dtype=col_dtype), weights


# -- grids ----------------------------------------------------------------------------------------
def grid_pairs(rows: int, cols: int, *, by_vertex: bool = False) -> np.ndarray:
    """The undirected edges ``(m, 2)`` int64 of a ``rows x cols`` 4-neighbour grid, row-major ids:
    every right pair, then every down pair; ``by_vertex``: ordered by the lower vertex, its right
    pair before its down pair."""
    ids = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    right = np.stack([ids[:, :-1].ravel(), ids[:, 1:].ravel()], axis=1)
    down = np.stack([ids[:-1, :].ravel(), ids[1:, :].ravel()], axis=1)
    pairs = np.concatenate([right, down])
    if by_vertex:
        pairs = pairs[np.argsort(np.concatenate([2 * right[:, 0], 2 * down[:, 0] + 1]), kind="stable")]
    return pairs


def both_directions(u, v, *, interleaved: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The arcs of undirected edges ``(u, v)``: every ``u -> v``, then every ``v -> u``;
    ``interleaved``: each edge's two arcs next to each other."""
    if interleaved:
        return np.stack([u, v], axis=1).ravel(), np.stack([v, u], axis=1).ravel()
    return np.concatenate([u, v]), np.concatenate([v, u])


# -- random graphs --------------------------------------------------------------------------------
def uniform_arcs(rng, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` arcs with uniform random ends in ``[0, n)`` (sources drawn first)."""
    return rng.integers(0, n, size=m), rng.integers(0, n, size=m)


def with_copies_and_loops(rng, n: int, src, dst, copies: int, loops: int):
    """The arcs plus ``copies`` repeated arcs (uniform picks) and ``loops`` self-loops at uniform
    vertices, in that order, then shuffled."""
    if copies and src.shape[0]:
        pick = rng.integers(0, src.shape[0], size=copies)
        src, dst = np.concatenate([src, src[pick]]), np.concatenate([dst, dst[pick]])
    if loops:
        v = rng.integers(0, n, size=loops)
        src, dst = np.concatenate([src, v]), np.concatenate([dst, v])
    perm = rng.permutation(src.shape[0])
    return src[perm], dst[perm]


def simple_arcs(n: int, src, dst) -> tuple[np.ndarray, np.ndarray]:
    """The first copy of every ``(src, dst)`` pair, self-loops dropped, in input order."""
    keep = src != dst
    src, dst = src[keep], dst[keep]
    _, idx = np.unique(src * (n + 1) + dst, return_index=True)
    idx.sort()
    return src[idx], dst[idx]


def distinct_pairs(rng, n: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` distinct undirected pairs ``u < v`` of ``n`` vertices, uniform, in key order."""
    pairs = np.zeros(0, dtype=np.int64)
    while pairs.size < count:
        u = rng.integers(0, n, size=2 * (count - pairs.size) + 16)
        v = rng.integers(0, n, size=u.size)
        keep = u != v
        keys = np.minimum(u, v)[keep] * n + np.maximum(u, v)[keep]
        pairs = np.unique(np.concatenate([pairs, keys]))
    pairs = pairs[np.sort(rng.choice(pairs.size, size=count, replace=False))]
    return pairs // n, pairs % n
