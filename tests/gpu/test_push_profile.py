"""The push made visible (issue 26): the near-list length of every push iteration, logged on the
device by whichever engine ran (engines.sssp.cuda.push_profile), and the fused engine's grid
syncs in Stats. Independent checks: the lengths of a run add up to its ``pushes`` and number its
``iterations`` (both counted apart from the log), a chain pushes one vertex per iteration, and
the fused grid syncs follow the kernel's barriers (fused.cu) from the iterations and epochs.
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.sssp import cuda
from engines.sssp.cuda import fused

from .. import harness as H
from . import ops_support as S

pytestmark = S.GPU


def _configs():
    return tuple(c for c in S.ALL_CUDA_CONFIGS if S.fused_available() or not c.startswith("fused"))


def _assert_profile_matches_stats(result, what):
    profile = cuda.push_profile(result)
    st = result.stats
    assert profile.iterations == st.iterations, what
    assert profile.complete, what
    assert len(profile.near_lengths) == st.iterations, what
    assert int(profile.near_lengths.sum()) == st.pushes, (what, profile.near_lengths, st)
    assert (profile.near_lengths >= 1).all(), what  # a push iteration has a non-empty list
    if st.iterations:
        assert profile.median == pytest.approx(float(np.median(profile.near_lengths)))
    return profile


@pytest.mark.parametrize("seed", [0, 1])
def test_lengths_add_up_to_the_pushes_on_every_engine(seed):
    rng = np.random.default_rng(seed + 2600)
    n, src, dst, w = H.random_graph(rng, "sparse", 3000, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    for name in _configs():
        r = sssp.compute(graph, 0, backend="cuda", delta=3, **S.CUDA_CONFIGS[name])
        _assert_profile_matches_stats(r, f"{name} compute")
        host = sssp.compute(graph, 0, backend="host")
        for step, kind in enumerate(("tree_delete", "mixed")):
            _, parents = host.to_numpy()
            batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
            sssp.update(graph, batch, r, host)
            _assert_profile_matches_stats(r, f"{name} update {step}")


def test_a_chain_pushes_one_vertex_per_iteration(monkeypatch):
    # the plain push's one hop per iteration: lane-local chains (test_push_chain) take several
    monkeypatch.setenv("ENGINES_PUSH_CHAIN", "0")
    n = 2000
    src = np.arange(n - 1)
    graph = engines.Graph.from_edges(src, src + 1, np.ones(n - 1, dtype=np.int64), num_vertices=n)
    for name in _configs():
        r = sssp.compute(graph, 0, backend="cuda", delta=1, **S.CUDA_CONFIGS[name])
        profile = _assert_profile_matches_stats(r, name)
        assert profile.iterations >= n - 1  # each vertex of the chain alone (the last may not push)
        assert profile.median == 1.0 and set(profile.near_lengths.tolist()) == {1}


def test_fused_grid_syncs_follow_the_kernels_barriers(fused_engine, monkeypatch):
    # a barrier per push iteration: without the solo push (test_fused_solo counts its stretches;
    # unset is on since 272b6a1)
    monkeypatch.setenv(fused.SOLO_ENV, "0")
    rng = np.random.default_rng(2601)
    n, src, dst, w = H.random_graph(rng, "sparse", 1500, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    r = sssp.compute(graph, 0, backend="cuda", cuda_engine="fused")
    st = r.stats
    assert st.packed_parents
    assert st.grid_syncs == 1 + st.iterations + 2 * st.epochs  # seeding, the loop
    host = sssp.compute(graph, 0, backend="host")
    _, parents = host.to_numpy()
    batch = H.make_batch(H.random_batch(rng, "tree_delete", H.ref_of(graph), parents, 0, "mid"))
    st = sssp.update(graph, batch, r)
    loop = st.iterations + 2 * st.epochs
    rounds = st.grid_syncs - 6 - loop  # pack, invalidate, heads, pull, minimum, split: 6
    assert 0 <= rounds <= engines.sssp.plan.pointer_jumping_rounds(graph.num_vertices)
    if st.invalidated:  # a vertex is invalidated only through a changed list: jumping ran
        assert rounds >= 1, st
    ops = sssp.compute(graph, 0, backend="cuda", cuda_engine="operators")
    assert ops.stats.grid_syncs is None and host.stats.grid_syncs is None


def test_push_profile_refuses_host_results():
    graph = engines.Graph.from_edges([0], [1], [1], num_vertices=2)
    with pytest.raises(engines.errors.InvalidArgumentError, match="CUDA result"):
        cuda.push_profile(sssp.compute(graph, 0, backend="host"))
