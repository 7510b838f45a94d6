"""batch_events' small-batch path (no GPU needed): the event list it builds is the one of the
straightforward construction it replaced (the deletion mask always built, concatenate then cast, the
dataclass constructor), array for array, dtype, flags and counters, for random batches with and
without deletions that fall out of range, and with empty insertion or deletion lists; a bad batch
raises the same error."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.arguments import VERTEX_MAX
from engines.batch import Batch, BatchEvents, batch_events
from engines.errors import InvalidArgumentError


def reference_events(batch: Batch, num_vertices: int, num_weights: int) -> BatchEvents:
    """The construction before the fast path (validation as validate_for_graph did it)."""
    if not isinstance(batch, Batch):
        raise InvalidArgumentError(f"expected an engines.Batch, got {type(batch).__name__}")
    n_after = int(num_vertices)
    if batch.num_insertions:
        if batch.num_weights != num_weights:
            raise InvalidArgumentError(
                f"the batch carries {batch.num_weights} weight columns but the graph has {num_weights}")
        top = int(max(batch.insert_src.max(), batch.insert_dst.max()))
        if top + 1 > VERTEX_MAX:
            raise InvalidArgumentError(f"insertion id {top} makes the vertex count overflow int32")
        n_after = max(int(num_vertices), top + 1)
    dsrc, ddst = batch.delete_src, batch.delete_dst
    in_range = (dsrc < n_after) & (ddst < n_after)
    kept = int(np.count_nonzero(in_range))
    if kept != dsrc.shape[0]:
        dsrc, ddst = dsrc[in_range], ddst[in_range]
    src = np.concatenate([dsrc, batch.insert_src]).astype(np.int32)
    dst = np.concatenate([ddst, batch.insert_dst]).astype(np.int32)
    if batch.num_insertions:
        weights = np.ascontiguousarray(batch.insert_weights, dtype=np.int32)
    else:
        weights = np.zeros((0, int(num_weights)), dtype=np.int32)
    for arr in (src, dst, weights):
        arr.setflags(write=False)
    return BatchEvents(src=src, dst=dst, weights=weights, num_deletions=kept,
                       num_insertions=batch.num_insertions, out_of_range=batch.num_deletions - kept,
                       n_old=int(num_vertices), n_after=int(n_after))


def assert_same_events(got: BatchEvents, want: BatchEvents) -> None:
    assert type(got) is BatchEvents
    assert vars(got).keys() == vars(want).keys()  # same fields, same order
    for f in dataclasses.fields(BatchEvents):
        a, b = getattr(got, f.name), getattr(want, f.name)
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides, f.name
            np.testing.assert_array_equal(a, b, err_msg=f.name)
            assert not a.flags.writeable and a.flags.c_contiguous == b.flags.c_contiguous, f.name
            assert a.flags.owndata == b.flags.owndata, f.name
        else:
            assert type(a) is type(b) and a == b, f.name
    assert got.size == want.size
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.n_after = 3
    assert got is not want and got != want and got == got  # eq=False: identity, as the dataclass compares


@st.composite
def batches(draw):
    k = draw(st.integers(1, 3))
    n = draw(st.integers(0, 40))
    top = draw(st.integers(1, 60))  # ids up to here: deletions may fall beyond the grown graph
    ids = st.integers(0, top)
    ni = draw(st.integers(0, 12))
    nd = draw(st.integers(0, 12))
    isrc = draw(st.lists(ids, min_size=ni, max_size=ni))
    idst = draw(st.lists(ids, min_size=ni, max_size=ni))
    dsrc = draw(st.lists(ids, min_size=nd, max_size=nd))
    ddst = draw(st.lists(ids, min_size=nd, max_size=nd))
    w = draw(st.lists(st.lists(st.integers(1, 2**31 - 1), min_size=k, max_size=k), min_size=ni, max_size=ni))
    weights = np.array(w, dtype=np.int64).reshape(ni, k)
    if ni and k == 1 and draw(st.booleans()):
        weights = weights[:, 0]  # 1-D weights for K = 1
    if draw(st.booleans()):  # a view in Fortran order: ascontiguousarray must still copy it C-ordered
        weights = np.asfortranarray(weights)
    graph_k = k if ni or draw(st.booleans()) else draw(st.integers(1, 3))
    return Batch(isrc, idst, weights, dsrc, ddst), n, graph_k


@settings(max_examples=400, deadline=None)
@given(batches())
def test_batch_events_matches_the_reference(case):
    batch, n, k = case
    assert_same_events(batch_events(batch, n, k), reference_events(batch, n, k))


def test_out_of_range_deletions_and_empty_lists():
    b = Batch([0, 5], [1, 2], [[3], [4]], [9, 1, 2, 6, 0], [0, 9, 2, 0, 0])
    for n in (0, 3, 6, 7, 9, 10, 12):
        assert_same_events(batch_events(b, n, 1), reference_events(b, n, 1))
    for b in (Batch.empty(2), Batch([], [], None, [4, 0], [0, 7]), Batch([1], [2], [[5, 6]]),
              Batch([], [], np.zeros((0, 3), np.int64), [1], [1])):
        for n in (0, 2, 5, 8):
            assert_same_events(batch_events(b, n, 2), reference_events(b, n, 2))
    assert batch_events(Batch([], [], None, [4, 0], [0, 7]), 5, 1).out_of_range == 1


def test_bad_batches_raise_the_same_errors():
    for args in ((object(), 3, 1), (Batch([0], [1], [[1, 2]]), 3, 1)):
        with pytest.raises(InvalidArgumentError) as got:
            batch_events(*args)
        with pytest.raises(InvalidArgumentError) as want:
            reference_events(*args)
        assert str(got.value) == str(want.value)
