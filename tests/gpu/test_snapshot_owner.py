"""The device side of tests/engines/graph/test_snapshot_owner.py: a device-resident graph refuses
a snapshot of another graph (a device snapshot or a host one) and keeps its state and buffers."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines.errors import InvalidArgumentError

from . import ops_support as S
from .test_device_graph import assert_unchanged, capture

pytestmark = S.GPU


def test_a_device_graph_refuses_a_snapshot_of_another_graph():
    g = engines.Graph.from_edges([0, 1], [1, 2], [[4, 1], [5, 2]])
    other = engines.Graph.from_edges([0, 0, 1, 3], [1, 2, 2, 0], [[1, 1], [2, 2], [3, 3], [4, 4]])
    host_foreign = other.snapshot()
    other.to_device()
    device_foreign = other.snapshot()
    g.to_device()
    g.apply(engines.Batch([2], [0], [[1, 1]], [], []))
    before = capture(g)
    for foreign in (host_foreign, device_foreign, g.copy().snapshot()):
        with pytest.raises(InvalidArgumentError, match="belongs to another graph"):
            g.restore(foreign)
        assert_unchanged(g, before, "refused restore")


def test_a_device_snapshot_of_the_same_graph_still_restores_after_updates():
    g = engines.Graph.from_edges([0, 1], [1, 2], [4, 5])
    g.to_device()
    snap = g.snapshot()
    row_ptr, col_ind = np.array(g.row_ptr), np.array(g.col_ind)
    g.apply(engines.Batch([2], [0], [1], [], []))
    g.restore(snap)
    assert (g.version, g.state_id) == (snap.version, snap.state_id)
    np.testing.assert_array_equal(g.row_ptr, row_ptr)
    np.testing.assert_array_equal(g.col_ind, col_ind)


def test_a_shallow_copy_of_a_device_graph_has_its_own_device_state():
    """copy.copy(graph) is Graph.copy(): its own device buffers, so a batch applied to the copy
    leaves the original's device state (and a CUDA result on it) as they were."""
    import copy

    from engines import sssp

    g = engines.Graph.from_edges([0, 1, 2, 0], [1, 2, 3, 3], [4, 5, 6, 20])
    result = sssp.compute(g, 0, backend="cuda")
    twin = copy.copy(g)
    assert twin._device is not None and twin._device is not g._device
    before = capture(g)
    twin.apply(engines.Batch([0], [3], [1], [1], [2]))
    assert_unchanged(g, before, "the original after a batch on its shallow copy")
    batch = engines.Batch([], [], [], [0], [3])
    sssp.update(g, batch, result)
    host = sssp.compute(g, 0, backend="host")
    assert [a.tobytes() for a in result.to_numpy()] == [a.tobytes() for a in host.to_numpy()]
