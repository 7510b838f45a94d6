"""device_apply.ApplyScratch.reserve in the steady state (no GPU needed): a reserve that every
buffer already has room for returns before any CUDA call, and one that must grow (or follows a
reserve that failed half-way, layout 0) goes on to the device. CuPy is replaced by a sentinel that
fails the test if touched."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest

from engines import errors
from engines.graph import apply_sides, device_apply, key_sort

from ..fake_cupy import FakeCupy as _FakeCupy


class _Touched(Exception):
    pass


@pytest.fixture
def scratch(monkeypatch):
    def no_cuda():
        raise _Touched("the reserve went to the device")

    monkeypatch.setattr(device_apply, "cupy_module", no_cuda)
    sc = object.__new__(device_apply.ApplyScratch)  # the buffers as a completed reserve left them
    sc.device, sc.num_weights = 0, 1
    sc.m_cap, sc.n_cap, sc.event_cap = 1000, 101, 1024
    sc.mark = sc.row_flag = sc.keys = object()
    sc.layout = 7
    return sc


def test_a_reserve_with_room_touches_nothing(scratch):
    scratch.reserve(100, 1000, 1024, stream=None)  # rows + 1 == n_cap, m == m_cap, events == cap
    scratch.reserve(1, 0, 1, stream=None)
    assert scratch.layout == 7 and (scratch.m_cap, scratch.n_cap, scratch.event_cap) == (1000, 101, 1024)
    assert scratch.fits(100, 1000, 1024)


@pytest.mark.parametrize("rows, entries, events", [(101, 1000, 1), (1, 1001, 1), (1, 1, 1025)])
def test_a_reserve_that_must_grow_goes_to_the_device(scratch, rows, entries, events):
    assert not scratch.fits(rows, entries, events)
    with pytest.raises(_Touched):
        scratch.reserve(rows, entries, events, stream=None)


@pytest.mark.parametrize("missing", ["mark", "row_flag", "keys", "layout"])
def test_a_missing_buffer_or_an_unfinished_layout_goes_to_the_device(scratch, missing):
    setattr(scratch, missing, 0 if missing == "layout" else None)
    assert not scratch.fits(1, 1, 1)
    with pytest.raises(_Touched):
        scratch.reserve(1, 1, 1, stream=None)


def _fresh_scratch():
    sc = object.__new__(device_apply.ApplyScratch)
    sc.device, sc.num_weights = 0, 2
    sc.m_cap = sc.n_cap = sc.event_cap = 0
    sc.mark = sc.row_flag = sc.row_delta = sc.cum = None
    sc.keys = sc.stage_key = sc.stage_ins = sc.increased = sc.staging = sc.touched_cum = None
    sc.touched_limit = 0
    sc.key_sort = key_sort.DEFAULT_KEY_SORT  # as ApplyScratch.__init__
    sc.parallel, sc.mapped_record, sc.in_side = False, False, None
    sc.record_host_ptr = 4242  # the pinned record's address (no pinned memory here)
    sc.record = sc.sizes = sc.ev_src = sc.ev_dst = sc.ev_weights = None
    sc.layout, sc._pinned, sc._pinned_ptr, sc._upload_done = 0, None, 0, None
    return sc


def _assert_complete(sc, rows, entries, events):
    assert sc.fits(rows, entries, events)
    for name in ("mark", "row_flag", "row_delta", "cum", "keys", "stage_key", "stage_ins", "increased",
                 "touched_cum", "staging",
                 "record", "sizes", "ev_src", "ev_dst", "ev_weights", "_pinned"):
        assert getattr(sc, name) is not None, name
    assert sc.mark.size == sc.m_cap and sc.row_flag.size == sc.row_delta.size == sc.cum.size == sc.n_cap
    assert sc.touched_cum.size == sc.event_cap + 1
    assert sc.keys.size == 2 * sc.event_cap and sc.ev_src.size == sc.ev_dst.size == sc.event_cap
    assert sc._pinned.size == sc.staging.size  # the host copy packs the events at the same capacity


# a growing reserve allocates eleven times: mark; row_flag, row_delta, cum; keys, stage_key, stage_ins,
# increased, touched_cum, staging, the pinned copy; each fails once below (with the sides one after
# the other: the in side's own scratch, allocated after these, fails in test_apply_sides.py)
@pytest.mark.parametrize("fail_at", range(1, 12))
def test_a_reserve_that_failed_half_way_is_rebuilt_by_the_next(monkeypatch, fail_at):
    """An out-of-memory error at any allocation of a growing reserve, then a retry with a batch
    that the failed reserve's capacities would have held: the retry rebuilds every group the
    failure left incomplete (none is used at a capacity it was not sized for)."""
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, "0")
    scratch = _fresh_scratch()
    monkeypatch.setattr(device_apply, "cupy_module", lambda: _FakeCupy())
    scratch.reserve(10, 20, 8, stream=nullcontext())
    _assert_complete(scratch, 10, 20, 8)
    failing = _FakeCupy(fail_at)
    monkeypatch.setattr(device_apply, "cupy_module", lambda: failing)
    with pytest.raises(errors.OutOfMemoryError):
        scratch.reserve(1000, 5000, 5000, stream=nullcontext())
    assert failing.allocations == fail_at
    assert not scratch.fits(1000, 5000, 5000)
    monkeypatch.setattr(device_apply, "cupy_module", lambda: _FakeCupy())
    scratch.reserve(10, 20, 8, stream=nullcontext())  # fits the old capacities: must still rebuild
    _assert_complete(scratch, 10, 20, 8)
    assert scratch.layout != 0


def test_the_touched_scan_limit_is_read_when_the_event_buffers_grow(monkeypatch):
    """ENGINES_APPLY_TOUCHED_SCAN is read with the event capacity (a captured commit's plan depends
    on both): a reserve that grows only rows or entries keeps the limit, one that grows the events
    takes the switch's value, and a bad value refuses the reserve before anything changes."""
    scratch = _fresh_scratch()
    monkeypatch.setattr(device_apply, "cupy_module", lambda: _FakeCupy())
    monkeypatch.setenv(device_apply.TOUCHED_SCAN_ENV, "5000")
    scratch.reserve(10, 20, 8, stream=nullcontext())
    assert scratch.touched_limit == 5000
    monkeypatch.setenv(device_apply.TOUCHED_SCAN_ENV, "off")
    scratch.reserve(500, 900, 8, stream=nullcontext())  # rows and entries grow, events fit
    assert scratch.touched_limit == 5000
    monkeypatch.setenv(device_apply.TOUCHED_SCAN_ENV, "many")
    before = (scratch.layout, scratch.event_cap, scratch.keys)
    with pytest.raises(errors.InvalidArgumentError, match="ENGINES_APPLY_TOUCHED_SCAN"):
        scratch.reserve(500, 900, 5000, stream=nullcontext())
    assert (scratch.layout, scratch.event_cap, scratch.keys) == before and scratch.touched_limit == 5000
    monkeypatch.setenv(device_apply.TOUCHED_SCAN_ENV, "off")
    scratch.reserve(500, 900, 5000, stream=nullcontext())
    assert scratch.touched_limit == 0 and scratch.event_cap >= 5000


def test_sized_staging_takes_the_buffers_of_the_last_reserve_that_moved_them(monkeypatch):
    """PendingCommit.sized_staging keeps the scratch's part of its arguments on the scratch; the
    reserve that moves those buffers (the event buffers grow) drops it, so the next launch takes
    the new ones, and a reserve that grows only rows or entries keeps it."""
    scratch = _fresh_scratch()
    monkeypatch.setattr(device_apply, "cupy_module", lambda: _FakeCupy())
    monkeypatch.setattr(device_apply, "load_module", lambda device: _TableModule())
    pending = object.__new__(device_apply.PendingCommit)
    pending.scratch, pending._pending, pending._expired = scratch, True, False
    pending.changes_grid = False  # the switch as a commit reads it by default
    views = tuple(np.zeros(2) for _ in range(4))

    def head():
        return pending.sized_staging(0, *views)[1][:4]

    def buffers():
        return scratch.sizes, scratch.ev_src, scratch.ev_dst, scratch.increased

    scratch.reserve(10, 20, 8, stream=nullcontext())
    first = head()
    assert all(a is b for a, b in zip(first, buffers()))
    scratch.reserve(500, 900, 8, stream=nullcontext())  # rows and entries grow, events fit
    assert all(a is b for a, b in zip(head(), first))
    scratch.reserve(500, 900, 5000, stream=nullcontext())  # the event buffers move
    assert all(a is b for a, b in zip(head(), buffers())) and not any(a is b for a, b in zip(buffers(), first))


class _TableModule:
    def functions(self, vertex, offset):  # runtime.CompiledModule.functions
        return {name: name for name in device_apply.KERNELS}
