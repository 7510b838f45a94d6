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


@pytest.mark.parametrize("keyword", ["canonicalize", "validate"])
@pytest.mark.parametrize("value", ["no", "False", 0, 1, None, np.array([True])])
def test_yes_no_keywords_take_bools_only(keyword, value):
    # truth testing read "no" as yes and an array as NumPy's ambiguous-truth error; validate=None
    # is its documented default (the options' validate_inputs), so only canonicalize refuses it
    g = engines.Graph.from_edges([0, 1], [1, 2], [1, 1])
    d, p = sssp.compute(g, 0).to_numpy()
    if keyword == "validate" and value is None:
        assert sssp.Result.from_arrays(g, 0, d, p, validate=None).to_numpy()[0].tolist() == d.tolist()
        return
    with pytest.raises(InvalidArgumentError) as info:
        sssp.Result.from_arrays(g, 0, d, p, **{keyword: value})
    assert str(info.value) == f"{keyword} must be True or False, got {value!r}"


@pytest.mark.parametrize("value", [True, False, np.True_, np.False_])
def test_yes_no_keywords_take_numpy_bools(value):
    g = engines.Graph.from_edges([0, 1], [1, 2], [1, 1])
    d, p = sssp.compute(g, 0).to_numpy()
    r = sssp.Result.from_arrays(g, 0, d, p, canonicalize=value, validate=value)
    assert r.to_numpy()[0].tolist() == d.tolist()
