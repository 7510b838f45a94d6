"""A batch that would grow the graph beyond the host memory available is refused before anything
changes (engines/graph/growth.py; algorithm.md §3.3 step 2, the OutOfMemoryError row of
algorithm.md §8):
an insertion at an id near 2^31 - 1 used to allocate tens of GB, which with overcommit ended in the
kernel's OOM killer instead of an error."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines.arguments import VERTEX_MAX
from engines.errors import OutOfMemoryError
from engines.graph import growth

from ..host_memory import plenty_checked


def _state(g):
    return (g.version, g.state_id, g.num_vertices, g.num_edges, g.row_ptr.copy(), g.col_ind.copy(),
            g.weights.copy())


def _assert_state(g, state):
    version, state_id, n, m, row_ptr, col_ind, weights = state
    assert (g.version, g.state_id, g.num_vertices, g.num_edges) == (version, state_id, n, m)
    np.testing.assert_array_equal(g.row_ptr, row_ptr)
    np.testing.assert_array_equal(g.col_ind, col_ind)
    np.testing.assert_array_equal(g.weights, weights)


def _refuse(*args):
    raise AssertionError("the available memory was asked for")


def test_apply_at_the_largest_id_raises_and_changes_nothing(monkeypatch):
    monkeypatch.setattr(growth, "available_host_bytes", lambda: 1_000_000_000)
    g = engines.Graph.from_edges([0, 1], [1, 2], [4, 5])
    before = _state(g)
    top = VERTEX_MAX - 1
    with pytest.raises(OutOfMemoryError) as info:
        g.apply(engines.Batch([0], [top], [1]))
    text = str(info.value)
    assert f"vertex id {top}" in text
    assert f"from 3 to {VERTEX_MAX} vertices" in text
    # int32 offsets of both CSRs: 8 bytes a vertex, 2^31 of them
    assert "17.2 GB of host memory (8 bytes per vertex)" in text
    assert "only 1.0 GB is available" in text
    assert "Nothing was changed" in text
    assert isinstance(info.value, MemoryError)
    _assert_state(g, before)
    summary, _ = g.apply(engines.Batch([2], [3], [7]))  # the graph still works
    assert summary.num_vertices_after == 4


def test_forced_int64_offsets_count_sixteen_bytes(monkeypatch):
    monkeypatch.setattr(growth, "available_host_bytes", lambda: 10)
    g = engines.Graph.from_edges([0], [1], [4], offset_dtype=np.int64)
    with pytest.raises(OutOfMemoryError, match=r"\(16 bytes per vertex\); only 10 B is available"):
        g.apply(engines.Batch([0], [VERTEX_MAX - 1], [1]))
    assert g.num_vertices == 2 and g.version == 0


def test_a_growth_that_fits_is_checked_and_proceeds(monkeypatch):
    calls = plenty_checked(monkeypatch)
    g = engines.Graph.from_edges([0, 1], [1, 2], [4, 5])
    summary, _ = g.apply(engines.Batch([2, 9], [9, 0], [3, 1]))
    assert calls == [1]
    assert (summary.num_vertices_after, summary.inserted_vertices, g.version) == (10, 7, 1)
    assert g.row_ptr.tolist() == [0, 1, 2, 3, 3, 3, 3, 3, 3, 3, 4]


def test_small_growth_and_no_growth_never_ask(monkeypatch):
    monkeypatch.setattr(growth, "available_host_bytes", _refuse)
    g = engines.Graph.from_edges([0, 1], [1, 2], [4, 5])
    g.apply(engines.Batch([1], [2], [9]))  # an upsert
    g.apply(engines.Batch([], [], None, [0], [1]))  # a deletion
    g.apply(engines.Batch.empty())
    g.apply(engines.Batch([2], [1000], [1]))  # growth under the floor
    assert (g.num_vertices, g.version) == (1001, 4)


def test_without_psutil_the_check_is_skipped(monkeypatch):
    monkeypatch.setattr(growth, "available_host_bytes", lambda: None)
    growth.check_host_growth(1, VERTEX_MAX, 64, "nothing")  # no error: nothing to compare with


def test_the_real_available_memory_is_a_positive_count():
    value = growth.available_host_bytes()
    assert value is None or (isinstance(value, int) and value > 0)


@pytest.mark.parametrize("count, text", [(0, "0 B"), (999, "999 B"), (1000, "1.0 kB"), (34_400_000_000, "34.4 GB"),
                                         (999_960_000, "1.0 GB"), (3 * 10**15, "3.0 PB")])
def test_human_bytes(count, text):
    assert growth.human_bytes(count) == text
