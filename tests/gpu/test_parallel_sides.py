"""The device apply's two sides side by side (``ENGINES_APPLY_PARALLEL_SIDES``, on by default;
engines/graph/apply_sides.py): the in side's chain on a second stream with its own scratch,
joined before the record's download; and the sides one after the other (``0``).

The graph it leaves must be the host twin's byte for byte either way: the device-graph tests
(random chains, the golden corpus, the real graphs) run again here with the switch on, under both
launches of the apply (one by one, where the streams really run concurrently, and captured, where
the fork and the join are edges of the graph), with the touched-rows scan too, and with it off
(captured), and so do update() chains through both CUDA engines; then a long chain of commits back
to back (the side stream's scratch is cleared by its own kernels, commit after commit) and the
switch read when the event buffers grow. Every plan is recorded, so each test also checks that the
branch ran where the switch says so (and that every capture worked: a failed one would launch the
commit one by one).
"""

from __future__ import annotations

import numpy as np
import pytest

from engines import sssp
from engines.graph import apply_sides, device_apply

from .. import harness as H
from . import apply_again as A
from . import ops_support as S
from . import test_device_graph as D

pytestmark = S.GPU

(test_parallel_random_chains, test_parallel_golden_cases, test_parallel_real_graphs,
 test_parallel_update_chains, test_parallel_mixed_results) = A.TESTS

#: Per plan made during a test: whether it branches as the switch says (the in side on its own
#: stream when on, never when off).
_plans: list = []


@pytest.fixture(autouse=True, params=[("python", "prefix", "1"), ("graph", "prefix", "1"),
                                      ("python", "touched", "1"), ("graph", "touched", "1"),
                                      ("graph", "prefix", "0")], ids=lambda p: "-".join(p))
def sides_in_parallel(request, monkeypatch):
    """Every commit of this module's tests runs its sides as the parameter says (in parallel under
    both launches of the apply, with the library's prefix sum and with the touched rows' scan; one
    after the other, captured); afterwards, some plan must have been made, each branching as the
    switch says, and every capture must have worked."""
    launch, scan, switch = request.param
    A.skip_python_launch(request, launch)
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, switch)
    monkeypatch.setenv(device_apply.TOUCHED_SCAN_ENV, "off" if scan == "prefix" else str(1 << 20))
    _plans.clear()
    parallel = switch == "1"
    with S.recording_plans(monkeypatch, launch,
                           lambda steps: _plans.append((apply_sides.BRANCH in steps) is parallel)):
        yield launch
    assert _plans and all(_plans), f"a commit did not branch as ENGINES_APPLY_PARALLEL_SIDES={switch} says"


def test_a_long_chain_of_commits_back_to_back(sides_in_parallel):
    """Forty commits of mixed sizes with no synchronization between them but the record's: the
    in side's marks, row flags and length changes must read zero again at each commit's start,
    cleared by its own rebuild on its own stream."""
    rng = np.random.default_rng(D._seed("back to back", sides_in_parallel))
    graph = D._graph(rng, 2000, 2)
    twin = D.host_twin(graph)
    graph.to_device()
    for step in range(40):
        size = int(rng.integers(1, 600))
        deletions = int(rng.integers(0, size + 1))
        batch = H.make_batch(D.fixed_size_arrays(rng, twin, deletions, size - deletions))
        D._apply_both(graph, twin, batch, f"commit {step} ({deletions} deletions of {size})")


def test_the_switch_is_read_when_the_event_buffers_grow(monkeypatch, sides_in_parallel):
    """Turning the switch off between commits that fit the capacity changes nothing (a captured
    commit keeps its plan); the next growth reads it and drops the in side's scratch. update() on
    both CUDA engines keeps the host's bytes throughout."""
    rng = np.random.default_rng(D._seed("read at growth", sides_in_parallel))
    graph = D._graph(rng, 300, 1)
    twin = D.host_twin(graph)
    configs = tuple(c for c in ("fused", "operators") if S.fused_available() or c != "fused")
    results = {"host": sssp.compute(graph, 0, backend="host")}
    for name in configs:
        results[name] = sssp.compute(graph, 0, backend="cuda", update_launch=sides_in_parallel,
                                     **S.CUDA_CONFIGS[name])
    for step, setting in enumerate(("1", "0", "0")):  # whatever the parameter: the switch's own test
        monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, setting)
        size = 2 * device_apply.MIN_EVENTS + 50 if step == 2 else 20
        batch = H.make_batch(D.fixed_size_arrays(rng, twin, size // 2, size - size // 2))
        twin.apply(batch)
        S.update_all(graph, batch, results)
        for name in configs:
            H.assert_result_bytes_equal(results["host"], results[name])
        scratch = graph._device.scratch
        assert scratch.parallel is (step < 2) and (scratch.in_side is not None) is (step < 2), step
    _plans[:] = [True]  # the plans follow the switch here, not the parameter (checked above)
