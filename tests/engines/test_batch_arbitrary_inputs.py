"""Whatever a caller passes as one of a Batch's arrays, update() either refuses it with an engines
error, leaving the graph and the result byte-identical, or updates the result to compute()'s
distances on the new graph (docs/algorithm.md §3.3 step 1, algorithm.md §8.2): never another exception, a warning,
a partial commit or a wrong tree."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import engines
from engines import sssp
from engines.errors import Error

from .. import harness as H

DTYPES = (np.int8, np.int32, np.int64, np.uint8, np.uint64, np.float16, np.float32, np.float64, np.longdouble,
          bool, object, complex, "U3", "m8[s]")
VALUES = st.one_of(st.integers(-2**65, 2**65), st.integers(0, 6), st.floats(), st.booleans(), st.none(),
                   st.text(max_size=2))
FORMS = ("list", "scalar", "1-D", "2-D", "0-D", "masked")


def _array(dtype, values: list, form: str):
    """``values`` as the caller might pass them: a list, a scalar, or an array of ``dtype`` in a shape."""
    if form == "list":
        return values
    if form == "scalar":
        return values[0] if values else 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the strategy's own casts (a float into int8)
            arr = np.array(values, dtype=dtype)
    except (ValueError, TypeError, OverflowError):
        arr = np.array(values, dtype=object)
    if form == "2-D":
        return arr.reshape(-1, 1)
    if form == "0-D":
        return arr[0] if arr.size else np.array(0)
    if form == "masked":
        return np.ma.array(arr, mask=[i % 2 == 1 for i in range(arr.size)])
    return arr


ARRAYS = st.builds(_array, st.sampled_from(DTYPES), st.lists(VALUES, max_size=5), st.sampled_from(FORMS))


def _state(graph, result) -> tuple:
    return (graph.version, graph.state_id, graph.row_ptr.tobytes(), graph.col_ind.tobytes(),
            graph.weights.tobytes(), result.poisoned, [a.tobytes() for a in result.to_numpy()])


@settings(max_examples=H.examples(300), deadline=None)
@given(value=ARRAYS, position=st.integers(0, 4), ids=st.lists(st.integers(0, 5), min_size=2, max_size=2))
def test_any_batch_array_is_refused_unchanged_or_updates_exactly(value, position, ids):
    graph = engines.Graph.from_edges([0, 1, 2, 0], [1, 2, 3, 3], [3, 4, 5, 20])
    result = sssp.compute(graph, 0)
    before = _state(graph, result)
    arguments = [[ids[0]], [ids[1]], [[2]], [1], [2]]  # one insertion, one deletion
    arguments[position] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning is no answer either
        try:
            sssp.update(graph, engines.Batch(*arguments), result)
        except Error:
            assert _state(graph, result) == before
            return
    assert np.array_equal(result.distances, sssp.compute(graph, 0).distances)
