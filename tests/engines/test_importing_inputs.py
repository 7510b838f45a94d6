"""Result.from_arrays refuses a caller's malformed arrays with an InvalidArgumentError naming the
argument (algorithm.md §8.1, §8.4), never NumPy's own exception."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.errors import InvalidArgumentError


@pytest.mark.parametrize("which", ["distances", "parents"])
def test_ragged_arrays_are_invalid_arguments_naming_the_argument(which):
    g = engines.Graph.from_edges([0, 1], [1, 2], [1, 1])
    d, p = sssp.compute(g, 0).to_numpy()
    arrays = {"distances": d, "parents": p}
    arrays[which] = [[0], [1, 2], 3]
    with pytest.raises(InvalidArgumentError) as info:
        sssp.Result.from_arrays(g, 0, arrays["distances"], arrays["parents"])
    assert str(info.value).startswith(f"{which} must be a flat sequence of integers, got a ragged sequence")
