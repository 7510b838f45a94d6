"""engines.sssp.options.check_options and backends.resolve_backend: every text option and the
backend are one of their names, and nothing else (algorithm.md §11: invalid values raise
InvalidArgumentError when used)."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.errors import InvalidArgumentError


@pytest.mark.parametrize("name, good", [("cuda_engine", "fused"), ("push_expansion", "group"),
                                        ("operators_loop", "host"), ("update_launch", "python")])
@pytest.mark.parametrize("wrap", [lambda v: np.array([v]), lambda v: np.array([v, v]), lambda v: [v], lambda v: (v,)],
                         ids=["array of one", "array of two", "list", "tuple"])
def test_a_text_option_in_a_container_is_refused_and_changes_nothing(name, good, wrap):
    g = engines.Graph.from_edges([0, 1], [1, 2], [1, 1])
    with pytest.raises(InvalidArgumentError, match=f"^options.{name} must be one of "):
        sssp.compute(g, 0, **{name: wrap(good)})
    r = sssp.compute(g, 0)
    before = r.options
    with pytest.raises(InvalidArgumentError, match=f"^options.{name} must be one of "):
        r.set_options(**{name: wrap(good)})
    assert r.options == before
    r.set_options(**{name: np.str_(good)})  # a NumPy string is a str
    assert getattr(r.options, name) == good


@pytest.mark.parametrize("backend", [np.array(["host"]), np.array(["host", "cuda"]), ["host"]],
                         ids=["array of one", "array of two", "list"])
def test_a_backend_in_a_container_is_refused(backend):
    g = engines.Graph.from_edges([0, 1], [1, 2], [1, 1])
    d, p = sssp.compute(g, 0).to_numpy()
    for call in (lambda: sssp.compute(g, 0, backend=backend),
                 lambda: sssp.Result.from_arrays(g, 0, d, p, backend=backend)):
        with pytest.raises(InvalidArgumentError, match="^backend must be one of host, cuda, auto, got "):
            call()
