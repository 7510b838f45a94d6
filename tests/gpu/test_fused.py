"""The CUDA fused engine against the host reference (algorithm.md §13 items 2, 4-7, 11-13).

Every expectation comes from the host backend in the same process (itself checked against the
independent oracles by the CPU suite): the fused engine must reproduce its distances, parents,
``invalidated``, ``affected``, ``packed_parents`` and apply summary byte for byte, after
``compute()`` and after chains of batches that carry the host result and the fused result in one
``update()`` (one commit). ``iterations``, ``epochs`` and ``pushes`` are never compared.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import engines
from engines import errors, sssp
from engines.sssp.packing import decide_packing

from .. import harness as H
from conformance import oracles as O

pytestmark = pytest.mark.gpu

COMPARED = ("invalidated", "affected", "packed_parents", "batch")


# ---------------------------------------------------------------------------------------------
# helpers


def fused_compute(graph, source, **options):
    return sssp.compute(graph, source, backend="cuda", cuda_engine="fused", **options)


def assert_same(host, fused, host_stats=None, fused_stats=None, what=""):
    """Byte equality of the trees and equality of the compared statistics (algorithm.md §9)."""
    hd, hp = host.to_numpy()
    fd, fp = fused.to_numpy()
    assert (fd.dtype, fp.dtype) == (hd.dtype, hp.dtype), (what, fd.dtype, fp.dtype)
    bad = np.flatnonzero(fd != hd)
    assert bad.size == 0, (f"{what}: distances differ at {bad[:8].tolist()}: fused "
                           f"{fd[bad[:8]].tolist()} host {hd[bad[:8]].tolist()}")
    bad = np.flatnonzero(fp != hp)
    assert bad.size == 0, (f"{what}: parents differ at {bad[:8].tolist()}: fused "
                           f"{fp[bad[:8]].tolist()} host {hp[bad[:8]].tolist()}")
    assert fd.tobytes() == hd.tobytes() and fp.tobytes() == hp.tobytes()
    hs = host_stats if host_stats is not None else host.stats
    fs = fused_stats if fused_stats is not None else fused.stats
    for field in COMPARED:
        assert getattr(fs, field) == getattr(hs, field), (what, field, getattr(fs, field),
                                                          getattr(hs, field))
    assert fs.engine_used == "fused", fs.engine_used
    assert fs.host_syncs == 1 and fs.sync_budget == 1, fs
    assert fs.iterations >= 0 and fs.epochs >= 0 and fs.pushes >= 0
    assert fused.graph_version == host.graph_version
    assert fused.backend == "cuda"


def compute_pair(graph, source, **options):
    host = sssp.compute(graph, source, backend="host", **options)
    fused = fused_compute(graph, source, **options)
    assert_same(host, fused, what="compute")
    return host, fused


def import_pair(graph, source, distances, parents, *, validate=None, **options):
    """The same tree, imported as it is (no canonicalization), on the host and on the fused engine."""
    host = sssp.Result.from_arrays(graph, source, distances, parents, canonicalize=False,
                                   validate=validate, backend="host", **options)
    fused = host.clone(backend="cuda")
    fused.set_options(cuda_engine="fused")
    return host, fused


def perturbed_pair(rng, graph, host, objective=0):
    """Both results replaced by an import of the host tree with random tight tie parents
    (algorithm.md §13.4)."""
    d, _ = host.to_numpy()
    ref = H.ref_of(graph)
    src, dst, w = ref.edges(objective)
    p = O.perturbed_parents(rng, ref.num_vertices, host.source, d, src, dst, w).astype(np.int32)
    return import_pair(graph, host.source, d, p, objective=objective, delta=host.options.delta)


def update_pair(graph, arrays, host, fused, what=""):
    stats = sssp.update(graph, H.make_batch(arrays), host, fused)
    assert isinstance(stats, tuple) and len(stats) == 2
    assert_same(host, fused, stats[0], stats[1], what=what)
    return stats


def ops(isrc, idst, iw, dsrc, ddst, K=1):
    """Batch arrays from literals (int64; empty lists allowed)."""
    iw = np.asarray(iw, dtype=np.int64).reshape(-1, K)
    return (np.asarray(isrc, dtype=np.int64), np.asarray(idst, dtype=np.int64), iw,
            np.asarray(dsrc, dtype=np.int64), np.asarray(ddst, dtype=np.int64))


def next_arrays(rng, graph, host, kind, wclass):
    _, parents = host.to_numpy()
    return H.random_batch(rng, kind, H.ref_of(graph), parents, host.source, wclass)


# ---------------------------------------------------------------------------------------------
# compute() and chains of three batches for every mix


MIXES = {
    "insert_only": ("insert", "insert", "insert"),
    "delete_only": ("delete", "tree_delete", "missing"),
    "mixed": ("mixed", "combo", "local"),
    "reweight": ("reweight", "reweight", "duplicates"),
    "tree_increase": ("tree_increase", "tree_increase", "tree_increase"),
    "disconnect": ("disconnect", "tree_delete", "disconnect"),
    "growth": ("growth", "growth", "beyond"),
    "parallel": ("raise_parallel", "reinsert", "raise_parallel"),
    "selfloop": ("selfloop", "selfloop", "mixed"),
    "empty": ("empty", "empty", "empty"),
    "delete_all": ("delete_all", "insert", "growth"),
}
SIZES = {"small": ("sparse", 40, "tiny"), "medium": ("grid", 3000, "mid")}


@pytest.mark.parametrize("offsets", [32, 64])
@pytest.mark.parametrize("canonical", [True, False], ids=["canonical", "noncanonical"])
@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("mix", sorted(MIXES))
def test_compute_then_three_batches(fused_engine, mix, size, canonical, offsets):
    seed = zlib.crc32(f"{mix}/{size}/{canonical}/{offsets}".encode())
    rng = np.random.default_rng(seed)
    shape, n, wclass = SIZES[size]
    multi = mix in ("parallel", "selfloop")
    n, src, dst, w = H.random_graph(rng, shape, n, 2, wclass, multi=multi)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n,
                                     offset_dtype=np.int64 if offsets == 64 else None)
    assert graph.offset_dtype == (np.int64 if offsets == 64 else np.int32)
    source = int(rng.integers(0, n))
    host, fused = compute_pair(graph, source, objective=1)
    if not canonical:
        host, fused = perturbed_pair(rng, graph, host, objective=1)
    for i, kind in enumerate(MIXES[mix]):
        update_pair(graph, next_arrays(rng, graph, host, kind, wclass), host, fused,
                    what=f"{mix}/{size}/{kind} step {i}")
    # a canonical input stays canonical: the chain ends where compute() on G_t+3 starts
    if canonical:
        H.assert_result_bytes_equal(sssp.compute(graph, source, backend="host", objective=1), fused)
        H.assert_result_bytes_equal(fused_compute(graph, source, objective=1), fused)


def test_several_fused_results_in_one_update(fused_engine):
    rng = np.random.default_rng(7)
    n, src, dst, w = H.random_graph(rng, "sparse", 500, 3, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    pairs = [compute_pair(graph, s, objective=k, delta=d)
             for s, k, d in ((0, 0, 0), (3, 1, 1), (0, 2, 250))]
    for kind in ("mixed", "tree_delete", "growth"):
        _, parents = pairs[0][0].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        results = [r for pair in pairs for r in pair]
        stats = sssp.update(graph, batch, *results)
        for i, (host, fused) in enumerate(pairs):
            assert_same(host, fused, stats[2 * i], stats[2 * i + 1], what=f"{kind} result {i}")


@pytest.mark.parametrize("max_blocks", ["1", "3"])
def test_results_do_not_depend_on_the_grid(fused_engine, monkeypatch, max_blocks):
    # a one-block grid runs every grid-stride loop many times over: the same bytes must come out
    monkeypatch.setenv("ENGINES_FUSED_MAX_BLOCKS", max_blocks)
    rng = np.random.default_rng(11)
    n, src, dst, w = H.random_graph(rng, "sparse", 4000, 1, "tiny", multi=True)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    host, fused = compute_pair(graph, 0, delta=3)
    for kind in ("mixed", "tree_delete", "tree_increase"):
        update_pair(graph, next_arrays(rng, graph, host, kind, "tiny"), host, fused, what=kind)


@pytest.mark.parametrize("rule", ["work", "device"])
def test_results_do_not_depend_on_the_grid_rule(fused_engine, monkeypatch, rule):
    # the grid sized to the vertices (fewer blocks than the device holds) or every co-resident
    # block: the same bytes, on a graph large enough for the two rules to differ
    from engines.sssp.cuda import fused, runtime

    monkeypatch.setenv(fused.GRID_ENV, rule)
    monkeypatch.delenv(fused.MAX_BLOCKS_ENV, raising=False)
    rng = np.random.default_rng(13)
    n, src, dst, w = H.random_graph(rng, "sparse", 6000, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    host, fused_result = compute_pair(graph, 0)
    module = fused.load_module(runtime.current_device())
    blocks = fused.grid_blocks(module, "fused_update", np.int32, np.int32, n)
    full = runtime.cooperative_grid(module, "fused_update", np.int32, np.int32)
    assert blocks == (full if rule == "device" else min(full, runtime.device_info(module.device).multiprocessors))
    for kind in ("mixed", "tree_delete", "tree_increase", "growth"):
        update_pair(graph, next_arrays(rng, graph, host, kind, "mid"), host, fused_result, what=f"{rule}: {kind}")


def test_edge_cases(fused_engine):
    # n = 1, a self-loop, the source as insertion head and push target, growth reaching new ids
    graph = engines.Graph.from_edges([0], [0], [5], num_vertices=1)
    host, fused = compute_pair(graph, 0)
    batch = ops([0, 2, 1], [1, 0, 0], [[3], [1], [1]], [], [])
    update_pair(graph, batch, host, fused, what="growth to 3, edges into the source")
    update_pair(graph, ops([1, 2], [2, 1], [[1], [1]], [0, 5], [0, 9]), host, fused,
                what="self-loop delete, missing and beyond-n deletions")
    update_pair(graph, H.empty_batch_arrays(1), host, fused, what="empty batch")
    for delta in (1, 10**6, 2**40):
        h, f = compute_pair(graph, 1, delta=delta)
        update_pair(graph, ops([0], [2], [[7]], [1], [2]), h, f, what=f"delta {delta}")


# ---------------------------------------------------------------------------------------------
# packing: distance-only mode and the boundary (algorithm.md §4.3, §13.5)


@pytest.mark.parametrize("canonical", [True, False], ids=["canonical", "noncanonical"])
def test_distance_only_mode(fused_engine, canonical):
    rng = np.random.default_rng(99)
    n = 70000
    m = 3 * n
    src = rng.integers(0, n, size=m)
    dst = rng.integers(0, n, size=m)
    w = rng.integers(1, 4, size=m)  # many ties
    w[rng.integers(0, m, size=50)] = O.WEIGHT_MAX  # W = 2^31 - 1: distance-only at n >= 65538
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    host, fused = compute_pair(graph, 0)
    assert fused.stats.packed_parents is False
    if not canonical:
        host, fused = perturbed_pair(rng, graph, host)
    for kind in ("mixed", "tree_delete", "tree_increase"):
        stats = update_pair(graph, next_arrays(rng, graph, host, kind, "tiny"), host, fused,
                            what=kind)
        assert stats[1].packed_parents is False
    # distance-only output is canonical whatever the input was
    H.assert_result_bytes_equal(sssp.compute(graph, 0, backend="host"), fused)


@pytest.mark.parametrize("heavy, packed", [(2147450880, True), (2147450881, False)])
def test_packing_boundary(fused_engine, heavy, packed):
    n = 65538
    src = np.arange(n - 1)
    dst = src + 1
    rng = np.random.default_rng(5)
    w = rng.integers(1, 3, size=n - 1)
    w[n // 2] = heavy
    extra_src = rng.integers(0, n, size=n)
    extra_dst = rng.integers(0, n, size=n)
    graph = engines.Graph.from_edges(np.concatenate([src, extra_src]),
                                     np.concatenate([dst, extra_dst]),
                                     np.concatenate([w, rng.integers(1, 3, size=n)]),
                                     num_vertices=n)
    assert decide_packing(heavy, n).packed is packed
    host, fused = compute_pair(graph, 0)
    assert fused.stats.packed_parents is packed
    update_pair(graph, ops([5, 9], [n - 1, 17], [[1], [2]], [n // 2], [n // 2 + 1]),
                host, fused, what="boundary update")
    assert fused.stats.packed_parents is packed


# ---------------------------------------------------------------------------------------------
# errors after the commit: poisoning, then the device keeps working (algorithm.md §8.3, §13.6)


def _small_tree():
    rng = np.random.default_rng(3)
    n, src, dst, w = H.random_graph(rng, "grid", 49, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    host = sssp.compute(graph, 0, backend="host")
    d, p = host.to_numpy()
    return graph, d.copy(), p.copy()


def _device_still_correct(graph, rng):
    host, fused = compute_pair(graph, 0)
    for kind in ("mixed", "tree_delete", "insert"):
        update_pair(graph, next_arrays(rng, graph, host, kind, "mid"), host, fused,
                    what=f"after an error: {kind}")


def _cycle(graph, d, p):
    # two reachable non-source vertices that point at each other: a cycle without a root
    a, b = 10, 11
    p = p.copy()
    p[a], p[b] = b, a
    return p


def test_parent_cycle_poisons_then_the_device_recovers(fused_engine):
    graph, d, p = _small_tree()
    p = _cycle(graph, d, p)
    _, fused = import_pair(graph, 0, d, p, validate=False)
    # a missing deletion is still a changed edge; its head is no root (P[10] = 11, not 10)
    version = graph.version
    with pytest.raises(errors.InvalidArgumentError) as info:
        sssp.update(graph, H.make_batch(ops([], [], [], [10], [10])), fused)
    assert info.value.reason == "parent_cycle"
    assert graph.version == version + 1
    with pytest.raises(errors.StaleResultError):
        _ = fused.parents
    _device_still_correct(graph, np.random.default_rng(1))


def test_cycle_without_changes_or_through_a_root_is_no_error(fused_engine):
    graph, d, p = _small_tree()
    cyc = _cycle(graph, d, p)
    host, fused = import_pair(graph, 0, d, cyc, validate=False)
    update_pair(graph, H.empty_batch_arrays(1), host, fused, what="cycle, no changes")
    # the cycle contains a root: deleting the edge (11 -> 10) makes 10 a root
    host, fused = import_pair(graph, 0, d, cyc, validate=False)
    update_pair(graph, ops([], [], [], [11], [10]), host, fused,
                what="cycle through a root")


@pytest.mark.parametrize("bad", ["above_bound", "negative", "above_bound_and_cycle"])
def test_invalid_input_poisons_then_the_device_recovers(fused_engine, bad):
    graph, d, p = _small_tree()
    d = d.copy()
    if bad == "negative":
        d[7] = -5
    else:
        d[7] = 10**15  # above W * (n - 1) and below INF/2
    if bad == "above_bound_and_cycle":
        p = _cycle(graph, d, p)
    _, fused = import_pair(graph, 0, d, p, validate=False)
    version = graph.version
    with pytest.raises(errors.InvalidArgumentError) as info:
        sssp.update(graph, H.make_batch(ops([], [], [], [10], [10])), fused)
    assert info.value.reason == "invalid_input"  # wins over a cycle
    assert graph.version == version + 1
    with pytest.raises(errors.StaleResultError):
        _ = fused.distances
    _device_still_correct(graph, np.random.default_rng(2))


# ---------------------------------------------------------------------------------------------
# memory: a steady-state update allocates no device memory (algorithm.md §12.3, §13.11)


def test_steady_state_update_allocates_nothing(fused_engine):
    import cupy

    rng = np.random.default_rng(17)
    n, src, dst, w = H.random_graph(rng, "sparse", 5000, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    host, fused = compute_pair(graph, 0)
    for _ in range(3):  # warm-up: capacities of the workspace, change lists and mirror
        update_pair(graph, next_arrays(rng, graph, host, "mixed", "mid"), host, fused)

    pool = cupy.get_default_memory_pool()
    sizes = []

    def counting_malloc(size):
        sizes.append(int(size))
        return pool.malloc(size)

    for kind in ("mixed", "tree_delete", "reweight"):
        arrays = next_arrays(rng, graph, host, kind, "mid")
        batch = H.make_batch(arrays)
        cupy.cuda.set_allocator(counting_malloc)
        try:
            stats = sssp.update(graph, batch, fused)
        finally:
            cupy.cuda.set_allocator(pool.malloc)
        assert sizes == [], f"the fused update allocated {sizes} bytes of device memory"
        assert stats.engine_used == "fused" and stats.host_syncs == 1
        # from a canonical tree the update equals compute() on the new graph, byte for byte
        H.assert_result_bytes_equal(sssp.compute(graph, 0, backend="host"), fused)
        host = sssp.compute(graph, 0, backend="host")


# ---------------------------------------------------------------------------------------------
# real graphs (algorithm.md §13.13)


@pytest.mark.parametrize("name", ["uspowergrid", "luxembourg_osm"])
def test_real_graphs(fused_engine, real_graphs_dir, name):
    from ..engines.test_real_graphs import load_real_graph

    graph, _, _ = load_real_graph(real_graphs_dir, name)
    rng = np.random.default_rng(2026)
    for k in range(graph.num_weights):
        compute_pair(graph, 0, objective=k)
    host, fused = compute_pair(graph, 0, objective=1)
    other_host, _ = compute_pair(graph, 7, objective=2)
    other_host, other_fused = perturbed_pair(rng, graph, other_host, objective=2)
    for kind in ("mixed", "tree_delete", "combo"):
        arrays = next_arrays(rng, graph, host, kind, "mid")
        stats = sssp.update(graph, H.make_batch(arrays), host, fused, other_host, other_fused)
        assert_same(host, fused, stats[0], stats[1], what=f"{name} {kind}")
        assert_same(other_host, other_fused, stats[2], stats[3], what=f"{name} {kind} perturbed")
