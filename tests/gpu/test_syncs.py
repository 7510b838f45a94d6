"""Host synchronizations (docs/algorithm.md §9, §10.3, §13.10; docs/protocol.md §6).

``host_syncs`` exactly as algorithm.md §9 says for both CUDA engines: fused 1 per update and per
compute(); operators 3 + iterations + epochs for an update with candidates, 2 without, 2 +
iterations + epochs for compute(), always within ``sync_budget``. Then the independent count: CUPTI
callbacks (engines.sssp.cuda.syncs) count the synchronizing CUDA calls made during one update, which
must equal the engine's own ``host_syncs``.
"""

from __future__ import annotations

import traceback

import numpy as np
import pytest

import engines
from engines import sssp
from engines.sssp.cuda import operators

from .. import harness as H
from . import ops_support as S

pytestmark = S.GPU


def _graph(seed, n=400, wclass="mid"):
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, "sparse", n, 1, wclass)
    return engines.Graph.from_edges(src, dst, w, num_vertices=n), rng


def _engines():
    """Every configuration the device runs: both loops, both push expansions."""
    names = S.ALL_CUDA_CONFIGS
    return names if S.fused_available() else tuple(n for n in names if not n.startswith("fused"))


def _compute(graph, engine, **options):
    return sssp.compute(graph, 0, backend="cuda", **S.CUDA_CONFIGS[engine], **options)


@pytest.mark.parametrize("delta", [0, 1, 1000])
def test_compute_syncs(delta):
    graph, _ = _graph(1)
    for engine in _engines():
        r = _compute(graph, engine, delta=delta)
        st = r.stats
        S.check_stats_shape(st, engine, update=False)
        if S.base_config(engine) == "fused":
            assert (st.host_syncs, st.sync_budget) == (1, 1)
        elif S.base_config(engine) == "operators":
            assert st.iterations >= 1
            assert st.host_syncs < st.sync_budget or st.sync_budget <= 2 + S.device_loop_replays(1)
        else:
            assert st.host_syncs == st.sync_budget == 2 + st.iterations + st.epochs
            assert st.iterations >= 1
            if delta == 1 and graph.row_ptr[1] > graph.row_ptr[0]:
                # delta 1 and weights >= 1: every out-neighbour of the source lands in the far
                # pile (d >= threshold = 1), so at least one raise is needed
                assert st.epochs >= 1


@pytest.mark.parametrize("kind", ["mixed", "tree_delete", "insert", "growth"])
def test_update_syncs_with_candidates(kind):
    graph, rng = _graph(2)
    for engine in _engines():
        r = _compute(graph, engine)
        host = sssp.compute(graph, 0, backend="host")
        for step in range(2):
            _, parents = host.to_numpy()
            arrays = H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid")
            # at least one non-source insertion head makes a candidate
            arrays = _with_head(arrays, graph.num_vertices)
            stats = S.update_all(graph, H.make_batch(arrays), {"host": host, engine: r})
            st = stats[engine]
            S.assert_conformant({"host": host, engine: r}, stats, update=True)
            if S.base_config(engine) == "fused":
                assert (st.host_syncs, st.sync_budget) == (1, 1)
            elif S.base_config(engine) == "operators-host":
                assert st.host_syncs == st.sync_budget == 3 + st.iterations + st.epochs


def _with_head(arrays, n):
    isrc, idst, iw, dsrc, ddst = arrays
    return (np.append(isrc, 0), np.append(idst, n - 1 if n > 1 else 0),
            np.vstack([iw, [[7]]]).astype(np.int64), dsrc, ddst)


@pytest.mark.parametrize("batch_kind", ["empty", "non_tree_deletion"])
def test_update_without_candidates_takes_the_unpacks_readbacks(batch_kind):
    """No loop runs, only the unpack, which the first replay covers: its readback (one, the
    default, which leaves the replay read ahead queued; two with ENGINES_OPERATORS_WAIT_READ_AHEAD=1)."""
    graph, rng = _graph(3)
    r = sssp.compute(graph, 0, backend="cuda", cuda_engine="operators")
    host = sssp.compute(graph, 0, backend="host")
    if batch_kind == "empty":
        batch = engines.Batch.empty()
    else:
        _, parents = host.to_numpy()
        src, dst = np.asarray(graph.edge_sources()), np.asarray(graph.col_ind)
        non_tree = np.flatnonzero(parents[dst] != src)
        e = int(non_tree[0])
        batch = engines.Batch(delete_src=[int(src[e])], delete_dst=[int(dst[e])])
    stats = S.update_all(graph, batch, {"host": host, "operators": r})
    st = stats["operators"]
    assert st.invalidated == 0
    assert (st.host_syncs, st.sync_budget, st.iterations, st.epochs) == (S.device_loop_replays(1), 3, 0, 0)
    assert st.host_syncs == (2 if operators.wait_read_ahead_enabled() else 1)
    S.assert_conformant({"host": host, "operators": r}, stats, update=True)


# ---------------------------------------------------------------------------------------------
# The independent count (CUPTI)


@pytest.fixture
def cupti_counter():
    from engines.sssp.cuda import syncs

    if not syncs.is_available():
        pytest.skip("cupti-python is not installed")
    return syncs.count_synchronizations


class _CountingProbe:
    """A probe that counts with CUPTI only around the engine body (after the upload)."""

    def __init__(self, counter_factory):
        self.factory = counter_factory
        self.counter = None
        self.count = None
        self.calls = None

    def engine_start(self, stream):
        self.counter = self.factory()
        self.counter.__enter__()

    def engine_stop(self, stream):
        self.counter.__exit__(None, None, None)
        self.count, self.calls = self.counter.count, list(self.counter.calls)


def test_cupti_sees_a_stream_synchronization(cupti_counter):
    import cupy

    x = cupy.arange(10)
    with cupti_counter() as c:
        cupy.cuda.get_current_stream().synchronize()
    assert c.count == 1, c.calls
    with cupti_counter() as c:
        _ = x.sum().get()
    assert c.count >= 1, c.calls  # a .get() synchronizes


@pytest.mark.parametrize("kind", ["mixed", "tree_delete", "empty"])
def test_cupti_count_equals_host_syncs(cupti_counter, kind):
    graph, rng = _graph(4, n=600, wclass="tiny")
    for engine in _engines():
        r = _compute(graph, engine, delta=2)
        for step in range(2):
            _, parents = r.to_numpy()
            batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "tiny"))
            if step == 0:
                # the whole update() call: checks, commit, upload and engine
                with cupti_counter() as c:
                    st = sssp.update(graph, batch, r)
                assert c.count == st.host_syncs, (engine, kind, c.count, st, c.calls)
            else:
                probe = _CountingProbe(cupti_counter)
                st = sssp.update(graph, batch, r, probe=probe)
                assert probe.count == st.host_syncs, (engine, kind, probe.count, st, probe.calls)
            assert st.engine_used == S.engine_of(engine)
            assert st.host_syncs <= st.sync_budget


def test_cupti_count_of_compute(cupti_counter):
    graph, _ = _graph(5)
    for engine in _engines():
        _compute(graph, engine)  # compiled and reserved
        with cupti_counter() as c:
            r = _compute(graph, engine)
        assert c.count == r.stats.host_syncs, (engine, c.count, r.stats, c.calls)


@pytest.mark.parametrize("kind", ["mixed", "tree_delete", "insert"])
def test_no_wait_for_the_commit_before_the_engine_synchronizes(monkeypatch, kind):
    """The commit's counters (edge count, maxima) reach the host with the engine's first
    synchronization: reading them earlier waits for the device apply, a host synchronization the
    engine does not count (found by CUPTI on the H200: Graph.offset_dtype read the edge count).
    Deterministic, whatever the timing: every first read of a pending record before an engine
    synchronization of the same update is checked to find the record arrived (the engines read it
    while their run is on the device, resolve_ready, only after an event query says so: no
    wait)."""
    from engines.graph import device_apply
    from engines.sssp.cuda import runtime

    engine_syncs = [0]
    early_reads = []
    # every way an engine run synchronizes: the plain one, the operators' readback and the
    # captured fused run's wait for its graph's copy of the control block
    real_sync, real_wait, real_record = runtime.synchronize, runtime.wait_readback, runtime.wait_record
    real_resolve = device_apply.PendingCommit.resolve

    def counting_sync(*args, **kwargs):
        engine_syncs[0] += 1
        return real_sync(*args, **kwargs)

    def counting_wait(*args, **kwargs):
        engine_syncs[0] += 1
        return real_wait(*args, **kwargs)

    def counting_record(*args, **kwargs):
        engine_syncs[0] += 1
        return real_record(*args, **kwargs)

    def watched_resolve(self):
        if self._values is None and engine_syncs[0] == 0 and not self.scratch.record_ready.done:
            early_reads.append("".join(traceback.format_stack(limit=6)))
        return real_resolve(self)

    graph, rng = _graph(6, n=500)
    for engine in _engines():
        r = _compute(graph, engine)
        _, parents = r.to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        with monkeypatch.context() as m:
            m.setattr(runtime, "synchronize", counting_sync)
            m.setattr(runtime, "wait_readback", counting_wait)
            m.setattr(runtime, "wait_record", counting_record)
            m.setattr(device_apply.PendingCommit, "resolve", watched_resolve)
            engine_syncs[0] = 0
            st = sssp.update(graph, batch, r)
        assert engine_syncs[0] == st.host_syncs, (engine, engine_syncs[0], st)
        assert not early_reads, (engine, early_reads[0])
