"""The device apply's one-block key sort (``ENGINES_APPLY_KEY_SORT=block``, engines/graph/key_sort.cu).

The default sort of a small commit since 0732d2c. The kernel must leave the bytes of the library's
sort (CuPy's sort of the same uint64 array) for every tile, count and row width the plan allows,
padding included; and a graph edited with it must be the host twin's byte for byte: the
device-graph tests (random chains, the golden corpus, the real graphs) run again here with the
switch on, under both launches of the apply, and so do update() chains through both CUDA engines. Every plan is recorded, so each test also checks that
the block sort ran (and every capture worked: a failed one would launch the commit one by one).
Then what only the switch has: batches past the largest tile fall back to the library's sort with
the same bytes, and ``library`` chosen sorts every commit with it.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from engines.graph import key_sort
from engines.sssp.cuda import runtime

from .. import harness as H
from ..engines.graph.test_key_sort import _apply_keys as apply_keys
from . import apply_again as A
from . import ops_support as S
from . import test_device_graph as D

pytestmark = S.GPU

(test_block_sort_random_chains, test_block_sort_golden_cases, test_block_sort_real_graphs,
 test_block_sort_update_chains, test_block_sort_mixed_results) = A.TESTS

#: Per plan made during a test: its sort step's kind ("block_sort" or "sort").
_plans: list = []


@pytest.fixture(autouse=True, params=["python", "graph"])
def block_sort_on(request, monkeypatch):
    """Every commit of this module's tests may take the block sort (both launches of the apply);
    afterwards, some plan must have taken it, and every capture must have worked."""
    # the kernel's own test launches it alone: the apply's launch does not reach it either
    A.skip_python_launch(request, request.param, test_the_kernel_gives_the_librarys_bytes)
    monkeypatch.setenv(key_sort.KEY_SORT_ENV, "block")
    _plans.clear()
    with S.recording_plans(monkeypatch, request.param,
                           lambda steps: _plans.append(next(s[0] for s in steps if s[0] in ("sort", "block_sort")))):
        yield request.param
    if os.environ.get(key_sort.KEY_SORT_ENV) == "block":  # a test may choose the library instead
        assert "block_sort" in _plans, "no commit took the block sort"


def _keys(rng, count: int, real: int, rows: int) -> np.ndarray:
    """Both sides' keys as device_apply.cu apply_keys writes them, the largest row at the last event."""
    rows_out, rows_in = rng.integers(0, rows, real), rng.integers(0, rows, real)
    if real:
        rows_out[-1] = rows_in[-1] = rows - 1
    return apply_keys(rows_out, rows_in, count)


@pytest.mark.parametrize("count", [1, 7, 1024, 2047, 2048, 2049, 2641, 4096, 4097, 8191, 8192])
def test_the_kernel_gives_the_librarys_bytes(block_sort_on, count):
    """Each tile at counts below, at and past its size, full and partly padded, on rows from one to
    the widest the 31 bits allow: the keys come out as CuPy's sort leaves them."""
    import cupy

    rng = np.random.default_rng(D._seed("kernel", count))
    device = runtime.current_device()
    widest = 1 << (key_sort.MAX_END_BIT - count.bit_length())
    for rows in (1, 2, 300, widest):
        for real in (count, count // 2, 1, 0):
            plan = key_sort.plan(count, rows)
            assert plan is not None and plan.count == count
            keys = cupy.asarray(_keys(rng, count, real, rows))
            expected = cupy.sort(keys)
            key_sort.launch(key_sort.function(device, plan), keys, plan, cupy.cuda.get_current_stream())
            assert cupy.array_equal(keys, expected).item(), (count, rows, real, plan)
    _plans.append("block_sort")  # no commit here: the fixture's check is about this test's own launches


def test_batches_past_the_largest_tile_take_the_librarys_sort(block_sort_on):
    """A capacity grown past 8,192 events sorts with the library again, a later small batch on the
    same (grown) scratch too when captured (its plan is sized for the capacity); every state equals
    the host twin's."""
    rng = np.random.default_rng(D._seed("past the tile", block_sort_on))
    graph = D._graph(rng, 3000, 1)
    twin = D.host_twin(graph)
    graph.to_device()
    D._apply_both(graph, twin, H.make_batch(D.fixed_size_arrays(rng, twin, 40, 60)), "small")
    assert _plans[-1] == "block_sort"
    D._apply_both(graph, twin, H.make_batch(D.fixed_size_arrays(rng, twin, 3000, 6000)), "past the tile")
    assert _plans[-1] == "sort" and graph._device.scratch.event_cap > key_sort.TILES[-1][0]
    D._apply_both(graph, twin, H.make_batch(D.fixed_size_arrays(rng, twin, 5, 5)), "small after growth")
    assert _plans[-1] == ("block_sort" if block_sort_on == "python" else "sort")


def test_the_library_chosen_sorts_every_commit_with_it(monkeypatch, block_sort_on):
    """ENGINES_APPLY_KEY_SORT=library: no plan takes the block sort, and every state equals the
    host twin's (the path larger batches and wider graphs take whatever the choice)."""
    monkeypatch.setenv(key_sort.KEY_SORT_ENV, "library")
    rng = np.random.default_rng(D._seed("library", block_sort_on))
    graph = D._graph(rng, 500, 2)
    twin = D.host_twin(graph)
    graph.to_device()
    for step, count in enumerate((3, 100, 1500)):
        batch = H.make_batch(D.fixed_size_arrays(rng, twin, count // 2, count - count // 2))
        D._apply_both(graph, twin, batch, f"step {step} of {count}")
    assert graph._device.scratch.key_sort == "library"
    assert _plans and set(_plans) == {"sort"}
