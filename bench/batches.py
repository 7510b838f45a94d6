"""The three benchmark batches of a gate (inputs.md §3): safe50k, unsafe50k, local10k.

Semantics follow MOSP's ``changes`` tool as dyng-dev/dyng's legacy generator describes it:

- counts: ``insertions = round(N * pct / 100)`` (pct = 50), ``deletions = N - insertions``;
- local region (local10k): a centre uniform in [0, n); every vertex within ``radius`` hops of
  it ignoring edge direction; every endpoint is drawn from it; at least 2 vertices (a smaller
  region draws a new centre, recorded in ``centre_draws``);
- insertions: two distinct vertices uniform (from all vertices or the region) and K weights
  uniform in [1, 100]; a pair that already is an edge of G_t is a re-weight (upsert);
- deletions: uniform with replacement from the existing edges (the first occurrence of each
  (u, v) pair, self-loops excluded; both endpoints in the region for a local batch);
- safe filter: R0 = vertices reachable from the source on G_t; apply the batch to a copy of the
  graph; every vertex of R0 no longer reachable marks every deletion touching it (as tail or
  head) for removal; repeat until no vertex is lost; ``filter_rounds`` counts the passes that
  removed deletions (0 when the first application loses nothing) and ``deletions_kept`` the rest;
- order in the batch: new-edge insertions, then re-weights (both in draw order), then the kept
  deletions in draw order.

The random stream: every batch starts its own ``numpy.random.default_rng(777)`` (one seeded
generator, restarted per batch, like the reference tool run once per batch with the same seed).
Draw order: [centre (local only)], insertion tails, insertion heads, re-draws of equal
pairs' heads until none is left, insertion weights ``(k, K)``, deletion picks. So safe50k and
unsafe50k share their draws and differ only by the filter: where the filter removes nothing
(as on the reference's rgg) they are identical, which :func:`find_identical` reports by digest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse.csgraph import dijkstra

from .graphfacts import adjacency, reachable_from

class BatchDrawError(ValueError):
    """The graph cannot carry a batch of this kind (no edge to delete, no local region of two
    vertices): a property of the input, reported as such."""


BATCH_SEED = 777
# Part of every batch cache key: bump on ANY change of what the generator returns.
BATCH_GENERATOR_VERSION = 1
WEIGHT_LOW, WEIGHT_HIGH = 1, 100


@dataclass(frozen=True)
class BatchSpec:
    name: str
    changes: int
    insert_percent: int = 50
    safe: bool = True
    local: bool = False

    @property
    def num_insertions(self) -> int:
        # round half up: round(N * pct / 100) on exact integers
        return (self.changes * self.insert_percent * 2 + 100) // 200

    @property
    def num_deletions(self) -> int:
        return self.changes - self.num_insertions


BATCH_SPECS = (
    BatchSpec("safe50k", 50_000, safe=True),
    BatchSpec("unsafe50k", 50_000, safe=False),
    BatchSpec("local10k", 10_000, safe=True, local=True),
)


def check_batch_names(names) -> None:
    """A command's refusal of ``--batches`` names no graph has, before any work (every graph,
    gate or file, gets the same BATCH_SPECS): UsageError naming them and the known ones."""
    from protocol.errors import UsageError

    known = [s.name for s in BATCH_SPECS]
    if names is not None and not names:  # given, but only commas: not 'every batch'
        raise UsageError(f"--batches: no batch named (every graph has {', '.join(known)})")
    unknown = [b for b in names or [] if b not in known]
    if unknown:
        raise UsageError(f"--batches: no batch named {', '.join(unknown)} (every graph has {', '.join(known)})")


@dataclass
class BatchArrays:
    """The five int64 arrays of a batch (what engines.Batch is built from) and its facts."""

    insert_src: np.ndarray
    insert_dst: np.ndarray
    insert_weights: np.ndarray
    delete_src: np.ndarray
    delete_dst: np.ndarray
    facts: dict = field(default_factory=dict)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"insert_src": self.insert_src, "insert_dst": self.insert_dst,
                "insert_weights": self.insert_weights, "delete_src": self.delete_src,
                "delete_dst": self.delete_dst}

    def to_batch(self):
        from engines import Batch

        return Batch(self.insert_src, self.insert_dst, self.insert_weights, self.delete_src, self.delete_dst)


def batch_digest(insert_src, insert_dst, insert_weights, delete_src, delete_dst) -> str:
    """SHA-256 over the arrays as little-endian int64, each prefixed by its name and shape."""
    digest = hashlib.sha256()
    for name, arr in (("insert_src", insert_src), ("insert_dst", insert_dst),
                      ("insert_weights", insert_weights), ("delete_src", delete_src),
                      ("delete_dst", delete_dst)):
        arr = np.ascontiguousarray(np.asarray(arr, dtype="<i8"))
        digest.update(f"{name}{arr.shape}".encode())
        digest.update(arr.tobytes())
    return digest.hexdigest()


def edge_pairs(num_vertices: int, row_ptr: np.ndarray, col_ind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first occurrence of each (u, v) pair, self-loops excluded, in CSR order (int64)."""
    n = np.int64(max(num_vertices, 1))
    src = np.repeat(np.arange(num_vertices, dtype=np.int64), np.diff(np.asarray(row_ptr, dtype=np.int64)))
    dst = np.asarray(col_ind, dtype=np.int64)
    keys = src * n + dst
    if keys.size > 1 and not (np.diff(keys) > 0).all():  # rows unsorted or parallel edges
        _, first = np.unique(keys, return_index=True)
        first.sort()
        src, dst = src[first], dst[first]
    keep = src != dst
    return src[keep], dst[keep]


def local_region(matrix, centre: int, radius: int) -> np.ndarray:
    """Sorted vertices within ``radius`` hops of ``centre``, ignoring direction."""
    hops = dijkstra(matrix, directed=False, indices=centre, unweighted=True, limit=radius + 0.5)
    return np.flatnonzero(np.isfinite(hops)).astype(np.int64)


def _distinct_pairs(rng: np.random.Generator, pool: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    u = pool[rng.integers(0, pool.size, size=count)]
    v = pool[rng.integers(0, pool.size, size=count)]
    same = np.flatnonzero(u == v)
    while same.size:
        v[same] = pool[rng.integers(0, pool.size, size=same.size)]
        same = same[u[same] == v[same]]
    return u, v


def draw_batch(spec: BatchSpec, graph, *, radius: int | None = None, source: int = 0,
               seed: int = BATCH_SEED, matrix=None) -> BatchArrays:
    """Draw one batch on ``graph`` (an engines.Graph; it is not modified)."""
    n = graph.num_vertices
    k = graph.num_weights
    row_ptr, col_ind = np.asarray(graph.row_ptr), np.asarray(graph.col_ind)
    if matrix is None:
        matrix = adjacency(n, row_ptr, col_ind)
    rng = np.random.default_rng(seed)
    facts: dict = {"name": spec.name, "changes": spec.changes, "insert_percent": spec.insert_percent,
                   "safe": spec.safe, "local": spec.local, "seed": seed,
                   "generator_version": BATCH_GENERATOR_VERSION}

    tails, heads = edge_pairs(n, row_ptr, col_ind)
    if spec.local:
        if radius is None:
            raise ValueError(f"{spec.name} is local and needs the gate's radius")
        region = np.zeros(0, dtype=np.int64)
        draws = 0
        while region.size < 2:
            if draws >= 1000:
                raise BatchDrawError(f"{spec.name}: no centre with a region of >= 2 vertices within {radius} hops "
                                     "in 1000 draws (the graph is almost all isolated vertices)")
            centre = int(rng.integers(0, n))
            draws += 1
            region = local_region(matrix, centre, radius)
        pool = region
        in_region = np.zeros(n, dtype=bool)
        in_region[region] = True
        inside = in_region[tails] & in_region[heads]
        tails, heads = tails[inside], heads[inside]
        facts.update(centre=centre, centre_draws=draws, radius=int(radius), region_size=int(region.size))
    else:
        pool = np.arange(n, dtype=np.int64)
        if n < 2 and spec.num_insertions:
            raise BatchDrawError(f"{spec.name}: an insertion needs two distinct vertices; the graph has {n}")

    num_ins, num_del = spec.num_insertions, spec.num_deletions
    ins_u, ins_v = _distinct_pairs(rng, pool, num_ins)
    ins_w = rng.integers(WEIGHT_LOW, WEIGHT_HIGH + 1, size=(num_ins, k), dtype=np.int64)
    if num_del and tails.size == 0:
        raise BatchDrawError(f"{spec.name}: no edge to delete" + (" in the local region" if spec.local else
                                                                  " (the graph has no edge between two distinct vertices)"))
    pick = rng.integers(0, tails.size, size=num_del) if num_del else np.zeros(0, dtype=np.int64)
    del_u, del_v = tails[pick], heads[pick]

    # New edges first, then re-weights, each in draw order (a stable partition). Existence is
    # judged on all of G_t's pairs (self-loops cannot be drawn: the two ends are distinct).
    all_t, all_h = edge_pairs(n, row_ptr, col_ind) if spec.local else (tails, heads)
    pair_keys = np.sort(all_t * np.int64(n) + all_h)
    ins_keys = ins_u * np.int64(n) + ins_v
    pos = np.searchsorted(pair_keys, ins_keys)
    exists = (pos < pair_keys.size) & (pair_keys[np.minimum(pos, pair_keys.size - 1)] == ins_keys)
    order = np.concatenate([np.flatnonzero(~exists), np.flatnonzero(exists)])
    ins_u, ins_v, ins_w = ins_u[order], ins_v[order], ins_w[order]
    facts.update(insertions=num_ins, new_insertions=int((~exists).sum()), reweights=int(exists.sum()),
                 deletions_requested=num_del)

    rounds = 0
    if spec.safe and num_del:
        from engines import Batch

        before = reachable_from(matrix, source)
        keep = np.ones(num_del, dtype=bool)
        while True:
            trial = graph.copy()
            trial.apply(Batch(ins_u, ins_v, ins_w, del_u[keep], del_v[keep]))
            after = reachable_from(adjacency(trial.num_vertices, np.asarray(trial.row_ptr),
                                             np.asarray(trial.col_ind)), source)
            lost = before & ~after[:n]
            if not lost.any():
                break
            rounds += 1
            touched = lost[del_u] | lost[del_v]
            if not (touched & keep).any():  # impossible: the last cut edge on a lost path ends lost
                raise RuntimeError(f"{spec.name}: vertices lost but no kept deletion touches them")
            keep &= ~touched
        del_u, del_v = del_u[keep], del_v[keep]
    facts.update(deletions_kept=int(del_u.size), filter_rounds=rounds)
    facts["digest"] = batch_digest(ins_u, ins_v, ins_w, del_u, del_v)
    return BatchArrays(ins_u, ins_v, ins_w, del_u.copy(), del_v.copy(), facts)


def find_identical(batches: dict[str, BatchArrays]) -> dict[str, str]:
    """``{later name: earlier name}`` for batches whose digests are equal."""
    seen: dict[str, str] = {}
    identical: dict[str, str] = {}
    for name, batch in batches.items():
        digest = batch.facts["digest"]
        if digest in seen:
            identical[name] = seen[digest]
        else:
            seen[digest] = name
    return identical


def draw_gate_batches(graph, *, radius: int, source: int = 0, specs=BATCH_SPECS,
                      seed: int = BATCH_SEED) -> dict[str, BatchArrays]:
    """All batches of a gate, with ``identical_to`` set in the facts of repeated ones."""
    matrix = adjacency(graph.num_vertices, np.asarray(graph.row_ptr), np.asarray(graph.col_ind))
    out = {spec.name: draw_batch(spec, graph, radius=radius, source=source, seed=seed, matrix=matrix)
           for spec in specs}
    for name, other in find_identical(out).items():
        out[name].facts["identical_to"] = other
    return out
