"""The device-resident graph against the host applier (algorithm.md §3.3, §3.6, §8.2, §12.3).

A graph moved to a GPU (``Graph.to_device()``, or by a CUDA ``compute()``/``update()``) builds
every new state on the device. The test of algorithm.md §3.6 is byte equality with the host applier:
after every commit, ``row_ptr``, ``col_ind``, the K weight columns, the in-CSR (``in_edges(k)``:
ptr, src, weight, in the order of the module docstring of ``engines/graph/graph.py``), the apply summary,
the classification (``ApplyDelta``, ``weight_increased`` included), ``max_weight``, ``weight_sum``
and ``num_edges`` equal those of a *host twin*: an independent host graph built from the same arrays
before the graph moved, receiving the same batches through the host applier. The device buffers
themselves (``g._device.current``: both sides' offsets, keys, per-entry row ids and weights) are
compared too, not only the downloaded host views.

Independent oracles besides the twin: ``conformance/oracles.py``'s list-based ``ref_apply`` (out-CSR,
summary, classification) and :class:`EdgeModel` below, which follows physical edges by identity
and so spells out the in-CSR order rule (fresh graphs by out-edge index; survivors keep their
order; new in-edges at the end of their in-row in batch order) without either applier's code.
Trees are checked against a fresh host ``compute()`` on the twin and across engines.

Also covered: failures that must change nothing (invalid batches, a forced device allocation
failure), snapshots / restores / copies on the device and the exact-state rule for results, a
steady-state commit that allocates no device memory, ``device_bytes`` and ``to_host()``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engines
from engines import errors, sssp
from engines.batch import ApplyDelta, ApplySummary

from .. import harness as H
from conformance import oracles as O
from . import ops_support as S

pytestmark = S.GPU

SIDES = ("out", "in")
DELTA_ARRAYS = ("insert_src", "insert_dst", "delete_src", "delete_dst", "weight_increased")


def _seed(*parts) -> int:
    """A stable seed per test case (Python's str hash is salted per process)."""
    text = "|".join(map(str, parts))
    return sum((i + 1) * ord(c) for i, c in enumerate(text)) % (2**32)


# ---------------------------------------------------------------------------------------------
# the host twin and the independent edge model


def host_twin(graph) -> engines.Graph:
    """An independent host graph with ``graph``'s content, rebuilt from its arrays.

    Only for a fresh host graph (version 0): both then hold the canonical in-CSR order, and every
    later state is defined by the batches both receive.
    """
    assert graph.version == 0 and graph.device is None, "take the twin before the graph moves"
    k, m = graph.num_weights, graph.num_edges
    weights = np.asarray(graph.weights).reshape(k, m).T  # (m, K) per edge
    return engines.Graph.from_csr(np.array(graph.row_ptr), np.array(graph.col_ind), weights,
                                  offset_dtype=graph.offset_dtype)


class EdgeModel:
    """Both CSRs as lists of physical edge identities (the in-CSR order rule, spelled out).

    A fresh graph lists the in-edges of v by out-edge index. A deletion removes the first alive
    (u, v) edge of out-row u, and that same physical edge from in-row v; an upsert overwrites the
    first alive copy's K weights; a new edge is appended to out-row u and to in-row v, in batch
    order. Deletions naming an id >= n_after are dropped (algorithm.md §3.3 step 3).
    """

    def __init__(self, row_ptr, col_ind, weights_km):
        row_ptr = np.asarray(row_ptr, dtype=np.int64)
        n = row_ptr.shape[0] - 1
        col = np.asarray(col_ind, dtype=np.int64).tolist()
        w = np.asarray(weights_km, dtype=np.int64)
        self.num_weights = int(w.shape[0])
        self.edge: list[tuple[int, int, tuple]] = []  # identity -> (u, v, weights)
        self.out: list[list[int]] = [[] for _ in range(n)]
        for u in range(n):
            for e in range(int(row_ptr[u]), int(row_ptr[u + 1])):
                self.out[u].append(len(self.edge))
                self.edge.append((u, col[e], tuple(int(x) for x in w[:, e])))
        self.inn: list[list[int]] = [[] for _ in range(n)]
        for eid, (_, v, _) in enumerate(self.edge):  # identities are out-edge indices here
            self.inn[v].append(eid)

    @classmethod
    def of(cls, graph) -> "EdgeModel":
        k = graph.num_weights
        return cls(graph.row_ptr, graph.col_ind, np.asarray(graph.weights).reshape(k, -1))

    def _first(self, u: int, v: int):
        for eid in self.out[u]:
            if self.edge[eid][1] == v:
                return eid
        return None

    def apply(self, ins_src, ins_dst, ins_w, del_src, del_dst) -> None:
        k = self.num_weights
        isrc = np.asarray(ins_src, dtype=np.int64).tolist()
        idst = np.asarray(ins_dst, dtype=np.int64).tolist()
        iw = [tuple(int(x) for x in row) for row in np.asarray(ins_w, dtype=np.int64).reshape(len(isrc), k)]
        n_after = max([len(self.out)] + [1 + max(u, v) for u, v in zip(isrc, idst)])
        while len(self.out) < n_after:
            self.out.append([])
            self.inn.append([])
        for u, v in zip(np.asarray(del_src).tolist(), np.asarray(del_dst).tolist()):
            if u >= n_after or v >= n_after:
                continue
            eid = self._first(u, v)
            if eid is not None:
                self.out[u].remove(eid)
                self.inn[v].remove(eid)
        for u, v, w in zip(isrc, idst, iw):
            eid = self._first(u, v)
            if eid is None:
                eid = len(self.edge)
                self.edge.append((u, v, w))
                self.out[u].append(eid)
                self.inn[v].append(eid)
            else:
                self.edge[eid] = (u, v, w)

    def csr(self, side: str):
        """(ptr int64, key int64, weights int64 (K, m)) of one side."""
        rows = self.out if side == "out" else self.inn
        ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        ptr[1:] = np.cumsum([len(r) for r in rows])
        ids = [eid for r in rows for eid in r]
        end = 1 if side == "out" else 0  # the other end of the edge
        key = np.array([self.edge[eid][end] for eid in ids], dtype=np.int64)
        w = np.array([self.edge[eid][2] for eid in ids], dtype=np.int64).reshape(len(ids), self.num_weights)
        return ptr, key, np.ascontiguousarray(w.T)


# ---------------------------------------------------------------------------------------------
# what is compared


def _array_problems(what: str, expected, actual) -> list[str]:
    """Equal dtype, shape and bytes, else one line naming the first differing entries."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    if expected.dtype != actual.dtype:
        return [f"{what}: dtype {actual.dtype}, expected {expected.dtype}"]
    if expected.shape != actual.shape:
        return [f"{what}: shape {actual.shape}, expected {expected.shape}"]
    if expected.tobytes() == actual.tobytes():
        return []
    e, a = expected.reshape(-1), actual.reshape(-1)
    bad = np.flatnonzero(e != a)
    first = bad[:6]
    return [f"{what}: {bad.size} entries differ, first at flat index {first.tolist()}: got "
            f"{a[first].tolist()}, expected {e[first].tolist()}"]


def _values_problems(what: str, expected, actual) -> list[str]:
    """Equal values (as int64) and length, dtype free (oracle arrays are int64)."""
    return _array_problems(what, np.asarray(expected).astype(np.int64), np.asarray(actual).astype(np.int64))


def _scalars(graph) -> dict:
    k = graph.num_weights
    return {
        "num_vertices": graph.num_vertices,
        "num_edges": graph.num_edges,
        "num_weights": k,
        "version": graph.version,
        "offset_dtype": str(graph.offset_dtype),
        "max_weight": tuple(graph.max_weight(c) for c in range(k)),
        "weight_sum": tuple(graph.weight_sum(c) for c in range(k)),
    }


def _host_views(graph) -> dict[str, np.ndarray]:
    """Every host array of the current state (downloads them once on a device graph)."""
    views = {"row_ptr": graph.row_ptr, "col_ind": graph.col_ind, "weights": graph.weights}
    for k in range(graph.num_weights):
        views[f"weight_column({k})"] = graph.weight_column(k)
        ie = graph.in_edges(k)
        views[f"in_edges({k}).ptr"] = ie.ptr
        views[f"in_edges({k}).src"] = ie.src
        views[f"in_edges({k}).weight"] = ie.weight
    return views


def _row_ids(ptr, n: int) -> np.ndarray:
    return np.repeat(np.arange(n, dtype=np.int32), np.diff(np.asarray(ptr, dtype=np.int64)))


def device_arrays(graph) -> dict[str, np.ndarray]:
    """The valid part of the current device buffer set, read directly (no allocation)."""
    cur = graph._device.current
    n, m, k = graph.num_vertices, graph.num_edges, graph.num_weights
    if cur.slack:
        return slack_device_arrays(cur, m, k)
    arrays = {}
    for side in SIDES:
        arrays[f"{side}.ptr"] = cur.ptr[side][: n + 1].get()
        arrays[f"{side}.key"] = cur.key[side][:m].get()
        arrays[f"{side}.row_of"] = cur.row_of[side][:m].get()
        arrays[f"{side}.weight"] = np.stack([cur.weight[side][c, :m].get() for c in range(k)])
    return arrays


def slack_device_arrays(cur, m: int, k: int) -> dict[str, np.ndarray]:
    """A slack set's rows back to back (CsrBuffers.packed_order), as a packed set would hold them;
    its room checked on the way: every entry in no row's range, up to the set's capacity, reads
    row_of -1 and weight 0, each row lies inside its room and every room below the side's tail,
    and rows past the vertices have none."""
    arrays = {}
    for side in SIDES:
        ptr, source = cur.packed_order(side, m)
        arrays[f"{side}.ptr"] = ptr
        arrays[f"{side}.key"] = cur.key[side][source].get()
        arrays[f"{side}.row_of"] = cur.row_of[side][source].get()
        arrays[f"{side}.weight"] = np.stack([cur.weight[side][c][source].get() for c in range(k)])
        n = cur.num_vertices
        start, end, limit = (getattr(cur, name)[side][:n].get().astype(np.int64) for name in ("ptr", "end", "limit"))
        tail = int(cur.meta[SIDES.index(side)].get())
        assert np.all(start <= end) and np.all(end <= limit) and np.all(limit <= tail), f"{side} rooms past the tail"
        assert tail <= cur.m_cap, f"{side} tail {tail} past the capacity {cur.m_cap}"
        for name in ("ptr", "end", "limit"):  # rows past the vertices have none
            assert not getattr(cur, name)[side][n:].get().any(), f"{side} {name} past the vertices"
        in_row = np.zeros(cur.m_cap, dtype=bool)
        in_row[source.get()] = True
        row_of = cur.row_of[side].get()
        weight = cur.weight[side].get()
        assert np.all(row_of[~in_row] == -1), f"{side}: an entry in no row's range has a row id"
        assert np.all(weight[:, ~in_row] == 0), f"{side}: an entry in no row's range has a weight"
    return arrays


def expected_device_arrays(host) -> dict[str, np.ndarray]:
    """What the device buffer set of ``host``'s state must hold."""
    n, k = host.num_vertices, host.num_weights
    ins = [host.in_edges(c) for c in range(k)]
    return {
        "out.ptr": host.row_ptr,
        "out.key": host.col_ind,
        "out.row_of": _row_ids(host.row_ptr, n),
        "out.weight": np.stack([host.weight_column(c) for c in range(k)]),
        "in.ptr": ins[0].ptr,
        "in.key": ins[0].src,
        "in.row_of": _row_ids(ins[0].ptr, n),
        "in.weight": np.stack([ie.weight for ie in ins]),
    }


def device_buffer_problems(graph, host) -> list[str]:
    cur = graph._device.current
    n, m = graph.num_vertices, graph.num_edges
    problems = []
    if (cur.num_vertices, cur.num_edges) != (n, m):
        problems.append(f"device set holds n={cur.num_vertices}, m={cur.num_edges}; graph says n={n}, m={m}")
    if cur.num_weights != graph.num_weights:
        problems.append(f"device set has K={cur.num_weights}, graph K={graph.num_weights}")
    for side in SIDES:
        if cur.ptr[side].shape[0] < n + 1 or cur.key[side].shape[0] < m or cur.weight[side].shape[1] < m:
            problems.append(f"device {side} capacities below n={n}, m={m}")
    if problems:
        return problems
    got, want = device_arrays(graph), expected_device_arrays(host)
    for key, value in want.items():
        problems += _array_problems(f"device {key}", value, got[key])
    return problems


def graph_problems(actual, expected, *, versions: bool = True) -> list[str]:
    """Where ``actual`` (any residence) differs from ``expected``: scalars, every host view, and
    for a device-resident ``actual`` the device buffers."""
    sa, se = _scalars(actual), _scalars(expected)
    if not versions:
        sa.pop("version")
        se.pop("version")
    problems = [f"{key} = {sa[key]!r}, expected {se[key]!r}" for key in se if sa[key] != se[key]]
    if sa["num_weights"] != se["num_weights"]:
        return problems
    va, ve = _host_views(actual), _host_views(expected)
    for key, value in ve.items():
        problems += _array_problems(key, value, va[key])
    if actual.device is not None:
        problems += device_buffer_problems(actual, expected)
    return problems


def commit_problems(got, want) -> list[str]:
    """``(ApplySummary, ApplyDelta)`` of the device apply vs the host apply, byte for byte."""
    (sg, dg), (sw, dw) = got, want
    problems = []
    if not isinstance(sg, ApplySummary) or not isinstance(dg, ApplyDelta):
        return [f"apply returned {type(sg).__name__}, {type(dg).__name__}"]
    if sg != sw:
        problems.append(f"summary {dataclasses.asdict(sg)}, expected {dataclasses.asdict(sw)}")
    for field in DELTA_ARRAYS:
        problems += _array_problems(f"delta.{field}", getattr(dw, field), getattr(dg, field))
    for field in ("num_vertices_before", "num_vertices_after"):
        if getattr(dg, field) != getattr(dw, field):
            problems.append(f"delta.{field} = {getattr(dg, field)}, expected {getattr(dw, field)}")
    return problems


def oracle_problems(graph, got, app: O.RefApply, model: EdgeModel) -> list[str]:
    """The commit and the new state against the list-based oracles (independent of both appliers)."""
    summary, delta = got
    problems = []
    if H.summary_dict(summary) != app.summary:
        problems.append(f"oracle: summary {H.summary_dict(summary)}, expected {app.summary}")
    for field in ("insert_src", "insert_dst", "delete_src", "delete_dst"):
        problems += _values_problems(f"oracle: delta.{field}", getattr(app, field), getattr(delta, field))
    problems += _array_problems("oracle: delta.weight_increased", app.weight_increased, delta.weight_increased)
    k = graph.num_weights
    ptr, key, w = model.csr("out")
    problems += _values_problems("model: row_ptr", ptr, graph.row_ptr)
    problems += _values_problems("model: col_ind", key, graph.col_ind)
    problems += _values_problems("model: weights", w.reshape(-1), graph.weights)
    for c in range(k):
        column = w[c]
        if graph.max_weight(c) != (int(column.max()) if column.size else 0):
            problems.append(f"model: max_weight({c}) = {graph.max_weight(c)}")
        if graph.weight_sum(c) != int(column.sum()):
            problems.append(f"model: weight_sum({c}) = {graph.weight_sum(c)}, expected {int(column.sum())}")
    iptr, isrc, iw = model.csr("in")
    for c in range(k):
        ie = graph.in_edges(c)
        problems += _values_problems(f"model: in_edges({c}).ptr", iptr, ie.ptr)
        problems += _values_problems(f"model: in_edges({c}).src", isrc, ie.src)
        problems += _values_problems(f"model: in_edges({c}).weight", iw[c], ie.weight)
    return problems


def assert_no_problems(problems: list[str], what: str) -> None:
    assert not problems, f"{what}: " + "; ".join(problems[:12])


def capture(graph) -> dict:
    """Everything observable of the current state, and the device buffer set and its content."""
    state = {
        "scalars": _scalars(graph),
        "state_id": graph.state_id,
        "device": graph.device,
        "host": {key: np.array(value, copy=True) for key, value in _host_views(graph).items()},
    }
    if graph.device is not None:
        state["current"] = graph._device.current
        state["buffers"] = device_arrays(graph)
    return state


def assert_unchanged(graph, before: dict, what: str) -> None:
    after = capture(graph)
    problems = [f"{key} {after[key]!r}, before {before[key]!r}" for key in ("scalars", "state_id", "device")
                if after[key] != before[key]]
    if after.get("current") is not before.get("current"):
        problems.append("another device buffer set was published")
    for group in ("host", "buffers"):
        for key, value in before.get(group, {}).items():
            problems += _array_problems(f"{group} {key}", value, after[group][key])
    assert_no_problems(problems, f"{what}: the graph changed")


# ---------------------------------------------------------------------------------------------
# batches


def outgrow_arrays(rng, ref: O.RefGraph, wclass: str, factor: int = 1):
    """More insertions than the graph has edges (``factor`` x m + a few), growing n by a few:
    every device capacity (edges, rows, events) must grow. Mixed with re-weights, duplicates and
    deletions of existing pairs."""
    n, k = ref.num_vertices, ref.num_weights
    src, dst, _ = ref.edges(0)
    m = src.size
    count = factor * m + int(rng.integers(2, 12))
    isrc = rng.integers(0, n + 3, size=count)
    idst = rng.integers(0, n + 3, size=count)
    if m:
        pick = rng.integers(0, m, size=count // 4)
        isrc[: pick.size], idst[: pick.size] = src[pick], dst[pick]  # upserts of existing pairs
        isrc[-2:], idst[-2:] = isrc[0], idst[0]  # a pair upserted three times
    iw = H.draw_weights(rng, (count, k), wclass)
    dpick = rng.integers(0, m, size=min(m, 5)) if m else np.zeros(0, np.int64)
    dsrc = np.concatenate([src[dpick], [n + 40]]).astype(np.int64)  # n + 40: out of range
    ddst = np.concatenate([dst[dpick], [0]]).astype(np.int64)
    return isrc.astype(np.int64), idst.astype(np.int64), iw, dsrc, ddst


#: every algorithm.md §3.3 rule at once: missing and out-of-range deletions, upserts, duplicates,
#: delete-then-reinsert, growth.
ALL_RULES = ("missing", "beyond", "reweight", "duplicates", "reinsert", "growth", "selfloop")
KINDS = H.BATCH_KINDS + ("outgrow", "all_rules")


def batch_arrays(rng, kind: str, host, wclass: str, *, parents=None, source: int = 0):
    """Batch arrays of one kind for the host twin's current state (see tests/harness.py)."""
    ref = H.ref_of(host)
    if kind == "outgrow":
        return outgrow_arrays(rng, ref, wclass)
    if parents is None:
        parents = sssp.compute(host, source, backend="host").to_numpy()[1]
    if kind == "all_rules":
        parts = [H.random_batch(rng, part, ref, parents, source, wclass) for part in ALL_RULES]
        return tuple(np.concatenate([p[j] for p in parts]) for j in range(5))
    return H.random_batch(rng, kind, ref, parents, source, wclass)


def fixed_size_arrays(rng, host, deletions: int, insertions: int):
    """Exactly ``deletions`` deletions of existing edges and ``insertions`` insertions among the
    existing vertices (half re-weights, half random pairs): no growth, a fixed event count."""
    n, k, m = host.num_vertices, host.num_weights, host.num_edges
    src, dst = host.edge_sources(), host.col_ind
    d = rng.integers(0, m, size=deletions)
    r = rng.integers(0, m, size=insertions // 2)
    isrc = np.concatenate([src[r], rng.integers(0, n, size=insertions - r.size)]).astype(np.int64)
    idst = np.concatenate([dst[r], rng.integers(0, n, size=insertions - r.size)]).astype(np.int64)
    iw = rng.integers(1, 101, size=(insertions, k))
    return isrc, idst, iw, src[d].astype(np.int64), dst[d].astype(np.int64)


def real_batch_arrays(rng, host, fraction: float = 0.01):
    """A random batch of ``fraction`` x m events on a real graph: deletions of existing edges
    (some twice), a few missing and out-of-range deletions, re-weights of existing pairs, new
    pairs, and two new vertices."""
    n, k, m = host.num_vertices, host.num_weights, host.num_edges
    size = max(8, int(m * fraction))
    src, dst = host.edge_sources().astype(np.int64), host.col_ind.astype(np.int64)
    d = rng.integers(0, m, size=size // 2)
    d = np.concatenate([d, d[:3]])  # the same pairs deleted twice (another copy, or missing)
    dsrc = np.concatenate([src[d], rng.integers(0, n, size=3), [n + 7]])
    ddst = np.concatenate([dst[d], rng.integers(0, n, size=3), [1]])
    r = rng.integers(0, m, size=size // 4)
    new = size - size // 2 - r.size
    isrc = np.concatenate([src[r], rng.integers(0, n, size=new), [rng.integers(0, n), n]])
    idst = np.concatenate([dst[r], rng.integers(0, n, size=new), [n, n + 1]])
    iw = rng.integers(1, 101, size=(isrc.size, k))
    return isrc, idst, iw, dsrc, ddst


def _counting_apply(graph, batch):
    """``graph.apply(batch)`` under a counting device allocator: (result, allocation sizes)."""
    import cupy

    pool = cupy.get_default_memory_pool()
    sizes = []

    def counting(size):
        sizes.append(int(size))
        return pool.malloc(size)

    cupy.cuda.set_allocator(counting)
    try:
        got = graph.apply(batch)
    finally:
        cupy.cuda.set_allocator(pool.malloc)
    return got, sizes


def _graph(rng, n=200, k=2, *, multi=True, offset_dtype=None, shape="sparse"):
    """A fresh host multigraph (parallel edges and self-loops by default), weights 1..100."""
    n, src, dst, w = H.random_graph(rng, shape, n, k, "mid", multi=multi)
    return engines.Graph.from_edges(src, dst, w, num_vertices=n, offset_dtype=offset_dtype)


def _apply_both(graph, twin, batch, what: str):
    """The same batch on the device graph and the host twin; byte equality of everything."""
    got = graph.apply(batch)
    want = twin.apply(batch)
    assert_no_problems(commit_problems(got, want) + graph_problems(graph, twin), what)
    return got


# ---------------------------------------------------------------------------------------------
# 1. random chains (hypothesis)


@settings(max_examples=H.examples(25), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.integers(0, 2**32 - 1),
       shape=st.sampled_from(H.SHAPES),
       n=st.integers(1, 48),
       num_weights=st.integers(1, 3),
       multi=st.booleans(),
       wclass=st.sampled_from(H.WEIGHT_CLASSES),
       offset=st.sampled_from(["int32", "int64"]),
       kinds=st.lists(st.sampled_from(KINDS), min_size=2, max_size=2),
       at=st.integers(0, 2))
def test_random_chains_device_apply_equals_host_apply(seed, shape, n, num_weights, multi, wclass, offset,
                                                       kinds, at):
    """Random multigraphs (parallel edges, self-loops), K = 1..3, int32 and int64 offsets, and
    chains of three batches (one always carrying every algorithm.md §3.3 rule: missing and
    out-of-range deletions, upserts, duplicates, delete-then-reinsert, growth; ``outgrow`` forces
    every device capacity to grow): after each apply every array of the device graph, its device
    buffers, the summary, the classification and the scalars equal the host twin's byte for byte,
    and both equal the list-based oracles (``ref_apply``, :class:`EdgeModel`)."""
    rng = np.random.default_rng(seed)
    n, src, dst, w = H.random_graph(rng, shape, n, num_weights, wclass, multi=multi)
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n, offset_dtype=np.dtype(offset))
    twin = host_twin(graph)
    model = EdgeModel.of(graph)
    graph.to_device()
    assert graph.device is not None
    assert_no_problems(graph_problems(graph, twin), "after to_device")
    chain = list(kinds)
    chain.insert(at, "all_rules")
    for step, kind in enumerate(chain):
        arrays = batch_arrays(rng, kind, twin, wclass)
        app = O.ref_apply(H.ref_of(twin), *arrays)
        model.apply(*arrays)
        batch = H.make_batch(arrays)
        got = graph.apply(batch)
        want = twin.apply(batch)
        problems = commit_problems(got, want) + graph_problems(graph, twin) + oracle_problems(graph, got, app, model)
        assert_no_problems(problems, f"step {step} ({kind}, {shape}, n={n}, K={num_weights}, {offset})")
        assert graph.offset_dtype == np.dtype(offset)


# ---------------------------------------------------------------------------------------------
# 2. the golden corpus


@pytest.mark.parametrize("shard", S.golden_shards())
def test_golden_cases_device_apply_equals_host_apply(shard):
    """Every golden case (loaded as the golden replay does, ``conformance.replay.build_inputs``):
    its batch applied on a device graph and on a host twin, then once more on the new state;
    byte-equal arrays, device buffers, summary and classification, and the first summary, n and m
    equal to the case's stored expectations."""
    from conformance.replay import build_inputs

    corpus = S.golden_corpus()
    cases = [c for c in corpus.cases if c["file"] == shard]
    assert cases, f"no cases in {shard}"
    failures = []
    for case in cases:
        arrays = corpus.arrays(case)
        graph, batch = build_inputs(arrays, case)
        twin, _ = build_inputs(arrays, case)
        graph.to_device()
        problems = graph_problems(graph, twin)
        for step in range(2):
            got = graph.apply(batch)
            want = twin.apply(batch)
            found = commit_problems(got, want) + graph_problems(graph, twin)
            if step == 0:
                stored = case["expect"]["batch"]
                if dataclasses.asdict(got[0]) != stored:
                    found.append(f"summary {dataclasses.asdict(got[0])}, stored {stored}")
                if (graph.num_vertices, graph.num_edges) != (case["n_after"], case["m_after"]):
                    found.append(f"n, m = {graph.num_vertices}, {graph.num_edges}; stored "
                                 f"{case['n_after']}, {case['m_after']}")
            problems += [f"apply {step + 1}: {p}" for p in found]
        if problems:
            failures.append(f"{case['name']}: " + "; ".join(problems[:4]))
    assert not failures, f"{len(failures)} of {len(cases)} cases differ:\n" + "\n".join(failures[:20])


# ---------------------------------------------------------------------------------------------
# 3. the shared real graphs


@pytest.mark.parametrize("name", ["uspowergrid", "luxembourg_osm"])
def test_real_graph_one_percent_batches(real_graphs_dir, name):
    """The small real graphs (skipped where absent), symmetrized with K = 3: two random 1 %
    batches (deletions, missing and out-of-range ones, re-weights, new pairs, growth) give the
    same bytes on the device as on the host twin."""
    from ..engines.test_real_graphs import load_real_graph

    graph, _, _ = load_real_graph(real_graphs_dir, name)
    twin = host_twin(graph)
    graph.to_device()
    assert_no_problems(graph_problems(graph, twin), f"{name} after to_device")
    rng = np.random.default_rng(_seed("real", name))
    for step in range(2):
        batch = H.make_batch(real_batch_arrays(rng, twin, 0.01))
        _apply_both(graph, twin, batch, f"{name} batch {step}")


# ---------------------------------------------------------------------------------------------
# 4. update() chains mixing host and CUDA results


@pytest.mark.parametrize("cuda_engines", [("operators",), ("fused",), ("fused", "operators")], ids="+".join)
def test_update_chain_mixing_host_and_cuda_results(cuda_engines):
    """One graph, results on two objectives on the host and on the CUDA engines, all passed to
    every ``update()`` (one device commit each): the graph equals the host twin, every tree equals
    a fresh host ``compute()`` on the twin byte for byte (canonical inputs stay canonical) and the
    others (``assert_conformant``), and ``stats.batch`` equals the twin's summary."""
    if "fused" in cuda_engines and not S.fused_available():
        pytest.skip("the fused engine cannot run on this device")
    rng = np.random.default_rng(_seed("chain", *cuda_engines))
    graph = _graph(rng, 400, 2)
    twin = host_twin(graph)
    source = 3
    groups = {}
    for k in range(2):
        cuda_results = {e: sssp.compute(graph, source, backend="cuda", cuda_engine=e, objective=k)
                        for e in cuda_engines}
        assert graph.device is not None
        # the host result is computed on the device-resident graph (host views downloaded)
        groups[k] = {"host": sssp.compute(graph, source, backend="host", objective=k), **cuda_results}
        S.assert_conformant(groups[k], what=f"compute objective {k}")
    flat = [(k, name, r) for k, group in groups.items() for name, r in group.items()]
    kinds = ("mixed", "tree_delete", "reweight", "growth", "duplicates", "reinsert", "combo", "outgrow")
    for step, kind in enumerate(kinds):
        parents = groups[0]["host"].to_numpy()[1]
        batch = H.make_batch(batch_arrays(rng, kind, twin, "mid", parents=parents, source=source))
        stats = sssp.update(graph, batch, *[r for _, _, r in flat])
        summary, _ = twin.apply(batch)
        what = f"step {step} ({kind})"
        assert_no_problems(graph_problems(graph, twin), what)
        by_result = {(k, name): st for (k, name, _), st in zip(flat, stats)}
        for k, group in groups.items():
            S.assert_conformant(group, {name: by_result[(k, name)] for name in group}, update=True,
                                what=f"{what} objective {k}")
            fresh = sssp.compute(twin, source, backend="host", objective=k)
            for name, r in group.items():
                assert by_result[(k, name)].batch == summary, (what, k, name)
                assert r.graph_version == graph.version
                H.assert_result_bytes_equal(fresh, r)


# ---------------------------------------------------------------------------------------------
# 5. failures change nothing


BAD_BATCHES = {
    "k_mismatch": lambda k: engines.Batch([0], [1], np.ones((1, k + 1), dtype=np.int64)),
    "negative_insert_id": lambda k: engines.Batch([-1], [0], np.ones((1, k), dtype=np.int64)),
    "negative_delete_id": lambda k: engines.Batch([], [], None, [0], [-2]),
    "not_a_batch": lambda k: ([0], [1], [[1] * k]),
}


@pytest.mark.parametrize("bad", list(BAD_BATCHES))
def test_invalid_batch_on_device_graph_changes_nothing(bad):
    """A bad batch (K mismatch, negative id, not a Batch) on a device graph raises
    ``InvalidArgumentError`` from ``apply`` and from ``update`` before anything changes: version,
    state id, host views, the published device buffer set and its content; the CUDA result stays
    healthy and the next valid update is correct."""
    rng = np.random.default_rng(_seed("invalid", bad))
    graph = _graph(rng, 80, 2)
    twin = host_twin(graph)
    result = sssp.compute(graph, 0, backend="cuda", cuda_engine="operators")
    first = H.make_batch(batch_arrays(rng, "mixed", twin, "mid"))
    sssp.update(graph, first, result)
    twin.apply(first)
    before = capture(graph)
    tree = result.to_numpy()
    with pytest.raises(errors.InvalidArgumentError):
        graph.apply(BAD_BATCHES[bad](graph.num_weights))
    assert_unchanged(graph, before, f"apply({bad})")
    with pytest.raises(errors.InvalidArgumentError):
        sssp.update(graph, BAD_BATCHES[bad](graph.num_weights), result)
    assert_unchanged(graph, before, f"update({bad})")
    assert not result.poisoned and result.graph_version == graph.version
    for a, b in zip(tree, result.to_numpy()):
        assert a.tobytes() == b.tobytes()
    good = H.make_batch(batch_arrays(rng, "combo", twin, "mid"))
    sssp.update(graph, good, result)
    twin.apply(good)
    assert_no_problems(graph_problems(graph, twin), f"after {bad}")
    H.assert_result_bytes_equal(sssp.compute(twin, 0, backend="host"), result)


@pytest.mark.parametrize("path", ["apply", "update"])
@pytest.mark.parametrize("history", ["fresh", "committed"])
def test_device_out_of_memory_changes_nothing(history, path):
    """Every device allocation fails (``cupy.cuda.set_allocator``) while a batch with more
    insertions than the graph has edges (plus growth) is applied, so every capacity must grow:
    ``engines.errors.OutOfMemoryError`` (a ``MemoryError``), and the graph is unchanged on host and
    device (version, state id, host views, the current buffer set and its content); through
    ``update()`` the result is not poisoned. ``fresh``: the graph's first commit on the device
    (no apply scratch yet); ``committed``: after one commit. Afterwards, with the pool allocator
    back, the same batch and one more apply correctly."""
    import cupy

    rng = np.random.default_rng(_seed("oom", history, path))
    graph = _graph(rng, 60, 2)
    twin = host_twin(graph)
    result = None
    if path == "update":
        result = sssp.compute(graph, 0, backend="cuda", cuda_engine="operators")
    else:
        graph.to_device()
    if history == "committed":
        small = H.make_batch(batch_arrays(rng, "mixed", twin, "mid"))
        if result is None:
            graph.apply(small)
        else:
            sssp.update(graph, small, result)
        twin.apply(small)
    big = H.make_batch(outgrow_arrays(rng, H.ref_of(twin), "mid", factor=3))
    assert big.num_insertions > 3 * graph.num_edges
    before = capture(graph)
    tree = result.to_numpy() if result is not None else None

    def fail(size):
        raise cupy.cuda.memory.OutOfMemoryError(size, 0, 0)

    raised = None
    cupy.cuda.set_allocator(fail)
    try:
        if result is None:
            graph.apply(big)
        else:
            sssp.update(graph, big, result)
    except Exception as exc:  # noqa: BLE001 - the type is what is checked
        raised = exc
    finally:
        cupy.cuda.set_allocator(cupy.get_default_memory_pool().malloc)
    assert isinstance(raised, errors.OutOfMemoryError), (
        f"expected engines.errors.OutOfMemoryError, got {type(raised).__module__}.{type(raised).__name__}: {raised}")
    assert isinstance(raised, MemoryError)
    assert_unchanged(graph, before, f"{path} under a failing allocator ({history})")
    assert_no_problems(graph_problems(graph, twin), "after the failed commit")
    if result is not None:
        assert not result.poisoned and result.graph_version == graph.version
        for a, b in zip(tree, result.to_numpy()):
            assert a.tobytes() == b.tobytes()
    for step in range(2):  # the batch that failed, then one more on the new state
        batch = big if step == 0 else H.make_batch(batch_arrays(rng, "combo", twin, "mid"))
        if result is None:
            got = graph.apply(batch)
            want = twin.apply(batch)
            problems = commit_problems(got, want)
        else:
            stats = sssp.update(graph, batch, result)
            want = twin.apply(batch)
            problems = [] if stats.batch == want[0] else [f"stats.batch {stats.batch}, expected {want[0]}"]
        assert_no_problems(problems + graph_problems(graph, twin), f"apply {step} after the failure")
        if result is not None:
            H.assert_result_bytes_equal(sssp.compute(twin, 0, backend="host"), result)


# ---------------------------------------------------------------------------------------------
# 6. snapshots, restores, copies, and the exact-state rule


def test_snapshot_restore_on_device_returns_the_exact_state():
    """Device snapshots are device copies and ``restore`` is a pointer swap: after three applies a
    restore gives back the snapshot's bytes, version and state id; a commit from a restored state
    is correct and does not write the snapshot's buffers (a second restore still gives its bytes);
    restoring the later snapshot gives its state back too."""
    rng = np.random.default_rng(_seed("restore"))
    graph = _graph(rng, 150, 2)
    twin = host_twin(graph)
    graph.to_device()
    s0, t0 = graph.snapshot(), twin.snapshot()
    assert s0.device == graph.device and s0.device_buffers is not None
    frozen0 = capture(twin)["host"]
    for step, kind in enumerate(("mixed", "growth", "outgrow")):
        _apply_both(graph, twin, H.make_batch(batch_arrays(rng, kind, twin, "mid")), f"apply {step}")
    s3, t3 = graph.snapshot(), twin.snapshot()

    graph.restore(s0)
    twin.restore(t0)
    assert (graph.version, graph.state_id) == (s0.version, s0.state_id) == (0, s0.state_id)
    assert graph.device is not None
    assert_no_problems(graph_problems(graph, twin), "restore(s0)")
    assert_no_problems([p for key, value in frozen0.items()
                        for p in _array_problems(key, value, _host_views(graph)[key])], "restore(s0) bytes")

    _apply_both(graph, twin, H.make_batch(batch_arrays(rng, "combo", twin, "mid")), "apply after restore(s0)")
    graph.restore(s0)
    twin.restore(t0)
    assert_no_problems(graph_problems(graph, twin), "second restore(s0)")
    assert_no_problems([p for key, value in frozen0.items()
                        for p in _array_problems(key, value, _host_views(graph)[key])], "second restore(s0) bytes")

    graph.restore(s3)
    twin.restore(t3)
    assert (graph.version, graph.state_id) == (3, s3.state_id)
    assert_no_problems(graph_problems(graph, twin), "restore(s3)")
    _apply_both(graph, twin, H.make_batch(batch_arrays(rng, "reinsert", twin, "mid")), "apply after restore(s3)")


def test_copy_of_a_device_graph_is_an_independent_device_graph():
    """``copy()`` keeps residence with its own device buffers: equal bytes at first, then
    different batches on the copy and the original leave each equal to its own twin."""
    rng = np.random.default_rng(_seed("copy"))
    graph = _graph(rng, 120, 3)
    twin = host_twin(graph)
    graph.to_device()
    _apply_both(graph, twin, H.make_batch(batch_arrays(rng, "mixed", twin, "mid")), "first apply")
    clone = graph.copy()
    clone_twin = twin.copy()
    assert clone.device == graph.device
    assert clone._device is not graph._device and clone._device.current is not graph._device.current
    assert clone.version == graph.version
    assert_no_problems(graph_problems(clone, twin), "copy")
    _apply_both(clone, clone_twin, H.make_batch(batch_arrays(rng, "outgrow", clone_twin, "mid")), "copy apply")
    assert_no_problems(graph_problems(graph, twin), "original after the copy's apply")
    _apply_both(graph, twin, H.make_batch(batch_arrays(rng, "delete_all", twin, "mid")), "original apply")
    assert_no_problems(graph_problems(clone, clone_twin), "copy after the original's apply")


def test_stale_after_restore_then_different_batch_on_device():
    """The issue's reproduction on a device graph with a CUDA result: after restore-then-another-
    batch the graph is at the result's version number but in another state, so ``update()``
    raises ``StaleResultError`` and changes nothing; the result itself stays readable."""
    g = engines.Graph.from_edges([0, 0, 1], [1, 2, 2], [[1], [5], [1]])
    t = sssp.compute(g, 0, backend="cuda")
    assert g.device is not None
    s = g.snapshot()
    sssp.update(g, engines.Batch([], [], None, [0], [1]), t)
    g.restore(s)
    g.apply(engines.Batch([0], [2], [[9]]))
    assert g.version == t.graph_version == 1
    before = capture(g)
    with pytest.raises(errors.StaleResultError):
        sssp.update(g, engines.Batch.empty(1), t)
    assert_unchanged(g, before, "stale update")
    assert not t.poisoned
    d, p = t.to_numpy()
    inf = sssp.INFINITE_DISTANCE
    assert d.tolist() == [0, inf, 5] and p.tolist() == [-1, -1, 0]  # the tree after deleting (0, 1)


def test_restoring_the_results_own_state_makes_it_valid_again():
    """A result is valid exactly for its state: after ``restore`` to an earlier state it is stale
    (``StaleResultError``), after ``restore`` to the snapshot of its own state it is accepted, and
    the update from there is correct."""
    rng = np.random.default_rng(_seed("own-state"))
    graph = _graph(rng, 100, 1)
    twin = host_twin(graph)
    result = sssp.compute(graph, 0, backend="cuda", cuda_engine="operators")
    s0 = graph.snapshot()
    first = H.make_batch(batch_arrays(rng, "mixed", twin, "mid"))
    sssp.update(graph, first, result)
    twin.apply(first)
    s1 = graph.snapshot()
    graph.restore(s0)
    with pytest.raises(errors.StaleResultError):
        sssp.update(graph, engines.Batch.empty(1), result)
    graph.restore(s1)
    assert graph.state_id == s1.state_id
    second = H.make_batch(batch_arrays(rng, "tree_delete", twin, "mid"))
    sssp.update(graph, second, result)
    twin.apply(second)
    assert_no_problems(graph_problems(graph, twin), "after the update from the restored state")
    H.assert_result_bytes_equal(sssp.compute(twin, 0, backend="host"), result)


# ---------------------------------------------------------------------------------------------
# 7. a steady-state commit allocates nothing


def test_steady_state_device_commit_allocates_nothing():
    """After three warm-up applies of batches of one size on the restored snapshot, an apply of
    another batch of that size on the restored snapshot makes zero device allocations (the buffer
    sets, the scratch and the sort/scan arena are reserved), and its bytes are right."""
    rng = np.random.default_rng(_seed("steady"))
    graph = _graph(rng, 3000, 2)
    twin = host_twin(graph)
    graph.to_device()
    snap, twin_snap = graph.snapshot(), twin.snapshot()
    batches = [H.make_batch(fixed_size_arrays(rng, twin, 40, 40)) for _ in range(5)]
    for batch in batches[:3]:
        graph.restore(snap)
        graph.apply(batch)
    for i, batch in enumerate(batches[3:]):
        graph.restore(snap)
        got, sizes = _counting_apply(graph, batch)
        assert sizes == [], f"steady-state apply {i} allocated {sizes} bytes of device memory"
        twin.restore(twin_snap)
        want = twin.apply(batch)
        assert_no_problems(commit_problems(got, want) + graph_problems(graph, twin, versions=False),
                           f"steady-state apply {i}")


# ---------------------------------------------------------------------------------------------
# 8. device_bytes, to_host, residence


def _array_bytes(host) -> int:
    total = sum(int(a.nbytes) for a in (host.row_ptr, host.col_ind, host.weights))
    ie = host.in_edges(0)
    total += int(ie.ptr.nbytes) + int(ie.src.nbytes)
    return total + sum(int(host.in_edges(k).weight.nbytes) for k in range(host.num_weights))


def test_device_bytes_and_to_host(cuda_device):
    """``device_bytes()`` is 0 on the host, positive and at least the bytes of the graph's arrays
    on the device (also after growth); ``engines.sssp.cuda.device_bytes`` adds a CUDA result's
    arrays and nothing for a host result; ``to_host()`` keeps version, state id and bytes, with
    ``device`` None, and applies then run on the host (and again on the device after
    ``to_device()``), equal to the twin."""
    from engines.sssp import cuda

    rng = np.random.default_rng(_seed("bytes"))
    graph = _graph(rng, 500, 2)
    twin = host_twin(graph)
    assert graph.device is None and graph.device_bytes() == 0
    assert graph.to_device() is graph
    assert graph.device == cuda_device
    assert 0 < graph.device_bytes() and graph.device_bytes() >= _array_bytes(twin)
    gpu = sssp.compute(graph, 0, backend="cuda", cuda_engine="operators")
    host = sssp.compute(graph, 0, backend="host")
    d, p = gpu.to_numpy()
    assert cuda.device_bytes(graph, gpu) >= graph.device_bytes() + d.nbytes + p.nbytes
    assert cuda.device_bytes(graph, host) == graph.device_bytes()
    _apply_both(graph, twin, H.make_batch(batch_arrays(rng, "outgrow", twin, "mid")), "growth")
    assert graph.device_bytes() >= _array_bytes(twin)

    version, state = graph.version, graph.state_id
    assert graph.to_host() is graph
    assert graph.device is None and graph.device_bytes() == 0
    assert (graph.version, graph.state_id) == (version, state)
    assert_no_problems(graph_problems(graph, twin), "to_host")
    _apply_both(graph, twin, H.make_batch(batch_arrays(rng, "combo", twin, "mid")), "host apply after to_host")
    graph.to_device()
    assert graph.device == cuda_device
    assert_no_problems(graph_problems(graph, twin), "to_device again")
    _apply_both(graph, twin, H.make_batch(batch_arrays(rng, "mixed", twin, "mid")), "device apply again")


def test_cuda_results_make_the_graph_device_resident(cuda_device):
    """``compute(backend="cuda")`` moves the graph to the device; after ``to_host()`` an
    ``update()`` with that CUDA result moves it back (fresh device buffers) and is correct;
    ``to_device()`` on a device graph is a no-op (same buffer set)."""
    rng = np.random.default_rng(_seed("residence"))
    graph = _graph(rng, 200, 1)
    twin = host_twin(graph)
    result = sssp.compute(graph, 0, backend="cuda")
    assert graph.device == cuda_device
    graph.to_host()
    assert graph.device is None
    batch = H.make_batch(batch_arrays(rng, "mixed", twin, "mid"))
    stats = sssp.update(graph, batch, result)
    summary, _ = twin.apply(batch)
    assert graph.device == cuda_device
    assert stats.batch == summary
    assert_no_problems(graph_problems(graph, twin), "update after to_host")
    H.assert_result_bytes_equal(sssp.compute(twin, 0, backend="host"), result)
    current = graph._device.current
    assert graph.to_device() is graph and graph._device.current is current
