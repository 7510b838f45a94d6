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
