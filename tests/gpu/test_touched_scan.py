"""The device apply's row offsets from the touched rows alone (``ENGINES_APPLY_TOUCHED_SCAN``,
device_apply.cu ``apply_touched_scan`` / ``apply_row_ptr_touched``).

With the switch on, a commit of few events sums only the touched rows' length changes (one block,
in sorted-event order) and each row offset binary-searches the sorted events, instead of the
library's prefix sum over every row. The graph it leaves must be the host twin's byte for byte:
the device-graph tests (random chains, the golden corpus, the real graphs) run again here with the
switch on, under both launches of the apply, and so do update() chains through both CUDA engines
(under the launch update() passes itself, Options.update_launch); then what only the switch has:
batches of several scan tiles, a capacity growing past the limit (the prefix sum again), and the
limit read when the event buffers grow. Every plan is recorded, so each test also checks that the
touched path ran where it claims to (and every capture worked: a failed one would launch the
commit one by one).
"""

from __future__ import annotations

import numpy as np
import pytest

from engines import sssp
from engines.graph import device_apply

from .. import harness as H
from . import apply_again as A
from . import ops_support as S
from . import test_device_graph as D

pytestmark = S.GPU

#: Large enough for every batch of the re-collected tests: every commit takes the touched path.
ALWAYS = 1 << 20
#: Events per tile of apply_touched_scan (SSSP_BLOCK threads x TOUCHED_ITEMS).
TILE = 256 * 8

(test_touched_random_chains, test_touched_golden_cases, test_touched_real_graphs,
 test_touched_update_chains, test_touched_mixed_results) = A.TESTS


#: Per plan made during a test: whether it sums the touched rows (it has no library prefix sum).
_plans: list = []


@pytest.fixture(autouse=True, params=["python", "graph"])
def touched_scan_on(request, monkeypatch):
    """Every commit of this module's tests sums the touched rows (both launches of the apply);
    afterwards, some plan must have taken the touched path, and every capture must have worked."""
    A.skip_python_launch(request, request.param)
    monkeypatch.setenv(device_apply.TOUCHED_SCAN_ENV, str(ALWAYS))
    _plans.clear()
    with S.recording_plans(monkeypatch, request.param,
                           lambda steps: _plans.append(not any(step[0] == "cumsum" for step in steps))):
        yield request.param
    assert any(_plans), "no commit took the touched path"


def test_batches_of_several_tiles_give_the_host_bytes(touched_scan_on):
    """Batches of one event, of a tile's events exactly and of several tiles (the scan's carry from
    tile to tile), on a graph whose rows are touched many times each and on one touched sparsely."""
    rng = np.random.default_rng(D._seed("tiles", touched_scan_on))
    for n in (50, 5000):
        graph = D._graph(rng, n, 2)
        twin = D.host_twin(graph)
        graph.to_device()
        for step, (deletions, insertions) in enumerate(((1, 0), (0, TILE), (TILE // 2, TILE // 2 + 1),
                                                       (TILE, 2 * TILE + 7), (3, 4))):
            batch = H.make_batch(D.fixed_size_arrays(rng, twin, deletions, insertions))
            D._apply_both(graph, twin, batch, f"n={n} step {step} ({deletions} deletions, {insertions} insertions)")
        assert graph._device.scratch.touched_limit == ALWAYS
    assert all(_plans)


def test_a_capacity_past_the_limit_sums_every_row_again(monkeypatch, touched_scan_on):
    """A limit below the grown capacity: the first commits take the touched path; after the growth
    a captured commit (sized for the capacity) takes the prefix sum over every row, and commits
    launched one by one (sized for their batch) the touched path up to the limit only. Every state
    equals the host twin's."""
    monkeypatch.setenv(device_apply.TOUCHED_SCAN_ENV, "300")
    monkeypatch.setenv(device_apply.MIN_EVENTS_ENV, "64")
    rng = np.random.default_rng(D._seed("past the limit", touched_scan_on))
    graph = D._graph(rng, 400, 1)
    twin = D.host_twin(graph)
    graph.to_device()
    for step, count in enumerate((5, 60, 20)):
        D._apply_both(graph, twin, H.make_batch(D.fixed_size_arrays(rng, twin, count // 2, count - count // 2)),
                      f"small {step}")
    scratch = graph._device.scratch
    assert scratch.event_cap == 64 and scratch.touched_limit == 300
    assert _plans and all(_plans)
    D._apply_both(graph, twin, H.make_batch(D.fixed_size_arrays(rng, twin, 200, 400)), "past the limit")
    assert scratch.event_cap > 300
    _plans.clear()
    for step, count in enumerate((9, 301)):
        D._apply_both(graph, twin, H.make_batch(D.fixed_size_arrays(rng, twin, count // 2, count - count // 2)),
                      f"after growth {step}")
    # captured: any plan made for the new capacity (one per buffer parity) takes the prefix sum; one
    # by one: a plan per commit, 9 events touched, 301 not
    if touched_scan_on == "graph":
        assert not any(_plans)
    else:
        assert _plans == [True, False]
    _plans.append(True)  # the first commits took the touched path (checked above)


def test_the_limit_is_read_when_the_event_buffers_grow(monkeypatch, touched_scan_on):
    """Changing the switch between commits that fit the capacity changes nothing (a captured commit
    keeps its plan); the next growth reads it. update() on both CUDA engines keeps the host's bytes."""
    rng = np.random.default_rng(D._seed("read at growth", touched_scan_on))
    graph = D._graph(rng, 300, 1)
    twin = D.host_twin(graph)
    configs = tuple(c for c in ("fused", "operators") if S.fused_available() or c != "fused")
    results = {"host": sssp.compute(graph, 0, backend="host")}
    for name in configs:
        results[name] = sssp.compute(graph, 0, backend="cuda", update_launch=touched_scan_on, **S.CUDA_CONFIGS[name])
    for step, setting in enumerate((str(ALWAYS), "off", "off")):
        monkeypatch.setenv(device_apply.TOUCHED_SCAN_ENV, setting)
        size = 2 * device_apply.MIN_EVENTS + 50 if step == 2 else 20
        batch = H.make_batch(D.fixed_size_arrays(rng, twin, size // 2, size - size // 2))
        twin.apply(batch)
        S.update_all(graph, batch, results)
        for name in configs:
            H.assert_result_bytes_equal(results["host"], results[name])
        assert graph._device.scratch.touched_limit == (ALWAYS if step < 2 else 0), step
