"""The fused engine's solo push on the GPU (fused.cu solo_push, issue 34; ``ENGINES_FUSED_SOLO``):
block 0 alone runs the push iterations of short near lists, meeting with __syncthreads, and hands
the last list back to the grid. Whatever the budget, every run must return the host reference's
bytes (compute() also SciPy's distances with the canonical parents), on both push expansions, packed
and distance-only; a run whose lists all fit must spend fewer grid barriers than push iterations;
and the near-list log must still hold every iteration (its lengths sum to ``pushes``).

Budgets: 1 edge (a stretch takes a single vertex, so stretches and grid iterations alternate), 1,024
(the lists of small updates) and 10^9 (every list: whole runs in one block). Shapes as in
test_push_width: a chain (one vertex per iteration), a grid (lists of a few hundred), a star (a lone
centre with 10^5 out-edges, then 10^5 leaves: a stretch hands a list far above its limit back).
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines.sssp.cuda import fused, push
from .. import harness as H
from conformance import oracles as O
from . import ops_support as S
from .test_push_width import SHAPES, shape_edges

pytestmark = S.GPU

BUDGETS = ("1", "1024", "1000000000")
CONFIGS = ("fused", "fused+batched", "fused+vertex")


@pytest.fixture(autouse=True)
def _needs_fused(monkeypatch):
    if not S.fused_available():
        pytest.skip("the fused engine does not run on this device")
    # the near lists and barriers counted here are the plain push's: chains (tested with the solo
    # push in test_push_chain) shorten them, whatever their default
    monkeypatch.setenv("ENGINES_PUSH_CHAIN", "0")


@pytest.mark.parametrize("words", ["packed", "distance-only"])
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_solo_stretches_give_the_reference_bytes(monkeypatch, shape, budget, words):
    monkeypatch.setenv(fused.SOLO_ENV, budget)
    rng = np.random.default_rng(sorted(SHAPES).index(shape) + 101)
    n, src, dst, w = shape_edges(shape, words, rng)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)

    for delta in (1, 10**6):
        results = S.compute_all(graph, 0, engines=CONFIGS, delta=delta)
        S.assert_conformant(results, what=f"{shape} compute delta {delta} solo {budget}")
        exp_d, exp_p = O.canonical_tree(n, 0, src, dst, w)
        for name in CONFIGS:
            H.assert_tree_equals(results[name], exp_d, exp_p, f"{shape} compute {name} solo {budget}")
            assert bool(results[name].stats.packed_parents) == (words == "packed")

    for kind in ("tree_delete", "mixed", "tree_increase"):
        _, parents = results["host"].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True, what=f"{shape} {kind} solo {budget}")


@pytest.mark.parametrize("config", CONFIGS)
def test_a_run_whose_lists_all_fit_spends_fewer_grid_barriers(monkeypatch, config):
    rng = np.random.default_rng(7)
    n, src, dst, w = SHAPES["chain"](rng)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    options = S.CUDA_CONFIGS[config]

    # a delta above every distance: no epoch, near lists of one vertex each, thousands of push
    # iterations in a row
    monkeypatch.setenv(fused.SOLO_ENV, "0")
    grid = engines.sssp.compute(graph, 0, backend="cuda", delta=10**9, **options)
    monkeypatch.setenv(fused.SOLO_ENV, "1000000000")
    solo = engines.sssp.compute(graph, 0, backend="cuda", delta=10**9, **options)

    H.assert_result_bytes_equal(grid, solo)
    assert grid.stats.iterations > 1000
    assert grid.stats.grid_syncs == 1 + grid.stats.iterations + 2 * grid.stats.epochs
    # every list fits: the epoch's near lists run in one stretch (one barrier), not one each
    assert solo.stats.grid_syncs < solo.stats.iterations / 10, solo.stats
    assert (solo.stats.host_syncs, solo.stats.sync_budget) == (1, 1)

    profile = push.push_profile(solo)  # the log still holds every iteration, solo ones included
    assert profile.complete and profile.iterations == solo.stats.iterations
    assert int(profile.near_lengths.sum()) == solo.stats.pushes
    assert (profile.near_lengths > 0).all()


def _broom(k: int, leaves: int, j: int, fan_weight: int):
    """A path 0 -> ... -> k-1, a fan k-1 -> `leaves` leaves (weight `fan_weight`), every leaf -> z
    (distinct weights: z's parent is unique), then z -> a path of j vertices. Unique shortest
    paths; compute()'s near lists are exactly [1] * k, [leaves], [1] * (j + 1)."""
    path = np.arange(k, dtype=np.int64)
    leaf = np.arange(k, k + leaves, dtype=np.int64)
    z = k + leaves
    tail = np.arange(z + 1, z + 1 + j, dtype=np.int64)
    src = np.concatenate([path[:-1], np.full(leaves, k - 1), leaf, [z], tail[:-1]])
    dst = np.concatenate([path[1:], leaf, np.full(leaves, z), tail[:1], tail[1:]])
    w = np.concatenate([np.ones(k - 1, dtype=np.int64), np.full(leaves, fan_weight),
                        1 + np.arange(leaves), np.ones(j, dtype=np.int64)])
    return z + 1 + j, src, dst, w


# far-pile: delta 70 keeps every leaf -> z candidate (at most 64 above the leaves) below the raised
# threshold, so z is never also put in the far pile. With delta 10 (as first written) a leaf whose
# candidate is above the threshold may lower z first and append it to the pile; an epoch after the
# tail then pushes z once more, an extra list of one that depends on the race (found on the H200 at
# 1b2fb4c: the plain grid run has it too, the bytes are equal either way).
@pytest.mark.parametrize("fan_weight, delta", [(1, 10**6), (100, 70)], ids=["one-epoch", "far-pile"])
@pytest.mark.parametrize("j", [1, 2, 3])
@pytest.mark.parametrize("k", range(1, 7))
def test_stretches_hand_their_list_back_at_every_parity(monkeypatch, k, j, fan_weight, delta):
    """A budget of one edge takes only the one-vertex lists: a stretch of k iterations (k odd and
    even: both ways of advancing the rotation), one grid iteration over the fan (through the far
    pile and an epoch when the fan's weight is above delta), a stretch of j + 1. A wrong hand-over
    (count slot, buffer parity, generation) loses or repeats a list and changes the lengths, the
    bytes or the barrier count."""
    leaves = 64
    n, src, dst, w = _broom(k, leaves, j, fan_weight)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    monkeypatch.setenv(fused.SOLO_ENV, "0")
    plain = engines.sssp.compute(graph, 0, backend="cuda", cuda_engine="fused", delta=delta)
    monkeypatch.setenv(fused.SOLO_ENV, "1")
    assert fused.solo_limit(n, src.size, 1) == 1
    solo = engines.sssp.compute(graph, 0, backend="cuda", cuda_engine="fused", delta=delta)

    H.assert_result_bytes_equal(plain, solo)
    exp_d, exp_p = O.canonical_tree(n, 0, src, dst, w)
    H.assert_tree_equals(solo, exp_d, exp_p, f"broom k={k} j={j}")
    expected = [1] * k + [leaves] + [1] * (j + 1)
    # the log of the device's last run: solo's (it ran after plain)
    assert push.push_profile(solo).near_lengths.tolist() == expected
    assert solo.stats.iterations == plain.stats.iterations == len(expected)
    assert solo.stats.pushes == sum(expected)
    assert solo.stats.epochs == plain.stats.epochs == (1 if fan_weight > delta else 0)
    # two stretches and one grid iteration instead of len(expected) grid iterations
    assert plain.stats.grid_syncs == 1 + len(expected) + 2 * plain.stats.epochs
    assert solo.stats.grid_syncs == 1 + 2 + 1 + 2 * solo.stats.epochs


def test_a_bad_switch_is_an_error_and_changes_nothing(monkeypatch):
    rng = np.random.default_rng(3)
    n, src, dst, w = SHAPES["grid"](rng)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    before = engines.sssp.compute(graph, 0, backend="cuda", cuda_engine="fused")
    monkeypatch.setenv(fused.SOLO_ENV, "lots")
    with pytest.raises(engines.errors.InvalidArgumentError, match=fused.SOLO_ENV):
        engines.sssp.compute(graph, 0, backend="cuda", cuda_engine="fused")
    monkeypatch.delenv(fused.SOLO_ENV)
    H.assert_result_bytes_equal(before, engines.sssp.compute(graph, 0, backend="cuda", cuda_engine="fused"))

    # update(): refused before the commit (the engine's module is prepared first), so the graph
    # keeps its version and the result is neither changed nor poisoned
    d0, p0 = before.to_numpy()
    version = graph.version
    batch = H.make_batch(H.random_batch(rng, "mixed", H.ref_of(graph), p0, 0, "mid"))
    monkeypatch.setenv(fused.SOLO_ENV, "lots")
    with pytest.raises(engines.errors.InvalidArgumentError, match=fused.SOLO_ENV):
        engines.sssp.update(graph, batch, before)
    assert graph.version == version and not before.poisoned
    d1, p1 = before.to_numpy()
    assert d1.tobytes() == d0.tobytes() and p1.tobytes() == p0.tobytes()
