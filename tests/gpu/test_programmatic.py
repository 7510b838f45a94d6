"""The operators device loop with programmatic dependent launches (ENGINES_OPERATORS_PDL=1,
engines/sssp/cuda/programmatic.py): every result equals the host reference's bytes, the
synchronizations are the plain launches', and a captured replay of each kind runs."""

from __future__ import annotations

import numpy as np
import pytest

import engines
from engines import sssp
from engines.sssp.cuda import programmatic
from engines.sssp.plan import PUSH_EXPANSIONS

from .. import harness as H
from . import ops_support as S

pytestmark = S.GPU


@pytest.fixture
def pdl(monkeypatch):
    monkeypatch.setenv(programmatic.ENV, "1")


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("expansion", PUSH_EXPANSIONS)
def test_programmatic_loop_gives_the_reference_bytes(pdl, seed, expansion):
    rng = np.random.default_rng(seed + 7100)
    n, src, dst, w = H.random_graph(rng, "sparse", 2500, 1, "mid")
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    configs = ("operators",)
    results = S.compute_all(graph, 0, engines=configs, delta=2, push_expansion=expansion)
    S.assert_conformant(results, what="programmatic compute")
    for step, kind in enumerate(("tree_delete", "mixed", "growth", "tree_increase")):
        _, parents = results["host"].to_numpy()
        batch = H.make_batch(H.random_batch(rng, kind, H.ref_of(graph), parents, 0, "mid"))
        stats = S.update_all(graph, batch, results)
        S.assert_conformant(results, stats, update=True, what=f"programmatic {kind} {step}")


def test_programmatic_and_plain_loops_agree_on_a_long_chain(monkeypatch):
    """Thousands of phases (many replays of the longest captured graphs), both launch kinds."""
    n = 3000
    src = np.arange(n - 1)
    graph = engines.Graph.from_edges(src, src + 1, np.ones(n - 1, dtype=np.int64), num_vertices=n)
    out = {}
    for flag in ("0", "1"):
        monkeypatch.setenv(programmatic.ENV, flag)
        r = sssp.compute(graph, 0, backend="cuda", cuda_engine="operators", delta=1)
        out[flag] = (r.to_numpy(), r.stats.iterations, r.stats.epochs, r.stats.host_syncs)
    (d0, p0), *rest0 = out["0"]
    (d1, p1), *rest1 = out["1"]
    np.testing.assert_array_equal(d0, d1)
    np.testing.assert_array_equal(p0, p1)
    assert rest0 == rest1
    np.testing.assert_array_equal(d0, np.arange(n))
