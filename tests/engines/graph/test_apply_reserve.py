"""device_apply.ApplyScratch.reserve in the steady state (no GPU needed): a reserve that every
buffer already has room for returns before any CUDA call, and one that must grow (or follows a
reserve that failed half-way, layout 0) goes on to the device. CuPy is replaced by a sentinel that
fails the test if touched."""

from __future__ import annotations

import pytest

from engines.graph import device_apply


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
