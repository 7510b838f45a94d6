"""The fused update's pull by offers on the GPU (kernels.cuh offer_to_candidates, issue 34;
``ENGINES_PULL_OFFERS=<percent>``): when the candidates are more than that percent of the
vertices, every vertex with a finite word offers along its out-edges to the candidates instead of
each candidate pulling from its in-neighbours. The candidates end with the same key-minima
(algorithm.md §5.8, §5.12), so every run must return the host reference's bytes: the golden corpus
and randomized chains at 1 % (nearly every update with candidates pulls by offers), packed and
distance-only, with and without the solo push, against the host and the closed-form canonical
tree; and large invalidations at 50 % on a grid and on a real road network, where the statistics
show that the offers ran (more invalidated vertices than the limit).
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.sssp.cuda import fused
from conformance import oracles as O
from .. import harness as H
from . import ops_support as S
from .test_push_width import SHAPES, shape_edges
from .test_wide_passes import REPLAY_CONFIGS, SOLO

pytestmark = S.GPU

#: The fused configurations (the operators engine always pulls).
FUSED = tuple(c for c in S.ALL_CUDA_CONFIGS if S.engine_of(c) == "fused")


@pytest.fixture
def offers(monkeypatch):
    S.skip_unless_it_runs("fused")
    monkeypatch.setenv(fused.OFFERS_ENV, "1")
    return monkeypatch


@pytest.mark.parametrize("shard", S.golden_shards())
def test_golden_corpus_gives_the_stored_bytes(offers, shard):
    """Every golden case replayed as the golden replay does (update() from the stored input tree,
    then compute(); distances, parents, invalidated, affected, the apply summary, the
    synchronizations) on the fused configurations."""
    from conformance.replay import Config, replay

    corpus = S.golden_corpus()
    cases = [c for c in corpus.cases if c["file"] == shard]
    assert cases, f"no cases in {shard}"
    configs = [Config.of(text) for text in REPLAY_CONFIGS if "fused" in text]
    failures = [f"{o.config} {o.case}: {'; '.join(o.mismatches[:3])}"
                for o in replay(corpus, cases, configs) if o.mismatches]
    assert not failures, f"{len(failures)} runs differ:\n" + "\n".join(failures[:20])


@pytest.mark.parametrize("solo", SOLO)
@pytest.mark.parametrize("words", ["packed", "distance-only"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_randomized_chains_give_the_reference_bytes(offers, shape, words, solo):
    """compute() of the shape with delta 1 and 10^6, then a chain of updates (subtree deletions,
    increases, mixed batches with insertions, growth) against the host's bytes and, from the
    canonical compute(), the closed-form canonical tree after each batch."""
    offers.setenv(fused.SOLO_ENV, solo)
    rng = np.random.default_rng(sorted(SHAPES).index(shape) + 7717)
    n, src, dst, w = shape_edges(shape, words, rng)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    for delta in (1, 10**6):
        results = S.compute_all(graph, 0, engines=FUSED, delta=delta)
        S.assert_conformant(results, what=f"{shape} compute delta {delta}")
    offered = []
    for step, kind in enumerate(("tree_delete", "mixed", "tree_increase", "mixed", "growth")):
        _, parents = results["host"].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True, what=f"{shape} step {step} {kind}")
        ref = H.ref_of(graph)
        exp_d, exp_p = O.canonical_tree(graph.num_vertices, 0, *ref.edges(0))
        for name in FUSED:
            H.assert_tree_equals(results[name], exp_d, exp_p, f"{shape} step {step} {kind} {name}")
        offered.append(stats[FUSED[0]].invalidated > fused.offer_above(graph.num_vertices, 1))
    # the chain's and the packed grid's deletions invalidate more than 1 % (the offers ran); a
    # star's subtrees are leaves, and the distance-only grid's vertices are mostly unreached
    assert any(offered) or shape == "star" or (shape, words) == ("grid", "distance-only"), offered


def _subtree_sizes(parents, distances):
    """Each vertex's subtree size in the tree ``parents`` (unreached vertices: 1, their own)."""
    size = np.ones(parents.size, dtype=np.int64)
    reached = np.flatnonzero(parents >= 0)
    for v in reached[np.argsort(-distances[reached], kind="stable")]:  # children before parents
        size[parents[v]] += size[v]
    return size


def _roots_of_most(parents, distances, source=0, low=0.6, high=0.95):
    """Tree arcs (parent, root) whose subtrees hold between ``low`` and ``high`` of the reached
    vertices together: down from the source through the largest child while one child holds more
    than ``high``, then the largest children of that vertex until they hold ``low``."""
    size = _subtree_sizes(parents, distances)
    n = size[source]
    v = source
    while True:
        children = np.flatnonzero(parents == v)
        children = children[np.argsort(-size[children], kind="stable")]
        assert children.size, "the tree has no vertex with a subtree that large"
        if size[children[0]] > high * n:
            v = children[0]
            continue
        picked = children[np.cumsum(size[children]) - size[children] < low * n]
        assert low * n <= size[picked].sum() <= high * n, (size[picked].sum(), n)
        return v, picked


def _raise_most(graph, results, by):
    """A batch that raises every weight of the tree arcs _roots_of_most picks in the host's tree
    by ``by`` (their subtrees are invalidated), and the one that puts them back."""
    distances, parents = results["host"].to_numpy()
    parent, roots = _roots_of_most(parents, distances)
    ref = H.ref_of(graph)
    src, dst, _ = ref.edges(0)
    row = slice(np.searchsorted(src, parent, side="left"), np.searchsorted(src, parent, side="right"))
    at = [row.start + np.flatnonzero(dst[row] == r)[0] for r in roots]  # each arc's first entry
    weights = np.stack([ref.edges(k)[2][at] for k in range(graph.num_weights)], axis=1)
    tails = np.full(roots.size, parent)
    return engines.Batch(tails, roots, weights + by), engines.Batch(tails, roots, weights)


def _raise_and_restore(monkeypatch, graph, what, steps=2):
    """Raise the weights of tree arcs whose subtrees hold most of the graph (60-95 %) and put them
    back, ``steps`` times, with the pull by offers above half the vertices: each raise invalidates
    those subtrees (more candidates than the limit: the offers, from the vertices still reached),
    each restoration lists only its heads (the pull). Every result equals the host's after each."""
    monkeypatch.setenv(fused.OFFERS_ENV, "50")
    results = S.compute_all(graph, 0, engines=FUSED)
    S.assert_conformant(results, what=f"{what} compute")
    raise_most, restore = _raise_most(graph, results, 1000)
    for step in range(steps):
        for label, batch in (("raise", raise_most), ("restore", restore)):
            stats = S.update_all(graph, batch, results)
            S.assert_conformant(results, stats, update=True, what=f"{what} {label} {step}")
            invalidated = stats[FUSED[0]].invalidated
            if label == "raise":
                assert invalidated > fused.offer_above(graph.num_vertices, 50), (what, stats[FUSED[0]])
            else:
                assert invalidated == 0, (what, stats[FUSED[0]])


def _grid(rng, side, weights):
    """A side x side grid, both arcs of every neighbour pair, weights drawn from ``weights``, the
    source (vertex 0) at the centre (its four subtrees are quarters)."""
    ids = np.arange(side * side).reshape(side, side)
    a = np.concatenate([ids[:, :-1].ravel(), ids[:-1, :].ravel()])
    b = np.concatenate([ids[:, 1:].ravel(), ids[1:, :].ravel()])
    src, dst = np.concatenate([a, b]), np.concatenate([b, a])
    centre = ids[side // 2, side // 2]
    src, dst = (np.where(x == 0, centre, np.where(x == centre, 0, x)) for x in (src, dst))
    return engines.Graph.from_edges(src, dst, rng.choice(weights, size=src.size), num_vertices=side * side)


def test_a_perturbed_tree_keeps_its_parents_outside_the_candidates(monkeypatch):
    """From a non-canonical input tree (each tie parent a random tight in-neighbour, algorithm.md
    §13.4) on a grid of weights 1-3 (many ties), most of the tree raised at 50 %: only candidates
    and improved vertices may change parent (algorithm.md §5.12's closed form), so an offer to any
    other vertex would give it a lower-id tight parent the host's bytes do not have. The witness:
    vertices that kept a non-canonical parent through the update."""
    S.skip_unless_it_runs("fused")
    monkeypatch.setenv(fused.OFFERS_ENV, "50")
    rng = np.random.default_rng(3434)
    graph = _grid(rng, 100, np.array([1, 2, 3]))
    canonical = S.compute_all(graph, 0, engines=FUSED)
    _, canonical_parents = canonical["host"].to_numpy()
    results = S.perturb_all(rng, graph, canonical)
    _, perturbed = results["host"].to_numpy()
    raise_most, _ = _raise_most(graph, results, 1000)
    stats = S.update_all(graph, raise_most, results)
    S.assert_conformant(results, stats, update=True, what="perturbed grid raise")
    assert stats[FUSED[0]].invalidated > fused.offer_above(graph.num_vertices, 50), stats[FUSED[0]]
    _, after = results["host"].to_numpy()
    kept = (after == perturbed) & (perturbed != canonical_parents)
    assert kept.sum() > 0, "no vertex kept a non-canonical parent: the test would not see a stray offer"


def test_a_raised_grid_pulls_by_offers_and_gives_the_reference_bytes(monkeypatch):
    """A 120 x 120 grid with random weights and the source at its centre."""
    S.skip_unless_it_runs("fused")
    graph = _grid(np.random.default_rng(34), 120, np.arange(1, 100))
    _raise_and_restore(monkeypatch, graph, "grid")


def test_a_raised_road_network_gives_the_host_bytes(monkeypatch, real_graphs_dir):
    """luxembourg_osm (114,599 vertices): most of its tree raised and put back twice."""
    from ..engines.test_real_graphs import load_real_graph

    S.skip_unless_it_runs("fused")
    graph, _, _ = load_real_graph(real_graphs_dir, "luxembourg_osm")
    _raise_and_restore(monkeypatch, graph, "luxembourg_osm")
