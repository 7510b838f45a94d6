"""engines.Batch refuses a caller's mistakes with an InvalidArgumentError that names the argument,
the entry and the value as the caller wrote it (algorithm.md §3.2, §8.1), and stays immutable."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.errors import InvalidArgumentError


def message(call) -> str:
    with pytest.raises(InvalidArgumentError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("value, shown", [
    (1e19, "10000000000000000000"),      # beyond int64: the cast would wrap it to -2^63
    (float(2**63), "9223372036854775808"),
    (1e300, str(int(1e300))),
    (3e9, "3000000000"),                  # inside int64, beyond int32
], ids=["1e19", "2^63", "1e300", "3e9"])
def test_integral_float_ids_beyond_the_vertex_type_are_too_large_not_negative(value, shown):
    for name, call in (("insert_src", lambda: engines.Batch([value], [1], [[1]])),
                       ("insert_dst", lambda: engines.Batch([0], [value], [[1]])),
                       ("delete_src", lambda: engines.Batch(delete_src=[0, value], delete_dst=[1, 1]))):
        index = "[1]" if name == "delete_src" else "[0]"
        assert message(call) == (f"{name}{index} = {shown} does not fit the int32 vertex type "
                                 f"(ids < {2**31 - 1})")


@pytest.mark.parametrize("value, shown", [(-1e19, "-10000000000000000000"), (-1.0, "-1")], ids=["-1e19", "-1"])
def test_integral_float_ids_below_zero_name_the_value(value, shown):
    assert message(lambda: engines.Batch([value], [1], [[1]])) == f"insert_src[0] = {shown} is a negative vertex id"


def test_integral_float_ids_in_range_are_accepted():
    b = engines.Batch([0.0, 2.0], [1.0, 3.0], [[1], [2]], [4.0], [0.0])
    assert b.insert_src.tolist() == [0, 2] and b.delete_src.tolist() == [4]
    assert b.insert_src.dtype == np.int64


def test_a_ragged_vertex_deletion_list_is_an_invalid_argument():
    assert message(lambda: engines.Batch(delete_vertices=[[1], [1, 2]])).startswith(
        "delete_vertices must be vertex ids, got a ragged sequence")
    with pytest.raises(engines.errors.NotSupportedError):
        engines.Batch(delete_vertices=[3])
    assert len(engines.Batch(delete_vertices=[])) == 0


@pytest.mark.parametrize("name, value", [
    ("insert_src", np.array([-3])),
    ("insert_dst", np.array([10**6])),
    ("insert_weights", np.array([[0]])),
    ("delete_src", np.array([-1])),
    ("_k", 3),
])
def test_a_batch_refuses_assignment_and_the_graph_stays_as_it_was(name, value):
    """The appliers trust a Batch's checked arrays: a negative id set on a built batch committed a
    graph with negative offsets and uninitialized column ids."""
    g = engines.Graph.from_edges([0, 1, 2], [1, 2, 3], [1, 1, 1])
    r = sssp.compute(g, 0)
    b = engines.Batch([0], [1], [[2]], [1], [2])
    with pytest.raises(AttributeError, match="a Batch is immutable"):
        setattr(b, name, value)
    with pytest.raises(AttributeError, match="a Batch is immutable"):
        delattr(b, name)
    sssp.update(g, b, r)  # the batch as it was built
    assert g.row_ptr.tolist() == [0, 1, 1, 2, 2] and g.col_ind.tolist() == [1, 3]
    assert g.weights.tolist() == [2, 1]
    assert r.to_numpy()[0].tolist() == [0, 2, sssp.INFINITE_DISTANCE, sssp.INFINITE_DISTANCE]


def test_a_batch_copies_and_pickles_as_itself():
    import copy
    import pickle

    for b in (engines.Batch([0, 2], [1, 0], [[1, 2], [3, 4]], [1], [0]), engines.Batch.empty(3),
              engines.Batch([], [], np.zeros((0, 0))), engines.Batch(delete_src=[4], delete_dst=[5])):
        for twin in (copy.copy(b), copy.deepcopy(b), pickle.loads(pickle.dumps(b))):
            assert twin.num_weights == b.num_weights
            for name in ("insert_src", "insert_dst", "insert_weights", "delete_src", "delete_dst"):
                a, c = getattr(b, name), getattr(twin, name)
                assert a.dtype == c.dtype and a.shape == c.shape and a.tobytes() == c.tobytes()
                assert not c.flags.writeable


@pytest.mark.parametrize("k", [-1, "2", 1.0, None, True])
def test_an_empty_batch_needs_a_column_count(k):
    assert message(lambda: engines.Batch.empty(k)) == f"num_weights must be an integer >= 0, got {k!r}"


def test_an_empty_batch_keeps_its_column_count():
    assert engines.Batch.empty().num_weights == 1 and engines.Batch.empty(np.int64(3)).num_weights == 3
