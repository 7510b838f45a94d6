"""The operators device loop's wait for its read-ahead replay (``ENGINES_OPERATORS_WAIT_READ_AHEAD``,
issue 27; docs/algorithm.md §5.9). By default the run returns at the readback that shows the loop
done, leaving the replay enqueued after it (launches that return at once) on the engine's stream;
the whole GPU suite runs that way. ``1`` also waits for it: the operators and sync tests run again
here with the wait on (imported below: pytest collects them in this module, under its autouse
fixture), every result compared with the host reference's bytes and every host_syncs with the
readback model (conformance.replay.device_loop_replays, which reads the same switch) and with
CUPTI's count; what the default mode alone has is checked on its own.
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.sssp.cuda import operators

from .. import harness as H
from . import ops_support as S
# re-run with the wait on (collected here, under this module's fixture)
from .test_operators import (  # noqa: F401
    test_random_chains_against_the_host,
    test_scratch_clean_and_generation_reset,
    test_source_as_head_and_push_target_and_growth,
)
from .test_syncs import (  # noqa: F401
    cupti_counter,
    test_compute_syncs,
    test_cupti_count_equals_host_syncs,
    test_cupti_count_of_compute,
    test_update_syncs_with_candidates,
)

pytestmark = S.GPU


@pytest.fixture(autouse=True)
def wait(monkeypatch):
    monkeypatch.setenv(operators.WAIT_READ_AHEAD_ENV, "1")
    assert operators.wait_read_ahead_enabled()


@pytest.mark.parametrize("value, syncs", [("0", 1), ("1", 2)])
def test_an_update_without_candidates_takes_one_readback_two_with_the_wait(monkeypatch, value, syncs):
    """The loop runs only the unpack, covered by the first replay, whose readback shows the end:
    one synchronization (two with the wait)."""
    monkeypatch.setenv(operators.WAIT_READ_AHEAD_ENV, value)
    rng = np.random.default_rng(83)
    n, src, dst, w = H.random_graph(rng, "sparse", 500, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    results = S.compute_all(graph, 0, engines=("operators",))
    stats = S.update_all(graph, engines.Batch.empty(), results)
    S.assert_conformant(results, stats, update=True)
    assert (stats["operators"].host_syncs, stats["operators"].iterations) == (syncs, 0)


@pytest.mark.parametrize("captured_start", ["0", "1"])
def test_back_to_back_updates_and_a_compute_behind_the_queued_replay(monkeypatch, captured_start):
    """Updates straight after one another (each starts behind the previous one's queued replay on
    the same stream), with and without the captured start, then compute() on the same device and
    a read of every result on CuPy's current stream: the host's bytes each time."""
    monkeypatch.setenv(operators.WAIT_READ_AHEAD_ENV, "0")  # the default, which leaves it queued
    monkeypatch.setenv(operators.CAPTURED_START_ENV, captured_start)
    rng = np.random.default_rng(89)
    n, src, dst, w = H.random_graph(rng, "sparse", 1200, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    results = S.compute_all(graph, 0, engines=("operators",))
    for kind in ("mixed", "tree_delete", "mixed", "insert", "mixed", "tree_increase"):
        _, parents = results["host"].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        stats = S.update_all(graph, batch, results)
        S.check_stats_shape(stats["operators"], "operators", update=True)
    S.assert_conformant(results, update=True, what="after six updates")
    again = sssp.compute(graph, 0, backend="cuda", **S.CUDA_CONFIGS["operators"])
    # against the host's compute() of the same graph: the updated host result's statistics describe
    # its last update (batch, invalidated), which a compute() from scratch does not have; its bytes
    # are the same (an update from a canonical tree equals compute(), algorithm.md §5.12)
    S.assert_conformant({"host": sssp.compute(graph, 0, backend="host"), "operators": again},
                        what="compute() after them")
