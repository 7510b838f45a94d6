"""Deterministic stand-ins for the gate graphs (inputs.md §1.2), generated locally and cached.

No download is possible where this project is built and benchmarked, so each gate has a
stand-in that is honest about being one (its record names the generator and every parameter)
and close to the real graph in what drives SSSP cost.

**Road networks** (roadNet-PA, roadNet-CA, road_usa): ``road_grid``. Vertices are the first n
cells of a ``ceil(sqrt(n))``-wide square grid. Candidate edges join cells at most ``reach`` grid
steps apart: the four unit neighbours always, each longer offset with probability
``long_keep``. The spanning structure is the minimum spanning tree of the candidates under
random keys divided by the edge length (longer local edges are preferred, which keeps the hop
diameter near a real road network's: about 0.6-0.75 sqrt(n) against ~1.4 sqrt(n) for a unit-step
lattice); then enough further candidates, drawn uniformly, are added to reach the real graph's
undirected edge count exactly. The result is connected (so the source's component holds every
vertex), every edge is local (at most ``reach`` grid steps long), and vertices are numbered
along a Z-order (Morton) curve of their cells, so neighbours have nearby ids and vertex 0 is
the corner cell.

**Random geometric graph** (rgg_n_2_20_s0): ``rgg``, the DIMACS10 construction: n points uniform
in the unit square, an edge between every pair closer than r = 0.55 sqrt(ln n / n), found with
SciPy's k-d tree, numbered in Z-order of the points.

Both return undirected edge arrays; :func:`directed_csr_edges` stores both directions in CSR
order. Everything is vectorized NumPy/SciPy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, minimum_spanning_tree

from .generators import both_directions

# Part of every cache key: bump on ANY change to what a generator returns for given parameters.
GENERATOR_VERSION = 2
_KEY_BITS = 25  # random part of a road_grid MST weight
_INDEX_BITS = 28  # candidate index part (up to 268 M candidates)


@dataclass(frozen=True)
class UndirectedEdges:
    """An undirected simple graph: each edge once as ``(u, v)`` with u != v, int32 ids."""

    num_vertices: int
    u: np.ndarray
    v: np.ndarray
    generator: str
    params: dict = field(default_factory=dict)
    # Integer grid coordinates per vertex id (road_grid: the cell; rgg: the Z-order bin), for
    # checking locality; not part of the graph.
    x: np.ndarray | None = None
    y: np.ndarray | None = None


def _morton_code(x: np.ndarray, y: np.ndarray, bits: int) -> np.ndarray:
    """Interleave the low ``bits`` bits of x and y (x in the even positions)."""
    code = np.zeros(x.shape, dtype=np.uint64)
    x = x.astype(np.uint64)
    y = y.astype(np.uint64)
    for b in range(bits):
        bit = np.uint64(b)
        code |= ((x >> bit) & np.uint64(1)) << np.uint64(2 * b)
        code |= ((y >> bit) & np.uint64(1)) << np.uint64(2 * b + 1)
    return code


def morton_order_labels(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """New id of every vertex: its rank in Z-order of integer coordinates (ties by old id)."""
    bits = max(1, int(max(int(x.max(initial=0)), int(y.max(initial=0)))).bit_length())
    if 2 * bits + max(1, int(x.size).bit_length()) > 63:
        raise ValueError("coordinates too large for a 63-bit Z-order key")
    # code * n + id is unique, so any sort algorithm gives the same (deterministic) order
    key = _morton_code(x, y, bits) * np.uint64(x.size) + np.arange(x.size, dtype=np.uint64)
    order = np.argsort(key)
    labels = np.empty(order.size, dtype=np.int64)
    labels[order] = np.arange(order.size, dtype=np.int64)
    return labels


def _undirected_matrix(n: int, u: np.ndarray, v: np.ndarray) -> sp.csr_matrix:
    data = np.ones(u.size, dtype=np.int8)
    return sp.csr_matrix((data, (u, v)), shape=(n, n))


def _ensure_source_in_giant(n: int, u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Swap vertex 0 with the lowest id of the largest component if 0 lies outside it."""
    _, labels = connected_components(_undirected_matrix(n, u, v), directed=False)
    giant = np.bincount(labels).argmax()
    if labels[0] == giant:
        return u, v
    other = int(np.flatnonzero(labels == giant)[0])
    swap = np.arange(n, dtype=np.int64)
    swap[0], swap[other] = other, 0
    return swap[u], swap[v]


def _stencil(reach: float) -> list[tuple[int, int]]:
    """Half of the offsets within ``reach`` (one of each +-pair), unit steps first."""
    r = int(math.floor(reach))
    offsets = [(dx, dy) for dx in range(0, r + 1) for dy in range(-r, r + 1)
               if (dx > 0 or (dx == 0 and dy > 0)) and dx * dx + dy * dy <= reach * reach]
    return sorted(offsets, key=lambda o: (o[0] * o[0] + o[1] * o[1], o))


def road_grid(
    num_vertices: int,
    num_undirected_edges: int,
    *,
    seed: int,
    reach: float = 3.2,
    long_keep: float = 0.3,
) -> UndirectedEdges:
    """A connected, local, road-like graph with exactly the given vertex and edge counts."""
    n = int(num_vertices)
    if n < 2:
        raise ValueError("a road stand-in needs at least 2 vertices")
    if not (n - 1 <= num_undirected_edges):
        raise ValueError("the edge count must allow a spanning tree (m >= n - 1)")
    rng = np.random.default_rng(seed)
    width = int(math.ceil(math.sqrt(n)))
    cell = np.arange(n, dtype=np.int64)
    x = cell % width
    y = cell // width

    cand_u, cand_v, cand_len = [], [], []
    for dx, dy in _stencil(reach):
        tx, ty = x + dx, y + dy
        ok = (tx < width) & (ty >= 0) & (ty * width + tx < n)
        length = math.hypot(dx, dy)
        if length > 1.0:
            ok &= rng.random(n) < long_keep
        src = cell[ok]
        dst = (ty * width + tx)[ok]
        cand_u.append(src.astype(np.int32))
        cand_v.append(dst.astype(np.int32))
        cand_len.append(np.full(src.size, length, dtype=np.float32))
    u = np.concatenate(cand_u)
    v = np.concatenate(cand_v)
    length = np.concatenate(cand_len)
    del cand_u, cand_v, cand_len
    num_candidates = u.size
    if num_candidates < num_undirected_edges:
        raise ValueError(f"only {num_candidates} candidate edges for {num_undirected_edges} wanted; "
                         "raise reach or long_keep")

    # MST weights: a random key divided by the edge length, quantized to 25 bits, times 2^28
    # plus the candidate's index, plus 1 (SciPy drops zero entries). The weights are distinct integers (exact in float64, < 2^53),
    # so the MST is unique whatever sort the library uses, equal keys fall back to index order,
    # and the MST's output names the candidates it took ((weight - 1) mod 2^28) without a sort here.
    if num_candidates >= 1 << _INDEX_BITS:
        raise ValueError(f"{num_candidates} candidates exceed the 2^{_INDEX_BITS} the weights encode")
    key = np.floor(rng.random(num_candidates, dtype=np.float32) / length * (1 << _KEY_BITS))
    weight = key.astype(np.float64) * float(1 << _INDEX_BITS) + np.arange(1, num_candidates + 1, dtype=np.float64)
    del key, length
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    del u, v
    candidates = sp.csr_matrix((weight, (lo, hi)), shape=(n, n))
    del weight
    tree = minimum_spanning_tree(candidates)
    del candidates
    if tree.nnz != n - 1:
        raise RuntimeError("the candidate graph is not connected (reach too small)")
    in_tree = np.zeros(num_candidates, dtype=bool)
    in_tree[np.fmod(tree.data - 1.0, float(1 << _INDEX_BITS)).astype(np.int64)] = True
    del tree

    extra = int(num_undirected_edges) - (n - 1)
    rest = np.flatnonzero(~in_tree)
    if extra > 0:
        pick_keys = rng.random(rest.size)
        chosen = rest[np.argpartition(pick_keys, extra - 1)[:extra]] if extra < rest.size else rest
        in_tree[chosen] = True
    keep = np.flatnonzero(in_tree)
    lo, hi = lo[keep], hi[keep]

    labels = morton_order_labels(x, y)
    eu, ev = labels[lo], labels[hi]
    cell_of = np.empty(n, dtype=np.int64)
    cell_of[labels] = cell
    return UndirectedEdges(
        n, eu.astype(np.int32), ev.astype(np.int32), "road_grid",
        {"num_vertices": n, "num_undirected_edges": int(num_undirected_edges), "seed": int(seed),
         "reach": float(reach), "long_keep": float(long_keep)},
        x=(cell_of % width).astype(np.int32), y=(cell_of // width).astype(np.int32),
    )


def rgg_radius(n: int, factor: float = 0.55) -> float:
    return factor * math.sqrt(math.log(n) / n)


def rgg(num_vertices: int, *, seed: int, radius_factor: float = 0.55) -> UndirectedEdges:
    """DIMACS10-style random geometric graph in the unit square (k-d tree pair search)."""
    from scipy.spatial import cKDTree

    n = int(num_vertices)
    rng = np.random.default_rng(seed)
    points = rng.random((n, 2))
    radius = rgg_radius(n, radius_factor)
    pairs = cKDTree(points).query_pairs(radius, output_type="ndarray")
    side = 1 << max(1, int(math.ceil(math.log2(max(n, 2)) / 2)))
    grid = np.minimum((points * side).astype(np.int64), side - 1)
    labels = morton_order_labels(grid[:, 0], grid[:, 1])
    u, v = labels[pairs[:, 0]], labels[pairs[:, 1]]
    u, v = _ensure_source_in_giant(n, u, v)
    return UndirectedEdges(
        n, u.astype(np.int32), v.astype(np.int32), "rgg",
        {"num_vertices": n, "seed": int(seed), "radius_factor": float(radius_factor),
         "radius": radius},
    )


def directed_csr_edges(graph: UndirectedEdges) -> tuple[np.ndarray, np.ndarray]:
    """Both directions of every edge, sorted by (src, dst): the CSR edge order, int32."""
    n = np.int64(graph.num_vertices)
    src, dst = (a.astype(np.int64) for a in both_directions(graph.u, graph.v))
    order = np.argsort(src * n + dst)
    return src[order].astype(np.int32), dst[order].astype(np.int32)
