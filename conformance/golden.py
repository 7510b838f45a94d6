"""The golden corpus: generation by the host reference, checked against independent oracles, and replay.

``python -m conformance generate [--out tests/golden]`` builds every case of the catalogue below,
checks it against the independent oracles of ``conformance/oracles.py`` (SciPy's Dijkstra, the
lowest-id tight in-neighbour, the closed form of docs/algorithm.md §5.12, a list-based model of the
batch semantics) and ``update()`` from a canonical tree against ``compute()``, and writes the shards and the
manifest. ``verify`` checks the digests, ``check`` regenerates into a
temporary directory and compares digests (reproducibility), ``list`` prints the cases.
``python -m conformance compare`` replays the corpus on engine configurations.

The catalogue: five graph presets (random tiny, small, medium; grid small, medium) x seeds x the
ten batch mixes of ``mixes.MIXES``; the same mixes from non-canonical input trees; the
packing boundary and distance-only cases (n = 65537 / 65538, few and sparse); and hand-written
fixtures (duplicates, parallel edges, self-loops, empty batch, delete-all, growth, K = 1..5 ...).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from engines import interrupt  # standard library only: before the heavy imports

interrupt.guard(__name__, "golden.py")

import numpy as np

from engines import Batch, Graph
from engines import sssp
from engines.exitcodes import ExitCode

from . import oracles
from .mixes import (MIXES, WEIGHT_MAX, GraphArrays, MixContext, csr_from_edges, grid_graph,
                    random_graph)
from .replay import CONFIGS, CaseOutcome, Config, replay, replay_case
from .store import (Corpus, CorpusCorruptError, CorpusMissingError, encode_json, load_corpus,
                    write_manifest, write_shard)

# The replay half of the library, re-exported: ``from conformance.golden import load_corpus, replay, CONFIGS``.
__all__ = ["CaseSpec", "catalogue", "build_case", "generate", "load_corpus", "Corpus", "replay", "replay_case",
           "CONFIGS", "Config", "CaseOutcome", "CorpusMissingError", "CorpusCorruptError", "DEFAULT_CORPUS", "main"]

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO_ROOT / "tests" / "golden"
# Recorded in the manifest as written by generator version 1: the text stays as it was (the
# corpus is byte-identical), although the command is now ``python -m conformance generate``.
GENERATOR = "python -m bench.golden generate (generator version 1)"

BatchArrays = tuple  # (ins_src, ins_dst, ins_w (k, K), del_src, del_dst), int64


@dataclass
class CaseSpec:
    """Everything needed to build one case; ``batch`` is a mix (called on the pre-batch state) or arrays."""

    name: str
    shard: str
    graph: GraphArrays
    source: int
    batch: Callable[[MixContext], BatchArrays] | BatchArrays
    objective: int = 0
    delta: int = 0
    offset_dtype: str = "int32"
    tree: str = "canonical"  # or "perturbed": tie parents randomized, imported without canonicalization
    seed: tuple = (0,)
    weight_range: tuple = (1, 100)
    size: int = 10
    mix: str = "fixture"
    description: str = ""
    expect_packed: bool | None = None  # asserted for the packing cases
    expect_compute_packed: bool | None = None


# -- the catalogue --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Preset:
    name: str
    seeds: int
    build: Callable  # (rng, seed) -> GraphArrays
    weight_range: tuple
    size: Callable  # (rng, graph) -> number of changes


def _tiny_graph(rng, seed):
    n = int(rng.integers(2, 25))
    m = int(rng.integers(n, 4 * n + 1))
    return random_graph(rng, n, m, 1 + seed % 2, 1, 3, parallel=0.15, self_loops=0.05)


PRESETS = (
    Preset("random-tiny", 15, lambda rng, seed: _tiny_graph(rng, seed), (1, 3),
           lambda rng, g: int(rng.integers(1, max(2, g.m // 2) + 1))),
    Preset("random-small", 8, lambda rng, seed: random_graph(rng, 200, 800, 2, 1, 100, parallel=0.02, self_loops=0.01),
           (1, 100), lambda rng, g: 40),
    Preset("random-medium", 3, lambda rng, seed: random_graph(rng, 1500, 6000, 3, 1, 100, parallel=0.01),
           (1, 100), lambda rng, g: 200),
    Preset("grid-small", 8, lambda rng, seed: grid_graph(rng, 12, 12, 2, 1, 10), (1, 10), lambda rng, g: 20),
    Preset("grid-medium", 3, lambda rng, seed: grid_graph(rng, 40, 40, 3, 1, 100), (1, 100), lambda rng, g: 150),
)


def _seeded(*key) -> np.random.Generator:
    return np.random.default_rng([20261202, *key])


def _group_id(name: str) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)


def preset_cases() -> list[CaseSpec]:
    specs = []
    for preset in PRESETS:
        gid = _group_id(preset.name)
        for seed in range(preset.seeds):
            rng = _seeded(gid, seed)
            graph = preset.build(rng, seed)
            source = 0 if seed % 2 == 0 else int(rng.integers(0, graph.n))
            objective = seed % graph.K
            delta = 0 if seed % 3 else int(rng.integers(1, 301))
            offset = "int64" if seed % 4 == 3 else "int32"
            for mix_index, mix in enumerate(MIXES):
                size = preset.size(_seeded(gid, seed, mix_index, 1), graph)
                specs.append(CaseSpec(
                    name=f"{preset.name}.s{seed:02d}.{mix}", shard=f"{preset.name}.npz", graph=graph,
                    source=source, batch=MIXES[mix], objective=objective, delta=delta, offset_dtype=offset,
                    seed=(gid, seed, mix_index), weight_range=preset.weight_range, size=size, mix=mix,
                    description=f"{preset.name} seed {seed}, mix {mix}",
                ))
    return specs


def noncanonical_cases() -> list[CaseSpec]:
    """Tie-heavy graphs (weights 1..2 or 1..3), every tie parent randomized (docs/algorithm.md §13 item 4)."""
    specs = []
    gid = _group_id("noncanonical")
    for seed in range(12):
        rng = _seeded(gid, seed)
        shape = seed % 3
        if shape == 0:
            graph, wr = random_graph(rng, int(rng.integers(10, 41)), int(rng.integers(40, 160)), 1, 1, 2,
                                     parallel=0.1, self_loops=0.03), (1, 2)
        elif shape == 1:
            graph, wr = grid_graph(rng, 8, 8, 2, 1, 2), (1, 2)
        else:
            graph, wr = random_graph(rng, 120, 480, 2, 1, 3, parallel=0.02), (1, 3)
        source = int(rng.integers(0, graph.n))
        objective = seed % graph.K
        for mix_index, mix in enumerate(MIXES):
            size = max(1, min(30, graph.m // 6))
            specs.append(CaseSpec(
                name=f"noncanonical.s{seed:02d}.{mix}", shard="noncanonical.npz", graph=graph, source=source,
                batch=MIXES[mix], objective=objective, tree="perturbed", seed=(gid, seed, mix_index),
                weight_range=wr, size=size, mix=mix, offset_dtype="int64" if seed % 5 == 4 else "int32",
                description=f"non-canonical input tree, seed {seed}, mix {mix}",
            ))
    return specs


# -- packing boundary and distance-only (docs/algorithm.md §4.3, §13 item 5) -----------------------

PACK_LIMIT_65538 = 2147450880  # the largest W that still packs at n = 65538 (docs/algorithm.md §4.3 table)


def _sparse_big_graph(rng, n, weights_pool, heavy_edge_weight=None) -> tuple[GraphArrays, int]:
    """n vertices, mostly isolated: a 24 x 24 grid at scattered ids (the reachable part), and a
    few hundred edges elsewhere. Keeps the stored arrays small (INF and -1 compress to nothing)."""
    rows = cols = 24
    ids = np.sort(rng.choice(n, size=rows * cols, replace=False)).astype(np.int64)
    rng.shuffle(ids)
    grid = grid_graph(rng, rows, cols, 1, 1, 1)
    gsrc, gdst = ids[grid.sources()], ids[grid.col_ind]
    others = np.setdiff1d(np.arange(n), ids)
    osrc = rng.choice(others, size=400)
    odst = rng.choice(others, size=400)
    src = np.concatenate([gsrc, osrc])
    dst = np.concatenate([gdst, odst])
    w = rng.choice(np.asarray(weights_pool, dtype=np.int64), size=(src.size, 1))
    if heavy_edge_weight is not None:
        w[int(rng.integers(0, gsrc.size)), 0] = heavy_edge_weight
    return csr_from_edges(n, src, dst, w), int(ids[0])


def _grid_part_mix(mix, lo, hi):
    """A mix restricted to one weight range (the packing cases use huge weights)."""
    def build(ctx: MixContext):
        return MIXES[mix](dataclasses.replace(ctx, wlo=lo, whi=hi))
    return build


def packing_cases() -> list[CaseSpec]:
    specs = []
    gid = _group_id("packing")
    at = (PACK_LIMIT_65538 - 2, PACK_LIMIT_65538 - 1, PACK_LIMIT_65538)
    g_at, s_at = _sparse_big_graph(_seeded(gid, 0), 65538, at)
    g_heavy, s_heavy = _sparse_big_graph(_seeded(gid, 1), 65538, at, heavy_edge_weight=PACK_LIMIT_65538 + 1)
    top = (WEIGHT_MAX - 2, WEIGHT_MAX - 1, WEIGHT_MAX)
    g_65537, s_65537 = _sparse_big_graph(_seeded(gid, 2), 65537, top)

    def heavy_insert(weight):
        def build(ctx: MixContext):
            ins_src, ins_dst, ins_w, ds, dd = _grid_part_mix("uniform_unsafe", at[0], at[1])(ctx)
            reach = ctx.reachable()
            u, v = (int(x) for x in ctx.rng.choice(reach, size=2, replace=False))
            ins_w = np.vstack([ins_w, [[weight]]])
            return np.append(ins_src, u), np.append(ins_dst, v), ins_w, ds, dd
        return build

    def delete_heaviest(ctx: MixContext):
        g = ctx.graph
        e = int(np.argmax(g.weights[:, 0]))
        ins_src, ins_dst, ins_w, ds, dd = _grid_part_mix("deletions_only", at[0], at[-1])(ctx)
        return ins_src, ins_dst, ins_w, np.append(ds, g.sources()[e]), np.append(dd, g.col_ind[e])

    def grow_to_65538(ctx: MixContext):
        anchor = int(ctx.rng.choice(ctx.reachable()))
        n = ctx.graph.n
        return (np.array([anchor, n, anchor]), np.array([n, anchor, n]),
                np.array([[WEIGHT_MAX], [WEIGHT_MAX - 1], [WEIGHT_MAX - 1]]), np.zeros(0, np.int64),
                np.zeros(0, np.int64))

    table = [
        ("boundary_at_limit", g_at, s_at, _grid_part_mix("uniform_unsafe", at[0], at[-1]), "canonical", True, True,
         "n = 65538, W = 2147450880: the last packing value"),
        ("boundary_above_limit", g_at, s_at, heavy_insert(PACK_LIMIT_65538 + 1), "canonical", False, False,
         "n = 65538, an insertion of W = 2147450881: distance-only"),
        ("boundary_above_perturbed", g_at, s_at, heavy_insert(PACK_LIMIT_65538 + 1), "perturbed", False, False,
         "distance-only from a non-canonical tree: comes out canonical"),
        ("heavy_edge_deleted", g_heavy, s_heavy, delete_heaviest, "canonical", False, True,
         "W of G_t (a deleted heavy edge) decides the update's packing, not G_{t+1}'s maximum"),
        ("heavy_edge_deleted_perturbed", g_heavy, s_heavy, delete_heaviest, "perturbed", False, True,
         "the same from a non-canonical tree"),
        ("n65537_wmax_packed", g_65537, s_65537, _grid_part_mix("reweight", top[0], top[-1]), "canonical", True, True,
         "n = 65537 packs every int32 weight"),
        ("n65537_grow_distance_only", g_65537, s_65537, grow_to_65538, "perturbed", False, False,
         "growth to n = 65538 with W = 2^31 - 1: distance-only, parents recovered canonically"),
        ("n65537_wmax_disconnecting", g_65537, s_65537, _grid_part_mix("disconnecting", top[0], top[-1]), "perturbed",
         True, True, "packed with W = 2^31 - 1 from a non-canonical tree, a region cut off"),
    ]
    for i, (name, graph, source, build, tree, packed, cpacked, text) in enumerate(table):
        specs.append(CaseSpec(
            name=f"packing.{name}", shard="packing.npz", graph=graph, source=source, batch=build, tree=tree,
            seed=(gid, 100 + i), weight_range=(1, 1), size=12, mix=name, description=text,
            expect_packed=packed, expect_compute_packed=cpacked,
        ))
    return specs


# -- fixtures (docs/algorithm.md §13 item 7, 8, 12) ------------------------------------------------


def _g(n, edges, K=1) -> GraphArrays:
    """A hand graph from ``(u, v, w...)`` tuples, row order = list order."""
    if not edges:
        return GraphArrays(np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros((0, K), np.int64))
    arr = np.asarray(edges, dtype=np.int64)
    return csr_from_edges(n, arr[:, 0], arr[:, 1], arr[:, 2:])


def _b(ins=(), dels=(), K=1) -> BatchArrays:
    ins = np.asarray(ins, dtype=np.int64).reshape(-1, 2 + K)
    dels = np.asarray(dels, dtype=np.int64).reshape(-1, 2)
    return ins[:, 0], ins[:, 1], ins[:, 2:], dels[:, 0], dels[:, 1]


# 0 -> 1 (2), 0 -> 2 (5), 1 -> 2 (1 and a parallel 3), 1 -> 3 (4), 2 -> 3 (1), 3 -> 4 (3), 4 -> 5 (1),
# 2 -> 4 (7), a self-loop on 3
HAND = _g(6, [(0, 1, 2), (0, 2, 5), (1, 2, 1), (1, 3, 4), (2, 3, 1), (3, 4, 3), (4, 5, 1), (2, 4, 7),
              (1, 2, 3), (3, 3, 1)])


def fixture_cases() -> list[CaseSpec]:
    gid = _group_id("fixtures")
    hand_all = list(zip(HAND.sources().tolist(), HAND.col_ind.tolist()))
    k3 = random_graph(_seeded(gid, 1), 40, 160, 3, 1, 100, parallel=0.05, self_loops=0.02)
    chain = _g(30, [(i, i + 1, 1 + i % 3) for i in range(29)] + [(0, 29, 200)])
    symmetric_src = np.array([0, 1, 1, 2, 2, 3, 0, 3])
    symmetric = csr_from_edges(4, symmetric_src, np.array([1, 0, 2, 1, 3, 2, 3, 0]), np.array([1, 1, 2, 2, 1, 1, 9, 9]))
    table = [
        ("empty_batch", HAND, 0, _b(), "canonical", "no changes at all"),
        ("empty_batch_k3_objective2", k3, 5, _b(K=3), "canonical", "K = 3, objective 2, empty batch"),
        ("delete_all", HAND, 0, _b(dels=hand_all), "canonical", "every physical edge deleted (parallel copies one by one)"),
        ("delete_all_reinsert", HAND, 0, _b(ins=[(0, 5, 4), (5, 3, 1)], dels=hand_all), "canonical",
         "delete everything, insert two edges"),
        ("duplicate_deletions", HAND, 0, _b(dels=[(1, 2), (1, 2), (1, 2)]), "canonical",
         "the same deletion three times: two copies exist, the third is missing"),
        ("duplicate_insertions", HAND, 0, _b(ins=[(0, 3, 10), (0, 3, 2), (0, 3, 6)]), "canonical",
         "the last insertion of a pair wins (append, then upserts)"),
        ("insert_and_delete_same_pair", HAND, 0, _b(ins=[(2, 5, 1)], dels=[(2, 5)]), "canonical",
         "deletions first: the deletion is missing, the insertion appends"),
        ("parallel_first_copy_raised", HAND, 0, _b(ins=[(1, 2, 9)]), "canonical",
         "upsert raises the first of two parallel copies (weight_increased) while a lighter copy stays"),
        ("parallel_first_copy_deleted", HAND, 0, _b(dels=[(1, 2)]), "canonical",
         "a deletion removes the first alive copy only"),
        ("increase_after_first_copy_deleted", HAND, 0, _b(ins=[(1, 2, 2)], dels=[(1, 2)]), "canonical",
         "weight_increased compares different physical entries (old first copy deleted)"),
        ("reinsert_same_pair", HAND, 0, _b(ins=[(0, 1, 2)], dels=[(0, 1)]), "canonical",
         "delete and re-insert a tree edge: it moves to the end of its row"),
        ("self_loops", HAND, 0, _b(ins=[(4, 4, 1), (0, 0, 5)], dels=[(3, 3), (5, 5)]), "canonical",
         "self-loop insertions (one on the source) and deletions (one missing)"),
        ("source_as_head", HAND, 0, _b(ins=[(3, 0, 1), (5, 0, 2)]), "canonical",
         "insertions into the source: the source is a head and is never relaxed"),
        ("source_as_push_target", HAND, 0, _b(ins=[(1, 0, 1), (0, 4, 1)]), "canonical",
         "a vertex whose distance drops has an out-edge to the source"),
        ("only_missing_deletions", HAND, 0, _b(dels=[(5, 0), (4, 1), (0, 4)]), "canonical",
         "every deletion is missing: still listed as changed edges"),
        ("deletions_beyond_growth", HAND, 0, _b(ins=[(5, 7, 1)], dels=[(9, 1), (1, 8), (6, 7)]), "canonical",
         "growth to 8 vertices; deletions naming ids >= 8 ignored, (6, 7) passes the filter and is missing"),
        ("growth_reachable", HAND, 0, _b(ins=[(5, 6, 1), (6, 7, 2), (7, 8, 3)]), "canonical",
         "new vertices become reachable through a new chain"),
        ("growth_unreachable", HAND, 0, _b(ins=[(7, 2, 1)]), "canonical",
         "new vertices 6 and 7 stay unreachable; 7 gets an edge into the old graph"),
        ("n1_empty", _g(1, []), 0, _b(), "canonical", "a single vertex, no edges, empty batch"),
        ("n1_selfloop_growth", _g(1, [(0, 0, 3)]), 0, _b(ins=[(0, 1, 4), (1, 2, 1)], dels=[(0, 0)]),
         "canonical", "a single vertex with a self-loop; growth to 3"),
        ("no_edges_insertions", _g(5, []), 2, _b(ins=[(2, 0, 1), (0, 4, 2), (2, 4, 3), (4, 1, 1)]), "canonical",
         "a graph without edges gains some"),
        ("isolated_source_reconnect", _g(5, [(1, 2, 1), (2, 3, 1), (3, 4, 1)]), 0, _b(ins=[(0, 1, 5)]),
         "canonical", "everything unreachable until the source gets an out-edge"),
        ("chain_cut_middle", chain, 0, _b(dels=[(14, 15)]), "canonical",
         "a long path cut in the middle: the suffix falls back to the heavy bypass"),
        ("chain_cut_bypass", chain, 0, _b(ins=[(3, 20, 1)], dels=[(14, 15), (0, 29)]), "canonical",
         "cut, bypass removed, a shortcut inserted"),
        ("symmetric_one_direction", symmetric, 0,
         _b(ins=[(0, 2, 1)], dels=[(1, 2)]), "canonical", "a symmetrized graph; the batch lists one direction"),
        ("upsert_decrease_tree_edge", HAND, 0, _b(ins=[(0, 2, 1), (3, 4, 1)]), "canonical",
         "upserts lowering weights: heads, no changed edges"),
        ("hand_perturbed_ties", _g(6, [(0, 1, 1), (0, 2, 1), (1, 3, 1), (2, 3, 1), (3, 4, 1), (1, 4, 2),
                                      (2, 5, 2), (4, 5, 1)]), 0, _b(ins=[(0, 3, 3)], dels=[(0, 1)]), "perturbed",
         "a tie-rich hand graph from a non-canonical tree"),
    ]
    specs = [CaseSpec(name=f"fixtures.{name}", shard="fixtures.npz", graph=graph, source=source, batch=batch,
                      tree=tree, seed=(gid, 10 + i), description=text, weight_range=(1, 10))
             for i, (name, graph, source, batch, tree, text) in enumerate(table)]
    # K = 1..5, the last objective of each
    for K in range(1, 6):
        graph = random_graph(_seeded(gid, 100 + K), 30, 90, K, 1, 20, parallel=0.05, self_loops=0.03)
        specs.append(CaseSpec(name=f"fixtures.k{K}_objective{K - 1}", shard="fixtures.npz", graph=graph, source=0,
                              batch=MIXES["uniform_unsafe"], objective=K - 1, seed=(gid, 100 + K), weight_range=(1, 20),
                              size=12, mix="uniform_unsafe", description=f"K = {K}, objective {K - 1}"))
    # forced 64-bit offsets, forced deltas, the largest weights on a small graph
    g_small = random_graph(_seeded(gid, 200), 60, 240, 1, 1, 50, parallel=0.05)
    for delta in (1, 7, 300):
        specs.append(CaseSpec(name=f"fixtures.delta{delta}", shard="fixtures.npz", graph=g_small, source=3,
                              batch=MIXES["uniform_unsafe"], delta=delta, seed=(gid, 200, delta), weight_range=(1, 50),
                              size=20, mix="uniform_unsafe", description=f"delta forced to {delta}"))
    for mix in ("uniform_unsafe", "targeted"):
        specs.append(CaseSpec(name=f"fixtures.offsets64_{mix}", shard="fixtures.npz", graph=HAND if mix == "targeted"
                              else g_small, source=0, batch=MIXES[mix], offset_dtype="int64", seed=(gid, 300, len(mix)),
                              weight_range=(1, 50), size=6, mix=mix, description="int64 offsets forced"))
    g_big_w = random_graph(_seeded(gid, 400), 50, 200, 1, WEIGHT_MAX - 1000, WEIGHT_MAX)
    for mix in ("uniform_unsafe", "tree_increase", "reweight"):
        specs.append(CaseSpec(name=f"fixtures.maxweights_{mix}", shard="fixtures.npz", graph=g_big_w, source=1,
                              batch=MIXES[mix], seed=(gid, 400, len(mix)), weight_range=(1, WEIGHT_MAX), size=15,
                              mix=mix, description="weights up to 2^31 - 1 on a small graph (packed)"))
    return specs


def catalogue() -> list[CaseSpec]:
    return preset_cases() + noncanonical_cases() + packing_cases() + fixture_cases()


# -- building and checking one case -----------------------------------------------------------------


class GenerationError(AssertionError):
    pass


def _fail(spec: CaseSpec, message: str):
    raise GenerationError(f"{spec.name}: {message}")


def _same(spec, what, expected, actual):
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.shape != actual.shape or not np.array_equal(expected, actual):
        v = 0 if expected.shape != actual.shape else int(np.flatnonzero(expected != actual)[0])
        _fail(spec, f"{what} disagree with the oracle (first at {v})")


def graph_id(g: GraphArrays) -> str:
    h = hashlib.sha256()
    for arr in (g.row_ptr, g.col_ind, g.weights):
        h.update(np.ascontiguousarray(arr, dtype=np.int64).tobytes())
        h.update(str(arr.shape).encode())
    return h.hexdigest()[:16]


def build_case(spec: CaseSpec) -> tuple[dict, dict[str, np.ndarray]]:
    """Run the host reference on one case, check it against every oracle, return (meta, arrays)."""
    O = oracles
    g = spec.graph
    n, k, s = g.n, spec.objective, spec.source
    rng = _seeded(*spec.seed, 7)
    src, dst, w = g.ref.edges(k)
    d_ref, p_ref = O.canonical_tree(n, s, src, dst, w)
    offset = np.int64 if spec.offset_dtype == "int64" else None
    graph = Graph.from_csr(g.row_ptr, g.col_ind, g.weights, offset_dtype=offset)
    opts = dict(objective=k, delta=spec.delta)
    initial = sssp.compute(graph, s, **opts)
    d0, p0 = initial.to_numpy()
    _same(spec, "compute() distances on G_t", d_ref, d0)
    _same(spec, "compute() parents on G_t", p_ref, p0)
    if spec.tree == "perturbed":
        p_in = O.perturbed_parents(rng, n, s, d0, src, dst, w).astype(p0.dtype)
        problem = O.is_valid_tree(n, s, d0, p_in, src, dst, w)
        if problem:
            _fail(spec, f"perturbed tree invalid: {problem}")
    else:
        p_in = p0
    d_in = d0
    if callable(spec.batch):
        ctx = MixContext(rng, g, d_in, p_in.astype(np.int64), s, k, *spec.weight_range, spec.size)
        arrays = spec.batch(ctx)
    else:
        arrays = spec.batch
    ins_src, ins_dst, ins_w, del_src, del_dst = (np.asarray(a, dtype=np.int64) for a in arrays)
    ins_w = ins_w.reshape(ins_src.shape[0], -1) if ins_src.size else np.zeros((0, g.K), np.int64)
    applied = O.ref_apply(g.ref, ins_src, ins_dst, ins_w, del_src, del_dst)
    g_after = applied.graph

    result = sssp.Result.from_arrays(graph, s, d_in, p_in, canonicalize=False, **opts)
    stats = sssp.update(graph, Batch(ins_src, ins_dst, ins_w, del_src, del_dst), result)
    for what, expected, actual in zip(("row_ptr", "col_ind", "weights"), g_after.csr(),
                                      (graph.row_ptr, graph.col_ind, graph.weights)):
        _same(spec, f"{what} after apply", expected, actual)
    summary = dataclasses.asdict(stats.batch)
    if summary != applied.summary:
        _fail(spec, f"apply summary {summary} != oracle {applied.summary}")
    d_out, p_out = result.to_numpy()
    oracle = O.expected_update(applied, k, s, d_in, p_in)
    _same(spec, "update() distances", oracle.distances, d_out)
    _same(spec, "update() parents (closed form)", oracle.parents, p_out)
    for what, exp, got in (("invalidated", oracle.invalidated, stats.invalidated),
                           ("affected", oracle.affected, stats.affected),
                           ("packed_parents", oracle.packed, stats.packed_parents)):
        if exp != got:
            _fail(spec, f"{what}: oracle {exp}, host reference {got}")
    if spec.expect_packed is not None and stats.packed_parents != spec.expect_packed:
        _fail(spec, f"the case is meant to have packed_parents={spec.expect_packed}")

    computed = sssp.compute(graph, s, **opts)
    d_c, p_c = computed.to_numpy()
    n2 = g_after.num_vertices
    d_ref2, p_ref2 = O.canonical_tree(n2, s, *g_after.edges(k))
    _same(spec, "compute() distances on G_t+1", d_ref2, d_c)
    _same(spec, "compute() parents on G_t+1", p_ref2, p_c)
    compute_packed = O.oracle_packed(n2, max(1, g_after.max_weight(k)))
    if computed.stats.packed_parents != compute_packed:
        _fail(spec, "compute() packed_parents disagrees with the packing rule")
    if spec.expect_compute_packed is not None and compute_packed != spec.expect_compute_packed:
        _fail(spec, f"the case is meant to have compute packed_parents={spec.expect_compute_packed}")
    if d_c.tobytes() != d_out.tobytes() or d_c.dtype != d_out.dtype:
        _fail(spec, "update() and compute() distances differ")
    same_parents = p_c.dtype == p_out.dtype and p_c.tobytes() == p_out.tobytes()
    if spec.tree == "canonical" and not same_parents:
        _fail(spec, "update() from a canonical tree differs from compute() on G_t+1")
    if not stats.packed_parents and not same_parents:
        _fail(spec, "distance-only update() parents are not the canonical ones")

    members = dict(d_in=d_in, p_in=p_in, ins_src=ins_src, ins_dst=ins_dst, ins_w=ins_w, del_src=del_src,
                   del_dst=del_dst, d_out=d_out, p_out=p_out)
    if not same_parents:
        members["compute_p"] = p_c
    meta = dict(
        name=spec.name, graph=graph_id(g), source=s, objective=k, delta=spec.delta, offset_dtype=spec.offset_dtype,
        input_tree=spec.tree, mix=spec.mix, description=spec.description, arrays=sorted(members),
        n=n, m=g.m, K=g.K, n_after=n2, m_after=g_after.num_edges,
        noncanonical_parents=int((p_in != p0).sum()),
        expect=dict(invalidated=oracle.invalidated, affected=oracle.affected, packed_parents=oracle.packed,
                    candidates=oracle.candidates, batch=summary, compute_packed_parents=compute_packed,
                    compute_parents_same=bool(same_parents)),
    )
    return meta, members


def generate(out_dir: Path, *, specs: list[CaseSpec] | None = None, progress: bool = True) -> dict:
    """Build and check every case, write the shards and the manifest; returns the manifest."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    specs = catalogue() if specs is None else specs
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise GenerationError("duplicate case names in the catalogue")
    shards: dict[str, dict] = {}
    start = time.perf_counter()
    for i, spec in enumerate(specs):
        meta, members = build_case(spec)
        shard = shards.setdefault(spec.shard, {"cases": [], "members": {}})
        shard["cases"].append(meta)
        gid = meta["graph"]
        for key, arr in (("row_ptr", spec.graph.row_ptr), ("col_ind", spec.graph.col_ind),
                         ("weights", spec.graph.weights)):
            shard["members"][f"graphs/{gid}/{key}"] = np.asarray(arr, dtype=np.int64)
        for key, arr in members.items():
            shard["members"][f"cases/{spec.name}/{key}"] = arr
        if progress and (i + 1) % 50 == 0:
            print(f"  {i + 1}/{len(specs)} cases built and checked ({time.perf_counter() - start:.1f} s)",
                  file=sys.stderr)
    for stale in out_dir.glob("*.npz"):
        if stale.name not in shards:
            stale.unlink()
    for name, shard in shards.items():
        shard["members"]["meta"] = encode_json({"cases": shard["cases"]})
        write_shard(out_dir / name, shard["members"])
    return write_manifest(out_dir, {name: [c["name"] for c in shard["cases"]] for name, shard in shards.items()},
                          generator=GENERATOR)


# -- command line ---------------------------------------------------------------------------------


def _cmd_generate(args) -> int:
    manifest = generate(Path(args.out), progress=not args.quiet)
    print(f"wrote {manifest['total_cases']} cases, {manifest['total_bytes']} bytes in "
          f"{len(manifest['files'])} shards to {args.out}")
    return ExitCode.OK


def _cmd_verify(args) -> int:
    try:
        corpus = load_corpus(args.corpus)
    except CorpusMissingError as exc:
        print(exc, file=sys.stderr)
        return ExitCode.NO_CORPUS
    except CorpusCorruptError as exc:
        print(exc, file=sys.stderr)
        return ExitCode.CORRECTNESS
    print(f"{len(corpus.cases)} cases, {corpus.manifest['total_bytes']} bytes: every digest matches")
    return ExitCode.OK


def _cmd_check(args) -> int:
    """Regenerate into a temporary directory and compare digests with the stored manifest."""
    try:
        stored = load_corpus(args.corpus).manifest
    except (CorpusMissingError, CorpusCorruptError) as exc:
        print(exc, file=sys.stderr)
        return ExitCode.NO_CORPUS if isinstance(exc, CorpusMissingError) else ExitCode.CORRECTNESS
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp), progress=not args.quiet)
    differ = sorted(set(stored["files"]) ^ set(fresh["files"]))
    differ += sorted(name for name in set(stored["files"]) & set(fresh["files"])
                     if stored["files"][name]["sha256"] != fresh["files"][name]["sha256"])
    if differ:
        print("the regenerated corpus differs from the stored one in: " + ", ".join(differ), file=sys.stderr)
        return ExitCode.CORRECTNESS
    print(f"regenerated {fresh['total_cases']} cases: identical to the stored corpus")
    return ExitCode.OK


def _cmd_list(args) -> int:
    try:
        corpus = load_corpus(args.corpus)
    except (CorpusMissingError, CorpusCorruptError) as exc:
        print(exc, file=sys.stderr)
        return ExitCode.NO_CORPUS if isinstance(exc, CorpusMissingError) else ExitCode.CORRECTNESS
    for case in corpus.cases:
        print(f"{case['name']:55s} n={case['n']:<6d} m={case['m']:<6d} {case['description']}")
    return ExitCode.OK


def main(argv=None, prog: str = "python -m conformance") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("generate", help="build, check and store the corpus")
    p.add_argument("--out", default=str(DEFAULT_CORPUS))
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_cmd_generate)
    for name, func, text in (("verify", _cmd_verify, "check the manifest digests"),
                             ("check", _cmd_check, "regenerate and compare with the stored corpus"),
                             ("list", _cmd_list, "list the cases")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--corpus", default=str(DEFAULT_CORPUS))
        p.add_argument("--quiet", action="store_true")
        p.set_defaults(func=func)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    interrupt.run(main)
