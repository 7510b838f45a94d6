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


def _growth_allocations() -> int:
    """The stand-in's allocations in a reserve that grows both capacities of ``reserved``."""
    cupy = FakeCupy()
    workspace_cupy, pinned = workspace.cupy_module, workspace._pinned_array
    try:
        workspace.cupy_module = lambda: cupy
        workspace._pinned_array = lambda nbytes, dtype, count: (np.zeros(count, dtype), 0)
        ws = workspace.Workspace(0)
        ws._zero_scratch = lambda stream: None
        ws.reserve(100, 10, nullcontext())
        before = cupy.allocations
        ws.reserve(1000, 100, nullcontext())
        return cupy.allocations - before
    finally:
        workspace.cupy_module, workspace._pinned_array = workspace_cupy, pinned


@pytest.mark.parametrize("fail_at", range(1, _growth_allocations() + 1))
def test_a_reserve_failing_half_way_leaves_no_layout_and_the_next_one_completes(reserved, monkeypatch, fail_at):
    """A reserve whose n-th allocation fails (an out-of-memory error the caller survives) leaves
    layout 0, which fits nothing: the next reserve, whatever the batch's size, goes to the device
    and makes every part, under a new layout; then the steady state again."""
    layout = reserved.layout
    failing = FakeCupy(fail_at=fail_at)  # one stand-in: the reserve asks for CuPy more than once
    monkeypatch.setattr(workspace, "cupy_module", lambda: failing)
    with pytest.raises(MemoryError):
        reserved.reserve(1000, 100, nullcontext())
    assert reserved.layout == 0 and not reserved.fits(1, 1)
    monkeypatch.setattr(workspace, "cupy_module", _no_cuda)
    with pytest.raises(_Touched):
        reserved.reserve(1, 1, stream=None)
    monkeypatch.setattr(workspace, "cupy_module", FakeCupy)
    reserved.reserve(1, 1, nullcontext())
    _assert_complete(reserved, 1, 1)
    assert reserved.layout not in (0, layout) and reserved.fits(1, 1)
    monkeypatch.setattr(workspace, "cupy_module", _no_cuda)
    reserved.reserve(1, 1, stream=None)  # complete again: the steady state


def test_the_layout_changes_with_every_growth_and_only_then(reserved, monkeypatch):
    """Workspace.layout stands for the buffers' addresses (fused.py's launch memo keys on it): the
    same while reserves find room, a new number (never one used before, by this workspace or
    another) after each growth."""
    monkeypatch.setattr(workspace, "cupy_module", FakeCupy)
    seen = [reserved.layout]
    for vertices, changes in ((100, 10), (50, 5), (101, 10), (101, 10), (101, 200), (3000, 1)):
        grows = not reserved.fits(vertices, changes)
        reserved.reserve(vertices, changes, nullcontext())
        assert (reserved.layout != seen[-1]) == grows
        if grows:
            assert reserved.layout not in seen
            seen.append(reserved.layout)
    other = workspace.Workspace(0)
    other._zero_scratch = lambda stream: None
    assert other.layout == 0 and not other.fits(0, 0)
    other.reserve(100, 10, nullcontext())
    assert other.layout not in seen and other.layout != 0
