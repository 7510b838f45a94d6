"""Mapped records (``ENGINES_MAPPED_RECORDS=1``; engines/sssp/cuda/mapped.py): the device apply's
record stored into its pinned mirror by a kernel, and a captured fused update's control block read
from and stored into pinned host memory by kernels, with no copy node in either graph.

The bytes must be those of the copies: the device-graph tests (random chains, the golden corpus,
the real graphs; their record's counters feed the graph's edge count, maxima and weight sums) and
update() chains through both CUDA engines (the fused run's statistics and results come from the
stored block) run again here with the switch on, under both launches of the apply. Every plan is
recorded, so each test also checks that it ended with the record's kernel, and every capture must
have worked. A chain of fused updates also checks that its captured graphs were the mapped ones.
"""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.sssp.cuda import fused, mapped

from .. import harness as H
from . import apply_again as A
from . import ops_support as S
from . import test_device_graph as D

pytestmark = S.GPU

(test_mapped_random_chains, test_mapped_golden_cases, test_mapped_real_graphs,
 test_mapped_update_chains, test_mapped_mixed_results) = A.TESTS

_plans: list = []


def _ends_with_the_records_kernel(steps) -> bool:
    """The plan's last step is apply_record_out's launch: one block, (record, mirror, slots)."""
    kind, *rest = steps[-1]
    return kind == "kernel" and rest[1] == 1 and len(rest[2]) == 3 and all(s[0] != "download" for s in steps)


@pytest.fixture(autouse=True, params=["python", "graph"])
def records_mapped(request, monkeypatch):
    """Every commit of this module's tests stores its record by the kernel (under both launches of
    the apply); afterwards some plan must have been made, each ending with that kernel."""
    launch = request.param
    A.skip_python_launch(request, launch, test_fused_updates_replay_the_mapped_graph)
    monkeypatch.setenv(mapped.MAPPED_RECORDS_ENV, "1")
    _plans.clear()
    with S.recording_plans(monkeypatch, launch,
                           lambda steps: _plans.append(_ends_with_the_records_kernel(steps))):
        yield launch
    assert _plans and all(_plans), "a commit did not end with the record's kernel"


def test_fused_updates_replay_the_mapped_graph(records_mapped):
    """Twenty captured fused updates of random batches with the switch on equal the host
    reference after each (results and statistics, S.assert_conformant); the fused engine's
    captured graphs are the mapped ones (their key names the control kernel)."""
    if not S.fused_available():
        pytest.skip("no cooperative launch on this device")
    rng = np.random.default_rng(D._seed("mapped fused"))
    n, src, dst, w = H.random_graph(rng, "sparse", 3000, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    results = {"host": sssp.compute(graph, 0, backend="host"),
               "fused": sssp.compute(graph, 0, backend="cuda", update_launch="graph", **S.CUDA_CONFIGS["fused"])}
    state = fused.capture_state(results["fused"].device, np.int32)
    for step in range(20):
        _, parents = results["host"].to_numpy()
        kind = ("insert", "delete", "mixed", "reweight", "tree_delete")[step % 5]
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True)
    assert any("mapped" in key for key in state.graphs), "no mapped fused graph was captured"
