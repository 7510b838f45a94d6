"""engines.arguments.integer_dtype, the one test of "an integer array" for every public entry point
(Graph, Batch, Result.from_arrays): NumPy files timedelta64 under the signed integers, and a
duration array was taken as vertex ids or weights without a word."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import engines
from engines import sssp
from engines.arguments import integer_dtype
from engines.errors import InvalidArgumentError

SECONDS = np.array([0, 1], dtype="m8[s]")


def test_integer_dtype():
    for dtype in (np.int8, np.int32, np.int64, np.uint8, np.uint64):
        assert integer_dtype(np.dtype(dtype))
    for dtype in (np.bool_, np.float64, object, "m8[s]", "M8[D]", "U1", np.complex128):
        assert not integer_dtype(np.dtype(dtype))


@pytest.mark.parametrize("call, name", [
    (lambda: engines.Batch(SECONDS, [1, 2], [[1], [1]]), "insert_src"),
    (lambda: engines.Batch([0, 1], [1, 2], SECONDS + np.timedelta64(1, "s")), "insert_weights"),
    (lambda: engines.Batch(delete_src=[0, 1], delete_dst=SECONDS), "delete_dst"),
    (lambda: engines.Graph.from_edges(SECONDS, [1, 2], [1, 1]), "src"),
    (lambda: engines.Graph.from_edges([0, 1], [1, 2], SECONDS + np.timedelta64(1, "s")), "weights"),
    (lambda: engines.Graph.from_csr(np.array([0, 1, 1], dtype="m8[s]"), [1], [1]), "row_ptr"),
], ids=["batch ids", "batch weights", "batch deletions", "edge ids", "edge weights", "csr offsets"])
def test_durations_are_not_integers(call, name):
    with pytest.raises(InvalidArgumentError, match=f"^{name} must .*integers, got dtype timedelta64"):
        call()


def test_durations_are_not_an_imported_tree():
    g = engines.Graph.from_edges([0], [1], [1])
    d, p = sssp.compute(g, 0).to_numpy()
    with pytest.raises(InvalidArgumentError, match="^distances must hold integers, got dtype timedelta64"):
        sssp.Result.from_arrays(g, 0, d.astype("m8[s]"), p)
    with pytest.raises(InvalidArgumentError, match="^parents must hold integers, got dtype timedelta64"):
        sssp.Result.from_arrays(g, 0, d, p.astype("m8[s]"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_weights_are_range_checked_exactly(dtype):
    """A float32 2^31 compared with WEIGHT_MAX in float32 (where 2^31 - 1 rounds up to 2^31) was
    taken as in range and stored as the int32 weight -2^31."""
    over = np.array([2.0**31], dtype=dtype)
    expected = "weights[0] = 2147483648 is outside the weight range [1, 2147483647]"
    with pytest.raises(InvalidArgumentError, match="^" + re.escape(expected)):
        engines.Graph.from_edges([0], [1], over)
    with pytest.raises(InvalidArgumentError, match="^insert_" + re.escape(expected)):
        engines.Batch([0], [1], over)
    top = np.array([2.0**31 - 128], dtype=dtype)  # float32's largest value below 2^31
    assert engines.Graph.from_edges([0], [1], top).weights.tolist() == [2**31 - 128]


@pytest.mark.parametrize("value, expected", [
    (2.0**31, "weights[0] = 2147483648 is outside the weight range"),
    (2.5, "weights[0] = 2.5 is not an integer"),
], ids=["too large", "fraction"])
def test_long_double_weights_are_shown_as_written(value, expected):
    # shown() printed NumPy's repr, np.longdouble('2147483648.0'): item() keeps a long double
    with pytest.raises(InvalidArgumentError, match="^" + re.escape(expected)):
        engines.Graph.from_edges([0], [1], np.array([value], dtype=np.longdouble))


def test_float16_values_are_checked_without_warnings():
    small = np.array([3], dtype=np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # float16 cannot hold the limits: no overflow in the check
        assert engines.Graph.from_edges([0], [1], small).weights.tolist() == [3]
        assert engines.Batch(small.astype(np.float16), [1], small).insert_weights.tolist() == [[3]]


@pytest.mark.parametrize("call, expected", [
    (lambda: engines.Batch([0, 2**64], [1, 1], [1, 1]), "insert_src[1] = 18446744073709551616"),
    (lambda: engines.Batch(delete_src=[0], delete_dst=[-2**64]), "delete_dst[0] = -18446744073709551616"),
    (lambda: engines.Batch([0], [1], [[1, 2**64]]), "insert_weights[0, 1] = 18446744073709551616"),
    (lambda: engines.Graph.from_edges([0], [2**70], [1]), "dst[0] = 1180591620717411303424"),
    (lambda: engines.Graph.from_edges([0], [1], [2**64]), "weights[0] = 18446744073709551616"),
], ids=["batch id", "batch deletion", "batch weight", "edge id", "edge weight"])
def test_python_integers_beyond_64_bits_are_named(call, expected):
    """NumPy keeps them as an object array, which was refused as "must hold integers, got dtype
    object": the caller's integers, called non-integers."""
    with pytest.raises(InvalidArgumentError, match="^" + re.escape(expected + " is outside the int64 range") + "$"):
        call()


def test_an_imported_distance_beyond_64_bits_is_named():
    g = engines.Graph.from_edges([0], [1], [1])
    with pytest.raises(InvalidArgumentError, match=r"^distances\[1\] = 18446744073709551616 is outside the int64 range$"):
        sssp.Result.from_arrays(g, 0, [0, 2**64], [-1, 0])


def test_object_arrays_of_other_things_keep_their_message():
    with pytest.raises(InvalidArgumentError, match="^insert_src must hold integers, got dtype object$"):
        engines.Batch([0, None], [1, 1], [1, 1])
    with pytest.raises(InvalidArgumentError, match="^insert_src must hold integers, got dtype object$"):
        engines.Batch(np.array([0, 1], dtype=object), [1, 1], [1, 1])


@pytest.mark.parametrize("call, expected", [
    (lambda m: engines.Batch(m, [1, 2], [1, 1]), "insert_src[1]"),
    (lambda m: engines.Batch([0, 1], [1, 2], m + 1), "insert_weights[1]"),
    (lambda m: engines.Graph.from_edges(m, [1, 2], [1, 1]), "src[1]"),
    (lambda m: sssp.Result.from_arrays(engines.Graph.from_edges([0], [1], [1]), 0, m, [-1, 0]), "distances[1]"),
], ids=["batch id", "batch weight", "edge id", "imported distance"])
def test_masked_entries_are_refused_not_read(call, expected):
    """np.asarray drops a mask: the values under it (here 7) were used as if the caller had given them."""
    masked = np.ma.array([0, 7], mask=[False, True])
    with pytest.raises(InvalidArgumentError, match="^" + re.escape(expected) + " is masked"):
        call(masked)


def test_a_masked_array_without_masked_entries_is_read():
    plain = np.ma.array([0, 1], mask=[False, False])
    assert engines.Batch(plain, [1, 2], [1, 1]).insert_src.tolist() == [0, 1]


def _source_message(call) -> str:
    with pytest.raises(InvalidArgumentError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("make", [
    lambda g, s: sssp.compute(g, s),
    lambda g, s: sssp.Result.from_arrays(g, s, [0, 1, 2], [-1, 0, 1], validate=False),
], ids=["compute", "from_arrays"])
def test_a_source_is_one_check_with_plain_messages(make):
    """compute() and Result.from_arrays wrote the check twice: a float or text was called "not a
    vertex of the graph", a NumPy value was shown in NumPy's repr, a 0-D integer array refused."""
    g = engines.Graph.from_edges([0, 1], [1, 2], [1, 1])
    assert make(g, np.array(1)).source == 1  # a 0-D integer array is an integer
    assert make(g, np.int16(0)).source == 0
    assert _source_message(lambda: make(g, 3)) == "source 3 is not a vertex of the graph (n = 3)"
    assert _source_message(lambda: make(g, np.uint64(2**64 - 1))) == (
        "source 18446744073709551615 is not a vertex of the graph (n = 3)")
    assert _source_message(lambda: make(g, 1.0)) == "source must be an integer vertex id, got 1.0 (float)"
    assert _source_message(lambda: make(g, np.float32(1))) == "source must be an integer vertex id, got 1.0 (float32)"
    assert _source_message(lambda: make(g, True)) == "source must be an integer vertex id, got True (bool)"
    assert _source_message(lambda: make(g, "0")) == "source must be an integer vertex id, got '0' (str)"
    assert _source_message(lambda: make(g, [0])) == "source must be an integer vertex id, got [0] (list)"
