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
from .test_push_width import SHAPES

pytestmark = S.GPU

BUDGETS = ("1", "1024", "1000000000")
CONFIGS = ("fused", "fused+batched")


@pytest.fixture(autouse=True)
def _needs_fused():
    if not S.fused_available():
        pytest.skip("the fused engine does not run on this device")


def _distance_only(n, src, dst, w):
    """The same shape in at least 70,000 vertices (the extra ones unreachable) with one extra edge
    of weight 2^31 - 1 into the source (never relaxed): the packed words no longer fit, so the run
    keeps plain distances (algorithm.md §4.3, §4.4)."""
    n = max(n, 70_000)
    assert not O.oracle_packed(n, O.WEIGHT_MAX)
    return (n, np.append(src, n - 1), np.append(dst, 0), np.append(w, O.WEIGHT_MAX))


@pytest.mark.parametrize("words", ["packed", "distance-only"])
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_solo_stretches_give_the_reference_bytes(monkeypatch, shape, budget, words):
    monkeypatch.setenv(fused.SOLO_ENV, budget)
    rng = np.random.default_rng(sorted(SHAPES).index(shape) + 101)
    n, src, dst, w = SHAPES[shape](rng)
    if words == "distance-only":
        n, src, dst, w = _distance_only(n, src, dst, w)
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

    # a delta above every distance: one epoch whose near lists hold one vertex each, thousands
    # of push iterations in a row
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
