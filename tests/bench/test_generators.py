"""One generator of each kind (bench/generators.py, issue 29 step 3): every caller keeps the exact
output it had when it wrote its own copy. The digests below were taken from the copies before they
were replaced (the corpus's random and grid presets, the engine table's random graph, the asv grid,
the prepared CSR of a stand-in, the test harness's shapes); a change to a generator that moves any
of them would also move the golden corpus, the stand-in caches or the asv inputs."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from bench import engine_table, generators, prepare, standins
from benchmarks import common as asv_common
from conformance import mixes
from tests import harness as H


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        h.update(str(a.dtype).encode())
        h.update(str(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def graph_digest(g) -> str:
    return digest(g.row_ptr, g.col_ind, g.weights)


@pytest.mark.parametrize("args, kw, expected", [
    ((200, 800, 2, 1, 100), dict(parallel=0.02, self_loops=0.01), "739901b35b1a934e"),
    ((1500, 6000, 3, 1, 100), dict(parallel=0.01), "a03b7a3339fa4722"),
    ((40, 160, 3, 1, 100), {}, "730f71d02190f38d"),
    ((1, 5, 1, 1, 3), dict(parallel=0.15, self_loops=0.05), "5d4beda3110e427e"),
])
def test_corpus_random_graph_unchanged(args, kw, expected):
    assert graph_digest(mixes.random_graph(np.random.default_rng(0), *args, **kw)) == expected


@pytest.mark.parametrize("args, expected", [
    ((12, 12, 2, 1, 10), "521fc7d45b0bfdf0"), ((1, 5, 1, 1, 1), "3b23fa730f9a2b42"), ((8, 8, 2, 1, 2), "c2c05076b33736a3"),
])
def test_corpus_grid_graph_unchanged(args, expected):
    assert graph_digest(mixes.grid_graph(np.random.default_rng(0), *args)) == expected


def test_corpus_csr_keeps_row_order():
    g = mixes.csr_from_edges(4, [0, 3, 1, 0], [1, 2, 2, 3], [[1], [2], [3], [4]])
    assert graph_digest(g) == "8d925833f41cc070"
    assert g.col_ind.tolist() == [1, 3, 2, 2] and g.weights[:, 0].tolist() == [1, 4, 3, 2]


@pytest.mark.parametrize("n, m, expected", [
    (300, 2000, "77aa88be4885fd31"), (500, 6000, "3fefd16dc9bd5cc4"), (4039, 176000, "5918dfb5c78109dc"), (2, 2, "80d81368af89caa3"),
])
def test_engine_table_random_graph_unchanged(n, m, expected):
    assert graph_digest(engine_table.random_graph(n, m)) == expected


@pytest.mark.parametrize("side, expected", [(30, "23eec92dde131d53"), (7, "15e06c64e807e1a7")])
def test_asv_grid_unchanged(side, expected):
    assert graph_digest(asv_common.road_grid(side)) == expected


def test_prepared_standin_csr_unchanged():
    src, dst = standins.directed_csr_edges(standins.road_grid(5000, 7000, seed=1))
    row_ptr, col_ind = prepare.csr_within_memory(5000, src, dst, label="test")
    assert col_ind.dtype == np.int32 and digest(row_ptr, col_ind) == "e106f6d492487987"


@pytest.mark.parametrize("shape, multi, expected", [
    ("sparse", False, "7242ba35fcc696a3"), ("sparse", True, "31be066bbc429843"),
    ("dense", False, "7bef82afd9043153"), ("dense", True, "8ac713d90dfc4655"),
    ("grid", False, "e87d183da4813538"), ("grid", True, "b159d04758c8cabc"),
    ("chain", False, "79e273ae8be72203"), ("chain", True, "c583c31550c17b13"),
    ("hub", False, "275b28c3b5f644af"), ("hub", True, "09521d33d45c3ac7"),
])
def test_harness_shapes_unchanged(shape, multi, expected):
    n, src, dst, w = H.random_graph(np.random.default_rng(0), shape, 17, 2, "huge", multi=multi)
    assert digest(np.int64(n), src, dst, w) == expected


def test_grid_orders():
    pairs = generators.grid_pairs(2, 3)
    assert pairs.tolist() == [[0, 1], [1, 2], [3, 4], [4, 5], [0, 3], [1, 4], [2, 5]]
    by_vertex = generators.grid_pairs(2, 3, by_vertex=True)
    assert by_vertex.tolist() == [[0, 1], [0, 3], [1, 2], [1, 4], [2, 5], [3, 4], [4, 5]]
    src, dst = generators.both_directions(np.array([0, 1]), np.array([1, 2]), interleaved=True)
    assert src.tolist() == [0, 1, 1, 2] and dst.tolist() == [1, 0, 2, 1]


def test_csr_presorted_and_dtypes():
    row_ptr, col, w = generators.csr_from_edges(3, np.array([0, 0, 2], np.int32), [2, 1, 0], presorted=True,
                                                col_dtype=np.int32)
    assert row_ptr.tolist() == [0, 2, 2, 3] and col.tolist() == [2, 1, 0] and col.dtype == np.int32 and w is None


def test_simple_arcs_and_distinct_pairs():
    src, dst = generators.simple_arcs(3, np.array([0, 1, 0, 2, 1]), np.array([1, 1, 1, 0, 2]))
    assert src.tolist() == [0, 2, 1] and dst.tolist() == [1, 0, 2]
    u, v = generators.distinct_pairs(np.random.default_rng(3), 20, 50)
    assert (u < v).all() and np.unique(u * 20 + v).size == 50
