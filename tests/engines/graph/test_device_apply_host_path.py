"""device_apply's host side of a commit (no GPU needed): the record's counters, the pending
commit's start values and the staged header and events are those of the straightforward code they
replaced (an ``int()`` per NumPy slot, a generator per tuple, the dataclass constructor, one NumPy
assignment per header slot), for random records, batches and K. CuPy is not touched: the pinned
buffer is a NumPy array, the staging copy and the events are stand-ins."""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.batch import ApplySummary, Batch, batch_events
from engines.graph import device_apply as da
from engines.graph.device_apply import (COL_INCREASED, COL_LOST, COL_OLD_MAX, COL_RESCAN, COL_SUM, COL_WRITTEN,
                                        REC_DELETED, REC_EDGES, REC_FIXED, REC_INSERTED, REC_MISSING, REC_UPDATED,
                                        SIZE_COUNT, SIZE_DELETIONS, SIZE_INSERTIONS, SIZE_M_OLD, SIZE_N_AFTER,
                                        SIZE_N_OLD)
from engines.sssp.cuda import runtime


def reference_values(pending, rec: np.ndarray, empty: bool = False) -> dict:
    """PendingCommit's record conversion before the fast path (an ``int()`` per slot)."""
    k = pending.scratch.num_weights
    ev = pending.events
    old_max = tuple(int(x) for x in pending.old_max_given)
    sum_before = tuple(int(x) for x in pending.sum_given)

    def col(group):
        return rec[REC_FIXED + group * k: REC_FIXED + (group + 1) * k]

    lost, written, rescan = col(COL_LOST), col(COL_WRITTEN), col(COL_RESCAN)
    maxima = tuple(int(rescan[c]) if lost[c] else max(old_max[c], int(written[c])) for c in range(k))
    sums = tuple(sum_before[c] + int(col(COL_SUM)[c]) for c in range(k))
    edges = pending.buffers.num_edges if empty else int(rec[REC_EDGES])
    summary = ApplySummary(
        inserted_edges=int(rec[REC_INSERTED]),
        updated_edges=int(rec[REC_UPDATED]),
        deleted_edges=int(rec[REC_DELETED]),
        ignored_deletions=int(ev.out_of_range + rec[REC_MISSING]),
        inserted_vertices=int(ev.n_after - ev.n_old),
        num_vertices_after=int(ev.n_after),
    )
    increased = tuple(int(x) for x in col(COL_INCREASED))
    return {"summary": summary, "num_edges": edges, "max_weight": maxima, "weight_sum": sums,
            "changed": tuple(ev.num_deletions + c for c in increased)}


def assert_same_values(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for key in want:
        a, b = got[key], want[key]
        assert type(a) is type(b) and a == b, key
        if isinstance(b, tuple):
            assert [type(x) for x in a] == [int] * len(b), key
    s, r = got["summary"], want["summary"]
    assert vars(s) == vars(r) and list(vars(s)) == list(vars(r))
    assert all(type(getattr(s, f.name)) is int for f in dataclasses.fields(ApplySummary))
    assert hash(s) == hash(r) and repr(s) == repr(r) and s == r
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.deleted_edges = 1


class _Ready:
    done = True

    def record(self, stream):
        pass


def _scratch(k: int, rec=None, cap: int = 64):
    sc = object.__new__(da.ApplyScratch)
    sc.num_weights, sc.event_cap = k, cap
    sc.record_host = rec
    sc.record_ready = _Ready()
    nbytes = sc._events_at() + (8 + 4 * k) * cap
    sc._pinned, sc._pinned_ptr = np.full(nbytes, 0xAB, dtype=np.uint8), 0
    sc.copied = []
    sc.staging = types.SimpleNamespace(data=types.SimpleNamespace(
        copy_from_host_async=lambda ptr, size, stream: sc.copied.append((ptr, size, stream))))
    sc._upload_done = _Ready()
    return sc


def _pending(k, events, rec, sum_before, old_max, record_pending=True, edges=77):
    buffers = types.SimpleNamespace(num_edges=edges, slack=False)
    pending = da.PendingCommit(_scratch(k, rec), events, buffers, sum_before, old_max, record_pending)
    pending.sum_given, pending.old_max_given = sum_before, old_max
    return pending


@st.composite
def cases(draw):
    k = draw(st.integers(1, 4))
    n = draw(st.integers(0, 30))
    ni, nd = draw(st.integers(0, 8)), draw(st.integers(0, 8))
    ids = st.integers(0, 40)
    batch = Batch(draw(st.lists(ids, min_size=ni, max_size=ni)), draw(st.lists(ids, min_size=ni, max_size=ni)),
                  np.array(draw(st.lists(st.integers(1, 1000), min_size=ni * k, max_size=ni * k)),
                           dtype=np.int64).reshape(ni, k),
                  draw(st.lists(ids, min_size=nd, max_size=nd)), draw(st.lists(ids, min_size=nd, max_size=nd)))
    events = batch_events(batch, n, k)
    values = st.integers(0, 2**40)
    rec = np.array(draw(st.lists(values, min_size=da.record_length(k), max_size=da.record_length(k))),
                   dtype=np.int64)
    # lost flags 0 or 1 mostly, sometimes other non-zero values (any non-zero is "lost")
    rec[REC_FIXED + COL_LOST * k: REC_FIXED + (COL_LOST + 1) * k] = draw(
        st.lists(st.sampled_from([0, 0, 1, 3]), min_size=k, max_size=k))
    as_numpy = draw(st.booleans())
    sums = draw(st.lists(st.integers(0, 2**50), min_size=k, max_size=k))
    maxima = draw(st.lists(st.integers(0, 2**31 - 1), min_size=k, max_size=k))
    if as_numpy:
        sums, maxima = np.array(sums, dtype=np.int64), np.array(maxima, dtype=np.int64)
    else:
        sums, maxima = tuple(sums), tuple(maxima)
    return k, events, rec, sums, maxima


@settings(max_examples=300, deadline=None)
@given(cases())
def test_record_values_match_the_reference(case):
    k, events, rec, sums, maxima = case
    pending = _pending(k, events, rec.copy(), sums, maxima)
    assert type(pending._weight_sum_before) is tuple and pending._weight_sum_before == tuple(int(x) for x in sums)
    assert type(pending._old_max) is tuple and pending._old_max == tuple(int(x) for x in maxima)
    assert all(type(x) is int for x in pending._weight_sum_before + pending._old_max)
    want = reference_values(pending, rec)
    assert_same_values(pending._from_values(rec.tolist()), want)
    assert not pending.resolved
    got = pending.resolve()
    assert_same_values(got, want)
    assert pending.resolve() is got and pending.buffers.num_edges == want["num_edges"]
    pending.scratch.record_host[:] = 0  # the next commit reuses the pinned record: the values stay
    assert_same_values(pending.resolve(), want)
    assert pending.num_changed(k - 1) == want["changed"][k - 1]

    empty = _pending(k, events, None, sums, maxima, record_pending=False)
    assert empty.resolved
    assert_same_values(empty.resolve(), reference_values(empty, np.zeros(da.record_length(k), np.int64), empty=True))


def reference_stage(scratch, events, old_max, m_old: int) -> tuple[np.ndarray, int]:
    """ApplyScratch.stage's pinned bytes before the fast path (the copy's length beside them)."""
    cap, k = scratch.event_cap, scratch.num_weights
    host = scratch._pinned.copy()
    rec = da.record_length(k)
    header = host[: scratch._events_at()].view(np.int64)
    header[:] = 0
    header[REC_FIXED + COL_OLD_MAX * k: REC_FIXED + (COL_OLD_MAX + 1) * k] = old_max
    header[rec + SIZE_COUNT] = events.size
    header[rec + SIZE_DELETIONS] = events.num_deletions
    header[rec + SIZE_INSERTIONS] = events.num_insertions
    header[rec + SIZE_N_OLD] = events.n_old
    header[rec + SIZE_N_AFTER] = events.n_after
    header[rec + SIZE_M_OLD] = m_old
    at = scratch._events_at()
    count, ins = events.size, events.num_insertions
    host[at: at + 4 * count].view(np.int32)[:] = events.src
    host[at + 4 * cap: at + 4 * cap + 4 * count].view(np.int32)[:] = events.dst
    w_at = at + 8 * cap
    host[w_at: w_at + 4 * ins * k].view(np.int32)[:] = events.weights.reshape(-1)
    return host, w_at + 4 * ins * k


@settings(max_examples=200, deadline=None)
@given(cases(), st.integers(0, 2**40), st.integers(0, 3))
def test_stage_writes_what_the_reference_wrote(case, m_old, rounds):
    k, events, _, _, maxima = case
    if events.size == 0:
        return  # commit() stages nothing for an empty batch
    scratch = _scratch(k, cap=max(16, events.size))
    for r in range(rounds + 1):  # the same scratch again: cached views must not go stale
        if r % 2:  # a reserve replaced the pinned buffer (a larger capacity): views made anew
            grown = _scratch(k, cap=scratch.event_cap * 2)
            scratch.event_cap, scratch._pinned = grown.event_cap, grown._pinned
        want, length = reference_stage(scratch, events, maxima, m_old + r)
        scratch.stage(events, maxima, m_old + r, "stream")
        np.testing.assert_array_equal(scratch._pinned, want)
        assert scratch.copied[-1] == (0, length, "stream")


def test_sized_staging_follows_the_scratch_buffers(monkeypatch):
    """sized_staging's launch keeps the scratch's part of its arguments and the kernel between
    commits (a reserve that moves the buffers: test_apply_reserve.py); the kernel comes from the
    module's function table at (int32, int32), which loads each kernel once."""
    loaded = []

    class _Raw:
        def get_function(self, name):
            loaded.append(name)
            return ("fn", name)

    module = runtime.CompiledModule(da.ENGINE, 0, _Raw(), da.KERNELS)
    monkeypatch.setattr(da, "load_module", lambda device: module)
    sc = _scratch(2)
    sc.device = 0
    events = batch_events(Batch([0], [1], [[1, 2]]), 3, 2)

    def launch(objective, views):
        pending = _pending(2, events, None, (0, 0), (0, 0))
        pending.scratch = sc
        return pending.sized_staging(objective, *views)

    sc.sizes, sc.ev_src, sc.ev_dst, sc.increased = (np.zeros(1) for _ in range(4))
    views = tuple(np.zeros(2) for _ in range(4))
    for objective in (0, 1, 1, 0):
        fn, args, dims = launch(objective, views)
        assert dims == ((1,), (da.CHANGES_THREADS,))  # one block unless ENGINES_CHANGES_GRID
        assert fn == ("fn", runtime.instantiation_name("apply_changes_sized", np.int32, np.int32))
        assert fn is module.functions(np.int32, np.int32)["apply_changes_sized"]
        want = (sc.sizes, sc.ev_src, sc.ev_dst, sc.increased, np.int32(2), np.int32(objective)) + views
        assert len(args) == len(want) and all(a is b for a, b in zip(args[:4] + args[6:], want[:4] + want[6:]))
        assert [type(a) for a in args[4:6]] == [np.int32, np.int32] and [int(a) for a in args[4:6]] == [2, objective]
    assert loaded == [runtime.instantiation_name(name, np.int32, np.int32) for name in da.KERNELS]


class _NotYet:
    """A record event the stream has not passed: a query says so; a wait would be a
    synchronization, which resolve_ready must never make."""

    done = False

    def synchronize(self):
        raise AssertionError("resolve_ready waited for the record")


def test_resolve_ready_reads_an_arrived_record_and_never_waits_for_one():
    """The engines call resolve_ready while their run is on the device: an arrived record is read
    then (resolve's values, once), one not yet arrived is left for later without a wait, and a
    commit with nothing pending is resolved from the start."""
    k = 2
    events = batch_events(Batch([1, 2], [2, 3], [[5, 6], [7, 8]], [0], [1]), 10, k)
    rec = np.arange(da.record_length(k), dtype=np.int64) % 3
    pending = _pending(k, events, rec, (100, 200), (9, 9))
    pending.scratch.record_ready = _NotYet()
    assert pending.resolve_ready() is False and not pending.resolved
    pending.scratch.record_ready = _Ready()
    assert pending.resolve_ready() is True and pending.resolved
    values = pending.resolve()
    reference = _pending(k, events, rec, (100, 200), (9, 9)).resolve()
    assert values == reference
    pending.scratch.record_host = None  # resolved once: a second call reads nothing
    pending.scratch.record_ready = _NotYet()
    assert pending.resolve_ready() is True and pending.resolve() is values
    empty = _pending(k, events, None, (1, 2), (3, 4), record_pending=False)
    empty.scratch.record_ready = _NotYet()
    assert empty.resolve_ready() is True
