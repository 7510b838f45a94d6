"""``Graph.restore`` takes only snapshots of the same graph object: a snapshot of another graph
(even one with the same number of weight columns, or a copy) is refused and changes nothing."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import engines
from engines.errors import InvalidArgumentError


def _state(g):
    return (g.version, g.state_id, g.num_vertices, g.row_ptr.copy(), g.col_ind.copy(), g.weights.copy())


def _assert_state(g, state):
    version, state_id, n, row_ptr, col_ind, weights = state
    assert (g.version, g.state_id, g.num_vertices) == (version, state_id, n)
    np.testing.assert_array_equal(g.row_ptr, row_ptr)
    np.testing.assert_array_equal(g.col_ind, col_ind)
    np.testing.assert_array_equal(g.weights, weights)


def test_a_snapshot_of_another_graph_is_refused_and_changes_nothing():
    g = engines.Graph.from_edges([0, 1], [1, 2], [[4, 1], [5, 2]])
    other = engines.Graph.from_edges([0, 0, 1, 3], [1, 2, 2, 0], [[1, 1], [2, 2], [3, 3], [4, 4]])
    foreign = other.snapshot()
    g.apply(engines.Batch([2], [0], [[1, 1]], [], []))
    before = _state(g)
    with pytest.raises(InvalidArgumentError, match="belongs to another graph"):
        g.restore(foreign)
    _assert_state(g, before)


def test_a_snapshot_of_the_same_graph_still_restores_after_updates():
    g = engines.Graph.from_edges([0, 1], [1, 2], [4, 5])
    snap = g.snapshot()
    before = _state(g)
    g.apply(engines.Batch([2], [0], [1], [], []))
    g.apply(engines.Batch([], [], None, [0], [1]))
    g.restore(snap)
    _assert_state(g, before)
    g.restore(snap)  # again, at the snapshot's own state
    _assert_state(g, before)


@pytest.mark.parametrize("duplicate", [engines.Graph.copy, lambda g: pickle.loads(pickle.dumps(g)),
                                       copy.deepcopy, copy.copy], ids=["copy", "pickle", "deepcopy", "copy.copy"])
def test_a_duplicate_refuses_the_originals_snapshots_and_the_original_its(duplicate):
    # a duplicate (Graph.copy(), copy.deepcopy, pickle, copy.copy) is another graph: before, a deep
    # copy or a pickle kept the original's id and took its snapshots (and the original took the
    # duplicate's), and a shallow copy shared the owner, the spares and the device graph
    g = engines.Graph.from_edges([0, 1], [1, 2], [4, 5])
    snap = g.snapshot()
    twin = duplicate(g)
    twin.apply(engines.Batch([2], [0], [1], [], []))
    before = _state(twin)
    with pytest.raises(InvalidArgumentError, match="belongs to another graph"):
        twin.restore(snap)
    _assert_state(twin, before)
    with pytest.raises(InvalidArgumentError, match="belongs to another graph"):
        g.restore(twin.snapshot())


@pytest.mark.parametrize("duplicate", [lambda x: pickle.loads(pickle.dumps(x)), copy.deepcopy],
                         ids=["pickle", "deepcopy"])
def test_a_graph_duplicated_with_its_snapshot_still_restores_it(duplicate):
    g = engines.Graph.from_edges([0, 1], [1, 2], [4, 5])
    snap = g.snapshot()
    g.apply(engines.Batch([2], [0], [1], [], []))
    twin, twin_snap = duplicate((g, snap))
    twin.restore(twin_snap)
    assert (twin.num_edges, twin.version) == (2, 0)
    with pytest.raises(InvalidArgumentError, match="belongs to another graph"):
        g.restore(twin_snap)


def test_a_shallow_copy_is_an_independent_graph():
    """copy.copy(graph) is Graph.copy(): a batch applied to either leaves the other as it was."""
    g = engines.Graph.from_edges([0, 1, 2], [1, 2, 0], [4, 5, 6])
    twin = copy.copy(g)
    assert type(twin) is engines.Graph and twin is not g
    before = _state(g)
    _assert_state(twin, before)
    twin.apply(engines.Batch([2], [1], [9], [0], [1]))
    _assert_state(g, before)
    assert (twin.num_edges, twin.version) == (3, before[0] + 1)
    g.apply(engines.Batch([], [], [], [1], [2]))
    assert (g.num_edges, twin.num_edges) == (2, 3)
