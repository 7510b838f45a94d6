"""Result.clone(backend=...) takes the backends compute() takes (algorithm.md §11): "auto" is the
host where CUDA is not usable, and anything but "host", "cuda", "auto" or None is refused."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.errors import InvalidArgumentError
from engines.sssp.backends import cuda_available


def tree():
    g = engines.Graph.from_edges([0, 1, 2], [1, 2, 3], [1, 2, 3])
    return sssp.compute(g, 0)


@pytest.mark.skipif(cuda_available(), reason="auto is CUDA where a GPU is usable")
def test_clone_to_auto_without_cuda_is_a_host_clone():
    r = tree()
    c = r.clone(backend="auto")  # asked CuPy for a device and raised NotSupportedError
    assert c.backend == "host" and c.device is None
    assert [a.tobytes() for a in c.to_numpy()] == [a.tobytes() for a in r.to_numpy()]


@pytest.mark.parametrize("backend", ["", 0, False, "bogus", np.array(["host", "cuda"])],
                         ids=["empty text", "zero", "False", "bogus", "array"])
def test_clone_refuses_what_is_not_a_backend(backend):
    r = tree()
    with pytest.raises(InvalidArgumentError, match="^backend must be one of host, cuda, auto, got "):
        r.clone(backend=backend)  # a false value was taken as None (the same backend)
    assert r.clone().backend == "host"


@pytest.mark.parametrize("other", [None, "result", (np.zeros(4), np.zeros(4))], ids=["None", "text", "arrays"])
def test_copy_from_refuses_what_is_not_a_result_and_keeps_the_arrays(other):
    # raised AttributeError ('str' object has no attribute '_live'): a Python error for a mistake
    r = tree()
    before = [a.tobytes() for a in r.to_numpy()]
    with pytest.raises(InvalidArgumentError, match=r"copy_from needs an engines.sssp.Result, got "):
        r.copy_from(other)
    assert [a.tobytes() for a in r.to_numpy()] == before and not r.poisoned
