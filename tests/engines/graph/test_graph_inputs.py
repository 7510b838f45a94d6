"""Graph.from_edges / from_csr messages name the argument, the entry and the value the caller
passed, in the caller's shape; allocation failures are OutOfMemoryError (issue 15, item 7)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import engines
from engines import Graph
from engines.errors import InvalidArgumentError, OutOfMemoryError


def message(call) -> str:
    with pytest.raises(InvalidArgumentError) as info:
        call()
    text = str(info.value)
    assert "np.int64" not in text and "np.float64" not in text, text
    return text


@pytest.mark.parametrize("value, shown, kind", [
    (np.inf, "inf", "a finite integer"),
    (-np.inf, "-inf", "a finite integer"),
    (np.nan, "nan", "a finite integer"),
    (2.5, "2.5", "an integer"),
])
def test_non_integer_float_weights_show_the_value(value, shown, kind):
    text = message(lambda: Graph.from_edges([0], [1], [[value]]))
    assert text == f"weights[0, 0] = {shown} is not {kind}"


def test_weights_out_of_range_show_the_value_and_the_index_in_the_callers_shape():
    assert message(lambda: Graph.from_edges([0, 1], [1, 0], [[1, 7], [3, 0]])) == \
        "weights[1, 1] = 0 is outside the weight range [1, 2147483647]"
    assert message(lambda: Graph.from_edges([0, 1], [1, 0], [5, 2**31])) == \
        "weights[1] = 2147483648 is outside the weight range [1, 2147483647]"
    assert message(lambda: Graph.from_edges([0], [1], [[1e30]])) == \
        "weights[0, 0] = 1e+30 is outside the weight range [1, 2147483647]"
    assert message(lambda: Graph.from_csr([0, 1, 2], [1, 0], np.array([[4.0], [-3.0]]))) == \
        "weights[1, 0] = -3 is outside the weight range [1, 2147483647]"


def test_integral_float_weights_are_accepted():
    g = Graph.from_edges([0, 1], [1, 0], np.array([[3.0], [4.0]]))
    assert g.weight_column(0).tolist() == [3, 4]


def test_huge_unsigned_ids_are_too_large_not_negative():
    text = message(lambda: Graph.from_edges(np.array([2**63 + 5], dtype=np.uint64), [1], [[1]]))
    assert text.startswith("src[0] = 9223372036854775813 is too large for a vertex id")
    assert "negative" not in text
    text = message(lambda: Graph.from_csr(np.array([0, 2**64 - 1], dtype=np.uint64), [1], [[1]]))
    assert "row_ptr[1] = 18446744073709551615 is too large for an offset" in text
    assert "dst[1] = 4294967296 does not fit the int32 vertex type" in message(
        lambda: Graph.from_edges([0, 1], np.array([1, 2**32], dtype=np.uint64), [[1], [1]]))


@pytest.mark.parametrize("n, fragment", [
    (-5, "num_vertices = -5 is negative"),
    (2.5, "num_vertices must be an integer, got 2.5 (float)"),
    (True, "num_vertices must be an integer, got True (bool)"),
    ("4", "num_vertices must be an integer, got '4' (str)"),
])
def test_num_vertices_is_checked_for_what_it_is(n, fragment):
    for edges in (([0, 1], [1, 0], [[1], [1]]), ([], [], np.zeros((0, 1)))):
        assert fragment in message(lambda: Graph.from_edges(*edges, num_vertices=n))


def test_num_vertices_accepts_numpy_integers():
    assert Graph.from_edges([0], [1], [[1]], num_vertices=np.int64(5)).num_vertices == 5


def test_ragged_inputs_are_invalid_arguments_naming_the_argument():
    text = message(lambda: Graph.from_edges([0, 1], [1, 0], [[1, 2], [3]]))
    assert text.startswith("weights must be an (m, K) or (m,) array of integers, got a ragged sequence")
    assert "entry 0 has 2 values, entry 1 has 1 value" in text
    text = message(lambda: Graph.from_edges([0, [1]], [1, 0], [[1], [3]]))
    assert text.startswith("src must be a flat sequence of integers")
    assert "ragged" in message(lambda: Graph.from_csr([0, 1, [2, 3]], [1, 0], [1, 1]))


def test_a_failed_host_allocation_is_out_of_memory(monkeypatch):
    """NumPy's MemoryError inside a constructor becomes the engines' OutOfMemoryError (D5)."""
    import engines.graph.graph as graph_module

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 16.0 GiB for an array")

    monkeypatch.setattr(graph_module, "scalars_of", no_memory)
    for build in (lambda: Graph.from_edges([0], [1], [[1]]), lambda: Graph.from_csr([0, 1, 1], [1], [[1]])):
        with pytest.raises(OutOfMemoryError, match=re.escape("not enough host memory to build the graph")) as info:
            build()
        assert isinstance(info.value, engines.errors.Error) and isinstance(info.value, MemoryError)


# -- Batch: the same rules and messages for insert_weights and ids (engines/arguments.py) --------


def test_batch_weight_messages_show_python_values_in_the_callers_shape():
    assert message(lambda: engines.Batch([0, 1], [1, 0], [[1, 7], [3, 0]])) == \
        "insert_weights[1, 1] = 0 is outside the weight range [1, 2147483647]"
    assert message(lambda: engines.Batch([0, 1], [1, 0], [5, 2**31])) == \
        "insert_weights[1] = 2147483648 is outside the weight range [1, 2147483647]"
    assert message(lambda: engines.Batch([0], [1], [[np.inf]])) == "insert_weights[0, 0] = inf is not a finite integer"
    assert message(lambda: engines.Batch([0], [1], [[1.5]])) == "insert_weights[0, 0] = 1.5 is not an integer"
    assert message(lambda: engines.Batch([0, 1], [1, 0], [[1]])) == \
        "insert_weights has 1 rows but the batch has 2 insertions"


def test_batch_ragged_arguments_are_invalid_arguments_naming_the_argument():
    text = message(lambda: engines.Batch([0, 1], [1, 0], [[1, 2], [3]]))
    assert text.startswith("insert_weights must be a (num_insertions, K) or (num_insertions,) array of integers, "
                           "got a ragged sequence")
    assert "entry 0 has 2 values, entry 1 has 1 value" in text
    assert message(lambda: engines.Batch([0, [1]], [1, 0], [[1], [1]])).startswith(
        "insert_src must be a flat sequence of integers")
    assert "ragged" in message(lambda: engines.Batch(delete_src=[0, [1, 2]], delete_dst=[1, 0]))


def test_batch_weights_keep_their_column_count():
    assert engines.Batch([0], [1], [4]).insert_weights.shape == (1, 1)
    assert engines.Batch([0], [1], [[4, 5, 6]]).num_weights == 3
    assert engines.Batch.empty(3).insert_weights.shape == (0, 3)
    assert engines.Batch([], [], np.zeros((0, 0))).insert_weights.shape == (0, 0)
    assert engines.Batch(delete_src=[0], delete_dst=[1]).insert_weights.shape == (0, 0)


def test_a_failed_host_allocation_in_an_apply_is_out_of_memory_and_changes_nothing(monkeypatch):
    import engines.graph.graph as graph_module

    g = Graph.from_edges([0, 1], [1, 2], [[1], [2]])
    before = (np.array(g.row_ptr), np.array(g.col_ind), np.array(g.weights), g.version)

    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 8.0 GiB for an array")

    monkeypatch.setattr(graph_module, "apply_host", no_memory)
    with pytest.raises(OutOfMemoryError, match="not enough host memory to apply a batch of 1 changes"):
        g.apply(engines.Batch([2], [0], [[3]]))
    assert (np.array(g.row_ptr).tolist(), np.array(g.col_ind).tolist(), np.array(g.weights).tolist(),
            g.version) == tuple(x.tolist() if hasattr(x, "tolist") else x for x in before)


@pytest.mark.parametrize("value", ["bogus", object(), "int16", np.float64])
def test_offset_dtype_must_be_int32_or_int64(value):
    for build in (lambda: Graph.from_edges([0], [1], [1], offset_dtype=value),
                  lambda: Graph.from_csr([0, 1, 1], [1], [1], offset_dtype=value)):
        assert message(build).startswith("offset_dtype must be int32 or int64, got ")
    assert Graph.from_edges([0], [1], [1], offset_dtype="int64").offset_dtype == np.int64


@pytest.mark.parametrize("value", ["no", "False", 0, 1, None, np.array([False])])
def test_symmetrize_takes_bools_only(value):
    # truth testing symmetrized the graph for symmetrize="no"
    text = message(lambda: Graph.from_edges([0], [1], [3], symmetrize=value))
    assert text == f"symmetrize must be True or False, got {value!r}"


def test_symmetrize_takes_numpy_bools():
    assert Graph.from_edges([0], [1], [3], symmetrize=np.True_).num_edges == 2
    assert Graph.from_edges([0], [1], [3], symmetrize=np.False_).num_edges == 1
