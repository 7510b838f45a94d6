"""The small real graphs beside the project (algorithm.md §13 item 13): compute() and chains of
update() against the oracles. Skipped with a reason where ``<repo>/../shared/data`` is absent."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import engines
from engines import sssp

from .. import harness as H

GRAPHS = {"uspowergrid": 4941, "luxembourg_osm": 114599}


def load_real_graph(folder, name):
    """1-based undirected ``i j`` lines -> symmetrized graph, K = 3 weights in [1, 100] drawn with
    default_rng(12345) over the symmetrized directed edges in from_edges order."""
    path = folder / f"{name}.edges"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    table = pd.read_csv(path, sep=" ", header=None, dtype=np.int64, usecols=[0, 1])
    src = table[0].to_numpy() - 1
    dst = table[1].to_numpy() - 1
    n = int(max(src.max(), dst.max())) + 1
    shape_only = engines.Graph.from_edges(src, dst, np.ones(src.size, np.int64), num_vertices=n,
                                          symmetrize=True)
    m = shape_only.num_edges
    w = np.random.default_rng(12345).integers(1, 101, size=(m, 3))
    g = engines.Graph.from_csr(np.asarray(shape_only.row_ptr), np.asarray(shape_only.col_ind), w)
    return g, src, dst


@pytest.mark.parametrize("name", ["uspowergrid", "luxembourg_osm"])
@pytest.mark.slow
def test_real_graph_compute(shared_graphs_dir, name):
    g, src, dst = load_real_graph(shared_graphs_dir, name)
    assert g.num_vertices == GRAPHS[name]
    # the symmetrized structure: every undirected edge both ways (no self-loops in these files)
    assert (src != dst).all()
    assert g.num_edges == 2 * src.size
    s_all = np.concatenate([src, dst])
    d_all = np.concatenate([dst, src])
    exp = np.sort(s_all * g.num_vertices + d_all)
    rp = np.asarray(g.row_ptr).astype(np.int64)
    got = np.sort(np.repeat(np.arange(g.num_vertices), np.diff(rp)) * g.num_vertices
                  + np.asarray(g.col_ind).astype(np.int64))
    np.testing.assert_array_equal(got, exp)
    for k in range(3):
        H.check_compute(g, 0, objective=k)


def chain(g, rng, kinds, wclass="mid"):
    s = 0
    tracked = [H.Tracked(sssp.compute(g, s, objective=k), k, True) for k in range(3)]
    tracked.append(H.import_perturbed(rng, g, H.Tracked(sssp.compute(g, 7, objective=1), 1, True)))
    ref = H.ref_of(g)
    for kind in kinds:
        arrays = H.random_batch(rng, kind, ref, tracked[0].result.to_numpy()[1], s, wclass)
        _, app = H.check_update(g, arrays, tracked, ref_old=ref)
        ref = app.graph
    return tracked


def test_real_graph_chain_uspowergrid(shared_graphs_dir):
    g, _, _ = load_real_graph(shared_graphs_dir, "uspowergrid")
    rng = np.random.default_rng(4941)
    chain(g, rng, ["mixed", "tree_delete", "growth", "tree_increase"])


def big_tree_batch(rng, g, parents, count):
    """A larger realistic batch: delete `count` tree edges, re-insert half of them heavier,
    add `count` random edges."""
    tree_v = np.flatnonzero(parents >= 0)
    pick = rng.choice(tree_v, size=min(count, tree_v.size), replace=False)
    dsrc, ddst = parents[pick].astype(np.int64), pick.astype(np.int64)
    half = pick.size // 2
    isrc = np.concatenate([dsrc[:half], rng.integers(0, g.num_vertices, size=count)])
    idst = np.concatenate([ddst[:half], rng.integers(0, g.num_vertices, size=count)])
    iw = rng.integers(1, 101, size=(isrc.size, 3))
    return isrc, idst, iw, dsrc, ddst


@pytest.mark.parametrize("propagation", ["auto", "numpy"])
@pytest.mark.slow
def test_real_graph_chain_luxembourg(shared_graphs_dir, propagation):
    with H.host_propagation(propagation):
        _luxembourg_chain(shared_graphs_dir)


def _luxembourg_chain(shared_graphs_dir):
    g, _, _ = load_real_graph(shared_graphs_dir, "luxembourg_osm")
    rng = np.random.default_rng(114599)
    s = 0
    tracked = [H.Tracked(sssp.compute(g, s, objective=k), k, True) for k in range(3)]
    tracked.append(H.import_perturbed(rng, g, H.Tracked(sssp.compute(g, 7, objective=1), 1, True)))
    ref = H.ref_of(g)
    for step in range(3):
        arrays = big_tree_batch(rng, g, tracked[0].result.to_numpy()[1], 200)
        _, app = H.check_update(g, arrays, tracked, ref_old=ref)
        ref = app.graph
