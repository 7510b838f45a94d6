"""Conformance check C4: fused == operators == host, byte for byte (algorithm.md §13 items 2, 4-6,
12; ADR 0026 item 7).

After ``compute()`` and after each of three consecutive batches, for every batch mix, small and
medium sizes, canonical and non-canonical input trees, int32 and int64 edge offsets: distances,
parents, ``invalidated``, ``affected``, ``packed_parents`` and the batch summary of both CUDA
engines equal the host reference's. All results of one case ride in the same ``update()`` call,
so they see the same commit. Then the distance-only mode, and the post-commit errors on the
operators engine (poisoning, and correct bytes afterwards).
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import errors, sssp

from .. import harness as H
from conformance import oracles as O
from . import ops_support as S

pytestmark = S.GPU

#: The batch mixes of C4 -> (harness batch kind, multigraph).
MIXES = {
    "insert-only": ("insert", False),
    "delete-only": ("delete", False),
    "mixed": ("mixed", False),
    "re-weight": ("reweight", False),
    "tree-weight-increase": ("tree_increase", False),
    "local": ("local", False),
    "disconnecting": ("disconnect", False),
    "growth": ("growth", False),
    "parallel-edges": ("raise_parallel", True),
    "self-loops": ("selfloop", True),
    "empty": ("empty", False),
    "delete-all": ("delete_all", False),
}
SIZES = {"small": 40, "medium": 2500}
OFFSETS = {"int32": np.int32, "int64": np.int64}
SMALL_SHAPES = ("sparse", "dense", "grid", "chain", "hub")
WEIGHT_CLASSES = ("tiny", "mid", "huge")
DELTAS = (0, 1, 7, 300)


def _seed(*parts) -> int:
    """A stable seed per test case (Python's str hash is salted per process)."""
    text = "|".join(map(str, parts))
    return sum((i + 1) * ord(c) for i, c in enumerate(text)) % (2**32)


def _build(rng, size: str, mix_index: int, multi: bool, offset_dtype):
    n = SIZES[size]
    shape = SMALL_SHAPES[mix_index % len(SMALL_SHAPES)] if size == "small" else "sparse"
    wclass = WEIGHT_CLASSES[mix_index % len(WEIGHT_CLASSES)]
    n, src, dst, w = H.random_graph(rng, shape, n, 1, wclass, multi=multi)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n, offset_dtype=offset_dtype)
    assert graph.offset_dtype == np.dtype(offset_dtype)
    return graph, wclass


@pytest.mark.parametrize("offsets", list(OFFSETS))
@pytest.mark.parametrize("canonical", [True, False], ids=["canonical", "noncanonical"])
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("mix", list(MIXES))
def test_c4_compute_then_three_batches(mix, size, canonical, offsets):
    kind, multi = MIXES[mix]
    mix_index = list(MIXES).index(mix)
    rng = np.random.default_rng(_seed(mix, size, canonical, offsets))
    graph, wclass = _build(rng, size, mix_index, multi, OFFSETS[offsets])
    source = int(rng.integers(0, graph.num_vertices))
    delta = DELTAS[(mix_index + len(size)) % len(DELTAS)]

    # every configuration: both operators loops, both push expansions (the schedule never matters)
    results = S.compute_all(graph, source, engines=S.ALL_CUDA_CONFIGS, delta=delta)
    S.assert_conformant(results, what=f"compute ({mix}, {size})")
    if not canonical:
        results = S.perturb_all(rng, graph, results)

    for step in range(3):
        ref = H.ref_of(graph)
        _, parents = results["host"].to_numpy()
        arrays = H.random_batch(rng, kind, ref, parents, source, wclass)
        stats = S.update_all(graph, H.make_batch(arrays), results)
        S.assert_conformant(results, stats, update=True, what=f"{mix} {size} batch {step}")
        # the host itself against the independent Dijkstra oracle, so that equality means correct
        src, dst, w = H.ref_of(graph).edges(0)
        d_star = O.dijkstra_distances(graph.num_vertices, src, dst, w, source)
        np.testing.assert_array_equal(results["host"].to_numpy()[0], d_star)


def test_c4_several_objectives_and_engines_in_one_update():
    """K = 2: both objectives on every engine in one update, with a forced delta on one of them."""
    rng = np.random.default_rng(4242)
    n, src, dst, w = H.random_graph(rng, "sparse", 300, 2, "tiny", multi=True)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    per_objective = [S.compute_all(graph, 3, objective=k, delta=(0 if k == 0 else 5)) for k in (0, 1)]
    for step, kind in enumerate(("mixed", "tree_increase", "growth")):
        _, parents = per_objective[0]["host"].to_numpy()
        arrays = H.random_batch(rng, kind, H.ref_of(graph), parents, 3, "tiny")
        everything = {f"{name}/{k}": r for k, res in enumerate(per_objective) for name, r in res.items()}
        stats = S.update_all(graph, H.make_batch(arrays), everything)
        for k, res in enumerate(per_objective):
            S.assert_conformant(res, {name: stats[f"{name}/{k}"] for name in res}, update=True,
                                what=f"objective {k} step {step}")


# ---------------------------------------------------------------------------------------------
# Distance-only mode (algorithm.md §4.3, §4.4): n >= 65538 with a weight of 2^31 - 1.


@pytest.mark.parametrize("canonical", [True, False], ids=["canonical", "noncanonical"])
def test_c4_distance_only_mode(canonical):
    rng = np.random.default_rng(65538 + canonical)
    n = 70000
    src = np.concatenate([np.arange(n - 1), rng.integers(0, n, size=2 * n)])
    dst = np.concatenate([np.arange(1, n), rng.integers(0, n, size=2 * n)])
    w = rng.integers(1, 4, size=src.size)  # tiny weights: many ties, so parents matter
    w[int(rng.integers(0, src.size))] = O.WEIGHT_MAX
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    assert not O.oracle_packed(n, O.WEIGHT_MAX)
    results = S.compute_all(graph, 0, engines=S.ALL_CUDA_CONFIGS)
    S.assert_conformant(results, what="distance-only compute")
    assert all(r.stats.packed_parents is False for r in results.values())
    if not canonical:
        results = S.perturb_all(rng, graph, results)
    for step, kind in enumerate(("mixed", "tree_delete", "growth")):
        _, parents = results["host"].to_numpy()
        arrays = H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "tiny")
        stats = S.update_all(graph, H.make_batch(arrays), results)
        S.assert_conformant(results, stats, update=True, what=f"distance-only step {step}")
        assert stats["operators"].packed_parents is False
    # distance-only output is canonical whatever the input: equal to compute() on G_{t+1}
    fresh = sssp.compute(graph, 0, backend="host")
    H.assert_result_bytes_equal(results["operators"], fresh)


# ---------------------------------------------------------------------------------------------
# Post-commit errors on the operators engine (algorithm.md §8.3, §13.6)


def _cycle_case():
    """A chain 0 -> 1 -> ... -> 7 with 2 <-> 3 both ways, and a tree whose 4 <-> 5 form a cycle."""
    src = np.array([0, 1, 2, 3, 4, 5, 6, 3, 5], dtype=np.int64)
    dst = np.array([1, 2, 3, 4, 5, 6, 7, 2, 4], dtype=np.int64)
    w = np.ones(src.size, dtype=np.int64)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=8)
    d = np.arange(8, dtype=np.int64)
    p = np.array([-1, 0, 1, 2, 5, 4, 5, 6], dtype=np.int32)  # 4 -> 5 -> 4: no root on it
    return graph, d, p


def _import(graph, d, p, engine):
    if engine == "host":
        return sssp.Result.from_arrays(graph, 0, d, p, canonicalize=False, validate=False, backend="host")
    r = sssp.Result.from_arrays(graph, 0, d, p, canonicalize=False, validate=False, backend="host")
    c = r.clone(backend="cuda")
    c.set_options(cuda_engine=engine)
    return c


def _expect_post_commit_error(graph, result, batch, reason):
    version = graph.version
    with pytest.raises(errors.InvalidArgumentError) as info:
        sssp.update(graph, batch, result)
    assert info.value.reason == reason, info.value
    assert not isinstance(info.value, errors.StaleResultError)
    assert graph.version == version + 1  # the commit happened
    assert result.poisoned
    for use in (lambda: result.distances, lambda: result.parents, lambda: result.stats,
                lambda: result.to_numpy(), lambda: result.clone(),
                lambda: sssp.update(graph, engines.Batch.empty(), result)):
        with pytest.raises(errors.StaleResultError):
            use()
    assert result.source == 0 and result.backend in ("host", "cuda")


def _check_recovery(graph, engine):
    """After a failure, compute() and update() on the same device give the host's bytes."""
    results = S.compute_all(graph, 0, engines=() if engine == "host" else (engine,))
    S.assert_conformant(results, what=f"compute after an error ({engine})")
    rng = np.random.default_rng(7)
    _, parents = results["host"].to_numpy()
    arrays = H.random_batch(rng, "mixed", H.ref_of(graph), parents, 0, "tiny")
    stats = S.update_all(graph, H.make_batch(arrays), results)
    S.assert_conformant(results, stats, update=True, what=f"update after an error ({engine})")


@pytest.mark.parametrize("engine", ["host", "fused", "operators"])
def test_parent_cycle_poisons_and_recovers(engine):
    graph, d, p = _cycle_case()
    result = _import(graph, d, p, engine)
    batch = engines.Batch(delete_src=[0], delete_dst=[1])  # root 1; the 4 <-> 5 cycle has none
    _expect_post_commit_error(graph, result, batch, "parent_cycle")
    _check_recovery(graph, engine)


@pytest.mark.parametrize("engine", ["host", "fused", "operators"])
def test_invalid_input_poisons_and_wins_over_a_cycle(engine):
    graph, d, p = _cycle_case()
    d = d.copy()
    d[6] = 7 * 1 + 1  # bound = W * (n - 1) = 7: one above it
    result = _import(graph, d, p, engine)
    batch = engines.Batch(delete_src=[0], delete_dst=[1])
    _expect_post_commit_error(graph, result, batch, "invalid_input")
    _check_recovery(graph, engine)


@pytest.mark.parametrize("engine", ["host", "fused", "operators"])
def test_negative_input_distance_is_invalid_input(engine):
    graph, d, _ = _cycle_case()
    d = d.copy()
    d[3] = -5
    p = np.array([-1, 0, 1, 2, 3, 4, 5, 6], dtype=np.int32)
    result = _import(graph, d, p, engine)
    _expect_post_commit_error(graph, result, engines.Batch.empty(), "invalid_input")
    _check_recovery(graph, engine)


@pytest.mark.parametrize("engine", ["host", "fused", "operators"])
def test_cycle_through_a_root_and_cycle_without_changes_are_no_error(engine):
    """Not errors (algorithm.md §5.5); the output of an invalid tree is unspecified, so only the
    deterministic invalidated count is compared."""
    graph, d, p = _cycle_case()
    result = _import(graph, d, p, engine)
    # the cycle 4 <-> 5 contains the root 5 (tree edge 4 -> 5 deleted): 4, 5, 6, 7 are flagged
    stats = sssp.update(graph, engines.Batch(delete_src=[4], delete_dst=[5]), result)
    assert not result.poisoned
    assert stats.invalidated == 4
    graph, d, p = _cycle_case()
    result = _import(graph, d, p, engine)
    # no changed edge (an insertion makes only a head): no cycle check runs
    stats = sssp.update(graph, engines.Batch([0], [7], [[9]]), result)
    assert not result.poisoned
    assert stats.invalidated == 0
