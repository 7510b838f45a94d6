"""workspace.Workspace.reserve without a GPU: the steady state (every part made, room for the
batch) returns before any CUDA call; any growth or any part still missing goes on to the device,
and a reserve there leaves every part in place. CuPy is the tests' stand-in (fake_cupy.py), or a
sentinel that fails the test if touched."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest

from engines.sssp.cuda import workspace

from .fake_cupy import FakeCupy


class _Touched(Exception):
    pass


def _no_cuda():
    raise _Touched("the reserve went to the device")


@pytest.fixture
def reserved(monkeypatch):
    """A workspace that one reserve of 100 vertices and 10 changes completed on the stand-in."""
    monkeypatch.setattr(workspace, "cupy_module", FakeCupy)
    monkeypatch.setattr(workspace, "_pinned_array", lambda nbytes, dtype, count: (np.zeros(count, dtype), 0))
    ws = workspace.Workspace(0)
    ws._zero_scratch = lambda stream: None  # NumPy buffers have no memset_async
    ws.reserve(100, 10, nullcontext())
    monkeypatch.setattr(workspace, "cupy_module", _no_cuda)
    return ws


def _assert_complete(ws, vertices, changes):
    assert ws.vertex_capacity >= vertices and ws.change_capacity >= changes
    assert ws.changes_device.size == 3 * ws.change_capacity and ws.change_count is not None
    assert [v.size for v in ws.change_views()[:3]] == [ws.change_capacity] * 3
    assert ws.near_log is not None and sorted(ws._controls) == sorted(workspace.CONTROL_LAYOUTS)


def test_a_reserve_with_room_touches_nothing(reserved):
    caps = (reserved.vertex_capacity, reserved.change_capacity)
    reserved.reserve(100, 10, stream=None)
    reserved.reserve(0, 0, stream=None)
    assert (reserved.vertex_capacity, reserved.change_capacity) == caps
    _assert_complete(reserved, 100, 10)


@pytest.mark.parametrize("vertices, changes", [(101, 10), (100, 11)])
def test_a_reserve_that_must_grow_goes_to_the_device(reserved, monkeypatch, vertices, changes):
    with pytest.raises(_Touched):
        reserved.reserve(vertices, changes, stream=None)
    monkeypatch.setattr(workspace, "cupy_module", FakeCupy)
    reserved.reserve(vertices, changes, nullcontext())
    _assert_complete(reserved, vertices, changes)


@pytest.mark.parametrize("missing", ["changes_device", "_change_views", "near_log", "control"])
def test_a_missing_part_goes_to_the_device_and_is_made_there(reserved, monkeypatch, missing):
    """A part that a reserve failing half-way (an out-of-memory error) leaves unmade: the next
    reserve makes it, whatever the batch's size."""
    if missing == "control":
        reserved._controls.pop(sorted(workspace.CONTROL_LAYOUTS)[0])
    elif missing == "changes_device":  # the buffer goes with its views (reserve drops both)
        reserved.changes_device = reserved._change_views = None
    else:
        setattr(reserved, missing, None)
    with pytest.raises(_Touched):
        reserved.reserve(1, 1, stream=None)
    monkeypatch.setattr(workspace, "cupy_module", FakeCupy)
    reserved.reserve(1, 1, nullcontext())
    _assert_complete(reserved, 100, 10)
    monkeypatch.setattr(workspace, "cupy_module", _no_cuda)
    reserved.reserve(100, 10, stream=None)  # complete again: the steady state
