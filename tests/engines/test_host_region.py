"""The Numba region kernels of the host reference (engines/sssp/host_region.py, issue 35) against
their NumPy references in host_steps: the same flags and parent_cycle condition on random parent
arrays (forests, chains, cycles with and without a root, self-loops), the same words and frontier
of the seed pull on random graphs, packed and distance-only."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.sssp.host_region import invalidate_walk, pull_in
from engines.sssp.host_steps import invalidate_subtrees, pull, words_from_tree
from engines.sssp.packing import Packing, decide_packing

from .. import harness as H


@st.composite
def parent_arrays(draw):
    n = draw(st.integers(1, 60))
    parents = draw(st.lists(st.integers(-1, n - 1), min_size=n, max_size=n))
    roots = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return np.array(parents, dtype=np.int32), np.array(roots, dtype=bool)


@settings(max_examples=400, deadline=None)
@given(parent_arrays())
def test_walk_equals_pointer_jumping(case):
    parents, roots = case
    flag_ref, cycle_ref = invalidate_subtrees(parents, roots)
    flag, cycle = invalidate_walk(parents, roots)
    assert cycle == cycle_ref
    np.testing.assert_array_equal(flag, flag_ref)


def test_walk_on_the_cases_that_decide_a_cycle():
    # a cycle through a root is no error, a rootless cycle is, a chain into it too
    parents = np.array([1, 2, 0, -1, 3], dtype=np.int32)
    roots = np.zeros(5, dtype=bool)
    assert invalidate_walk(parents, roots)[1] is True
    roots[1] = True
    flag, cycle = invalidate_walk(parents, roots)
    assert cycle is False and flag.tolist() == [True, True, True, False, False]
    # a deep chain (the walk must not depend on the depth)
    n = 200_000
    chain = np.arange(-1, n - 1, dtype=np.int32)
    roots = np.zeros(n, dtype=bool)
    roots[n // 2] = True
    flag, cycle = invalidate_walk(chain, roots)
    assert not cycle and flag.sum() == n - n // 2 and flag[n // 2:].all()


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_pull_in_equals_the_numpy_pull(seed, packed):
    rng = np.random.default_rng(seed + 3500)
    n, src, dst, w = H.random_graph(rng, "sparse", 400, 1, "tiny" if seed % 2 else "mid")
    import engines
    from engines import sssp

    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    tree = sssp.compute(graph, 0, backend="host")
    d, p = tree.to_numpy()
    packing = decide_packing(max(1, graph.max_weight(0)), n)
    if not packed:
        packing = Packing(False, 0, packing.bound)
    words = words_from_tree(d, p, packing)
    invalid = rng.choice(n, size=n // 5, replace=False)
    words[invalid] = np.uint64((1 << 64) - 1)
    candidates = np.unique(np.concatenate([invalid, rng.integers(1, n, size=10)])).astype(np.int64)
    reference = words.copy()
    in_edges = graph.in_edges(0)
    frontier_ref = pull(reference, candidates, in_edges.ptr, in_edges.src, in_edges.weight, packing)
    frontier = pull_in(words, candidates, in_edges.ptr, in_edges.src, in_edges.weight, packing)
    np.testing.assert_array_equal(words, reference)
    np.testing.assert_array_equal(np.sort(frontier), np.sort(frontier_ref))


# -- the recompute fallback (host.update, RECOMPUTE_FRACTION) ---------------------------------------

KINDS = ("tree_delete", "mixed", "insert", "delete", "tree_increase", "growth", "local")


def _chain_outputs(seed, fraction, monkeypatch, perturb):
    """Three updates of one random stream with the host engine at a recompute fraction: the
    trees and the counters that must not depend on how the update ran."""
    import engines
    from engines import sssp
    from engines.sssp import host

    from conformance import oracles as O

    monkeypatch.setattr(host, "RECOMPUTE_FRACTION", fraction)
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, "sparse", 300, 1, "tiny" if seed % 3 == 0 else "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    r = sssp.compute(graph, 0, backend="host", delta=3)
    if perturb:  # a non-canonical input: random tight parents
        d, _ = r.to_numpy()
        s, t, ww = H.ref_of(graph).edges(0)
        p = O.perturbed_parents(rng, n, 0, d, s, t, ww).astype(np.int32)
        r = sssp.Result.from_arrays(graph, 0, d, p, canonicalize=False)
    out = []
    for step in range(3):
        _, parents = r.to_numpy()
        kind = KINDS[(seed + step) % len(KINDS)]
        st = sssp.update(graph, H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid")), r)
        out.append((r.to_numpy(), st.invalidated, st.affected, st.packed_parents))
    return out


@pytest.mark.parametrize("perturb", [False, True], ids=["canonical", "perturbed"])
@pytest.mark.parametrize("seed", range(12))
def test_recomputing_gives_the_update_bytes(monkeypatch, seed, perturb):
    """With every eligible update recomputed (fraction 0) the outputs are the update path's
    (fraction above 1: never), tree for tree and counter for counter."""
    always = _chain_outputs(seed + 900, 0.0, monkeypatch, perturb)
    never = _chain_outputs(seed + 900, 2.0, monkeypatch, perturb)
    for (tree_a, *rest_a), (tree_b, *rest_b) in zip(always, never):
        np.testing.assert_array_equal(tree_a[0], tree_b[0])
        np.testing.assert_array_equal(tree_a[1], tree_b[1])
        assert rest_a == rest_b


def test_the_fallback_runs_on_a_canonical_chain(monkeypatch):
    """The criterion is not vacuous: with fraction 0, updates of a canonical tree recompute. The
    chain's tree is compute()'s own (known: it recomputes without the check, host._known_recompute),
    so the check is watched with that shortcut off, and the shortcut on its own."""
    from engines.sssp import host

    decisions = []
    real = host._recompute_instead
    monkeypatch.setattr(host, "_recompute_instead",
                        lambda *a: decisions.append(real(*a)) or decisions[-1])
    monkeypatch.setattr(host, "_known_recompute", lambda *a: False)
    _chain_outputs(905, 0.0, monkeypatch, perturb=False)
    assert decisions and all(decisions), decisions

    monkeypatch.undo()
    scratch = []
    real_scratch = host._from_scratch
    monkeypatch.setattr(host, "_from_scratch", lambda *a: scratch.append(1) or real_scratch(*a))
    monkeypatch.setattr(host, "_recompute_instead", lambda *a: pytest.fail("the known tree was checked"))
    outputs = _chain_outputs(905, 0.0, monkeypatch, perturb=False)
    # one for the compute() that starts the chain, one per invalidating update
    assert len(scratch) - 1 == sum(inv > 0 for _, inv, _, _ in outputs) == len(decisions)


def _diamond():
    """0 -> 1 (1), 0 -> 2 (1), 1 -> 3 (1), 2 -> 3 (1), 3 -> 4 (5): 3 has two tight parents."""
    import engines

    graph = engines.Graph.from_edges([0, 0, 1, 2, 3], [1, 2, 3, 3, 4], [1, 1, 1, 1, 5], num_vertices=5)
    return graph, np.array([0, 1, 1, 2, 7], dtype=np.int64)


@pytest.mark.parametrize("parents, invalid, head, expected", [
    ([-1, 0, 0, 1, 3], [], [], True),           # compute()'s tree
    ([-1, 0, 0, 2, 3], [], [], False),          # 3 keeps a tight parent that is not the lowest
    ([-1, 0, 0, 2, 3], [1], [], True),          # ... but 1 is invalidated: the repair offers it
    ([-1, 0, 0, 2, 3], [], [3], True),          # ... or 3 is a head: the pull takes the lowest
    ([-1, 0, 0, 1, -1], [], [], False),         # 4 reachable but kept without parent
])
def test_survivors_are_canonical_cases(parents, invalid, head, expected):
    from engines.sssp.host_region import survivors_are_canonical
    from engines.sssp.packing import INF_HALF

    graph, d = _diamond()
    inv = np.zeros(5, dtype=bool)
    inv[invalid] = True
    hd = np.zeros(5, dtype=bool)
    hd[head] = True
    got = survivors_are_canonical(d, np.array(parents, dtype=np.int32), inv, hd, graph.row_ptr,
                                  graph.col_ind, graph.weight_column(0), 0, INF_HALF, 1 << 40)
    assert got is expected


def test_a_kept_distance_that_is_not_shortest_blocks_the_fallback():
    from engines.sssp.host_region import survivors_are_canonical
    from engines.sssp.packing import INF_HALF

    graph, d = _diamond()
    d = d.copy()
    d[4] = 9  # 3 -> 4 offers 7: the kept distance is not the graph's
    args = (np.zeros(5, dtype=bool), np.zeros(5, dtype=bool), graph.row_ptr, graph.col_ind,
            graph.weight_column(0), 0, INF_HALF, 1 << 40)
    assert survivors_are_canonical(d, np.array([-1, 0, 0, 1, 3], dtype=np.int32), *args) is False


@pytest.mark.parametrize("bits", [20, 14])
def test_pack_start_and_write_changed_equal_the_numpy_steps(bits):
    """The fused start (words and input check) and end (unpack, compare, write) passes against
    words_from_tree / word_distances / word_parents and the comparison they replace."""
    from engines.sssp.host_region import pack_start, write_changed
    from engines.sssp.host_steps import word_distances, word_parents
    from engines.sssp.packing import INF_HALF, INFINITE_DISTANCE, Packing

    rng = np.random.default_rng(bits + 1)
    n = 5000
    packing = Packing(packed=bits > 0, bits=bits, bound=(1 << 40))
    d = rng.integers(0, 10**6, size=n).astype(np.int64)  # parents need bits >= 13 for n = 5000
    d[rng.random(n) < 0.1] = INFINITE_DISTANCE
    p = rng.integers(-1, n, size=n).astype(np.int32)
    p[d >= INF_HALF] = -1
    words, bad = pack_start(d, p, packing, packing.bound, INF_HALF)
    assert bad == -1
    np.testing.assert_array_equal(words, words_from_tree(d, p, packing))
    # the end: new words against the inputs
    new = words.copy()
    touched = rng.choice(n, size=700, replace=False)
    new[touched[:300]] = np.uint64((1 << 64) - 1)
    new[touched[300:]] = (rng.integers(0, 10**5, size=400).astype(np.uint64) << np.uint64(packing.bits)) | \
        rng.integers(0, n, size=400).astype(np.uint64)
    exp_d, exp_p = word_distances(new, packing), word_parents(new, packing, np.int32)
    exp_count = int(((exp_d != d) | (exp_p != p)).sum())
    d2, p2 = d.copy(), p.copy()
    assert write_changed(new, d2, p2, packing, INFINITE_DISTANCE) == exp_count
    np.testing.assert_array_equal(d2, exp_d)
    np.testing.assert_array_equal(p2, exp_p)
    # the input check: the first distance out of range is named
    bad_d = d.copy()
    bad_d[[17, 4000]] = -3
    assert pack_start(bad_d, p, packing, packing.bound, INF_HALF)[1] == 17
    bad_d[[17, 4000]] = [5, packing.bound + 1]
    assert pack_start(bad_d, p, packing, packing.bound, INF_HALF)[1] == 4000


def test_pack_start_in_distance_only_mode():
    from engines.sssp.host_region import pack_start
    from engines.sssp.packing import INF_HALF, INFINITE_DISTANCE, Packing

    packing = Packing(packed=False, bits=0, bound=(1 << 50))
    d = np.array([0, 5, INFINITE_DISTANCE, 2**40], dtype=np.int64)
    p = np.array([-1, 0, -1, 1], dtype=np.int32)
    words, bad = pack_start(d, p, packing, packing.bound, INF_HALF)
    assert bad == -1
    np.testing.assert_array_equal(words, words_from_tree(d, p, packing))


@settings(max_examples=200, deadline=None)
@given(flags=st.lists(st.booleans(), min_size=1, max_size=80), data=st.data())
def test_clear_flagged_equals_the_numpy_steps(flags, data):
    """host_region.clear_flagged against host._candidates (the NumPy steps it replaces): the same
    words (flagged ones INF, heads untouched unless flagged) and candidates (ascending, once)."""
    from engines.sssp import host
    from engines.sssp.host_region import clear_flagged

    n = len(flags)
    heads = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=2 * n)), dtype=np.int64)
    words = np.arange(n, dtype=np.uint64) * np.uint64(7) + np.uint64(3)
    flagged = np.array(flags, dtype=bool)
    got_words, want_words = words.copy(), words.copy()
    got = clear_flagged(got_words, flagged.copy(), heads)
    want = host._candidates(want_words, flagged.copy(), heads, n)
    assert np.array_equal(got, want) and np.array_equal(got_words, want_words)
