"""``python -m engines.cli``: one update from MOSP text files or the project's .npz, against the API."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import engines
from bench import generators
from engines import cli, sssp
from engines.io import mosp
from engines.sssp import backends

REPO = Path(__file__).resolve().parents[2]


def _random_case(seed, n=40, m=160, K=2):
    rng = np.random.default_rng(seed)
    src, dst = generators.uniform_arcs(rng, n, m)
    w = rng.integers(1, 4, size=(m, K))  # small weights: many ties
    graph = engines.Graph.from_edges(src, dst, w, num_vertices=n)
    ins = rng.integers(0, n + 2, size=(12, 2))  # some insertions grow the graph
    dels_idx = rng.integers(0, m, 10)
    batch = dict(insert_src=ins[:, 0], insert_dst=ins[:, 1], insert_weights=rng.integers(1, 6, size=(12, K)),
                 delete_src=src[dels_idx], delete_dst=dst[dels_idx])
    return graph, batch


def _expected(graph, batch, source, objective, tree=None, canonicalize=True):
    g = graph.copy()
    if tree is None:
        r = sssp.compute(g, source, objective=objective)
    else:
        r = sssp.Result.from_arrays(g, source, tree[0], tree[1], canonicalize=canonicalize, objective=objective)
    stats = sssp.update(g, engines.Batch(**batch), r)
    d, p = r.to_numpy()
    return g, d, p, stats


def _write_mosp(tmp_path, graph, batch):
    gdir, bdir = tmp_path / "graph", tmp_path / "batch"
    mosp.write_csr(gdir, graph.row_ptr, graph.col_ind, graph.weights)
    mosp.write_batch(bdir, batch["insert_src"], batch["insert_dst"], batch["insert_weights"], batch["delete_src"],
                     batch["delete_dst"])
    return gdir, bdir


def _run(capsys, *argv):
    code = cli.main(list(map(str, argv)))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_mosp_folders_update_equals_the_api(tmp_path, capsys):
    graph, batch = _random_case(1)
    gdir, bdir = _write_mosp(tmp_path, graph, batch)
    code, out, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 3, "--objective", 1,
                          "--out", tmp_path / "out", "--write-graph", "--json")
    assert code == 0, err
    g_after, d, p, stats = _expected(graph, batch, 3, 1)
    assert np.array_equal(mosp.read_distances(tmp_path / "out" / "distances.txt"), d)
    assert np.array_equal(mosp.read_tree(tmp_path / "out" / "tree.txt"), p)
    row_ptr, col_ind, weights = mosp.read_csr(tmp_path / "out")
    assert np.array_equal(row_ptr, g_after.row_ptr) and np.array_equal(col_ind, g_after.col_ind)
    assert np.array_equal(weights.T.reshape(-1), g_after.weights)
    report = json.loads(out)
    assert report["input_tree"] == "computed"
    assert report["statistics"]["invalidated"] == stats.invalidated
    assert report["statistics"]["affected"] == stats.affected
    assert report["statistics"]["batch"]["num_vertices_after"] == g_after.num_vertices
    assert report["statistics"]["engine_used"] == "host"


def test_mosp_input_tree_kept_non_canonical(tmp_path, capsys):
    """An imported tree with --keep-parents is updated as given (canonicalize=False)."""
    graph, batch = _random_case(2, K=1)
    gdir, bdir = _write_mosp(tmp_path, graph, batch)
    r = sssp.compute(graph, 0)
    d, p = r.to_numpy()
    # a valid non-canonical tree: every parent the highest-id tight in-neighbour
    src = np.repeat(np.arange(graph.num_vertices), np.diff(graph.row_ptr))
    w = graph.weight_column(0).astype(np.int64)
    tight = (d[src] < sssp.INFINITE_DISTANCE) & (graph.col_ind != 0) & (d[src] + w == d[graph.col_ind])
    high = p.astype(np.int64).copy()
    np.maximum.at(high, graph.col_ind[tight], src[tight])
    assert (high != p).any()
    mosp.write_distances(tmp_path / "d.txt", d)
    mosp.write_tree(tmp_path / "p.txt", high)
    for keep in (True, False):
        out = tmp_path / f"out{keep}"
        flags = ["--keep-parents"] if keep else []
        code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 0, "--distances",
                            tmp_path / "d.txt", "--parents", tmp_path / "p.txt", *flags, "--out", out)
        assert code == 0, err
        _, d_exp, p_exp, _ = _expected(graph, batch, 0, 0, tree=(d, high), canonicalize=not keep)
        assert np.array_equal(mosp.read_tree(out / "tree.txt"), p_exp)
        assert np.array_equal(mosp.read_distances(out / "distances.txt"), d_exp)


def test_npz_state_chain(tmp_path, capsys):
    """compute -> state.npz -> update -> state2.npz -> update: equal to the same chain through the API."""
    graph, batch1 = _random_case(3)
    _, batch2 = _random_case(4)
    np.savez(tmp_path / "g.npz", row_ptr=graph.row_ptr, col_ind=graph.col_ind, weights=graph.weights)  # flat K*m
    for i, b in enumerate((batch1, batch2)):
        np.savez(tmp_path / f"b{i}.npz", **b)
    code, _, err = _run(capsys, "compute", "--graph", tmp_path / "g.npz", "--source", 5, "--objective", 1,
                        "--out", tmp_path / "s0.npz")
    assert code == 0, err
    for i in range(2):
        code, _, err = _run(capsys, "update", "--graph", tmp_path / f"s{i}.npz", "--batch", tmp_path / f"b{i}.npz",
                            "--out", tmp_path / f"s{i + 1}.npz")
        assert code == 0, err
    g = graph.copy()
    r = sssp.compute(g, 5, objective=1)
    for b in (batch1, batch2):
        sssp.update(g, engines.Batch(**b), r)
    with np.load(tmp_path / "s2.npz") as state:
        assert int(state["source"]) == 5 and int(state["objective"]) == 1
        assert state["distances"].dtype == np.int64 and state["parents"].dtype == np.int32
        assert np.array_equal(state["distances"], r.distances) and np.array_equal(state["parents"], r.parents)
        assert np.array_equal(state["col_ind"], g.col_ind)
        assert state["weights"].shape == (g.num_edges, 2)
        stats = json.loads(state["statistics"].tobytes())
        assert stats["statistics"]["affected"] == r.stats.affected


def test_table_output_names_the_statistics(tmp_path, capsys):
    graph, batch = _random_case(5)
    gdir, bdir = _write_mosp(tmp_path, graph, batch)
    code, out, _ = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 0, "--out", tmp_path / "o")
    assert code == 0
    for field in ("invalidated", "affected", "iterations", "packed_parents", "host_syncs", "batch.deleted_edges"):
        assert field in out


@pytest.mark.parametrize("breakage, fragment", [
    (lambda g, b: (g / mosp.COL_IND_FILE).write_text("1\nx\n2\n"), "graphCsrColInd.txt"),
    (lambda g, b: (g / mosp.VALUES_FILE).write_text("0\n" * 160), "weight 0 outside"),
    (lambda g, b: (b / mosp.DELETE_FILE).write_text("1 -2\n"), "negative vertex id"),
    (lambda g, b: (b / mosp.INSERT_FILE).write_text("1 2 3\n"), "expected 2 weights"),
    (lambda g, b: [(b / f).unlink() for f in (mosp.INSERT_FILE, mosp.DELETE_FILE)], "neither insert.txt"),
])
def test_bad_mosp_files_exit_2(tmp_path, capsys, breakage, fragment):
    graph, batch = _random_case(6)
    gdir, bdir = _write_mosp(tmp_path, graph, batch)
    breakage(gdir, bdir)
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 0, "--out", tmp_path / "o")
    assert code == 2
    assert "bad input" in err and fragment in err


def test_bad_arguments_and_trees_exit_2(tmp_path, capsys):
    graph, batch = _random_case(7, K=1)
    gdir, bdir = _write_mosp(tmp_path, graph, batch)
    base = ["update", "--graph", gdir, "--batch", bdir, "--out", tmp_path / "o"]
    assert _run(capsys, *base)[0] == 2  # no source anywhere
    code, _, err = _run(capsys, *base, "--source", 99)
    assert code == 2 and "source 99" in err
    code, _, err = _run(capsys, *base, "--source", 0, "--objective", 3)
    assert code == 2 and "objective" in err
    code, _, err = _run(capsys, *base, "--source", 0, "--distances", tmp_path / "d.txt")
    assert code == 2 and "--distances and --parents" in err
    # a tree that fails the import validation (docs/algorithm.md §8.4): a parent cycle 1 <-> 2 that
    # never reaches the source
    d, p = sssp.compute(graph, 0).to_numpy()
    p = p.astype(np.int64)
    d[1:3], p[1:3] = 1, [2, 1]
    mosp.write_distances(tmp_path / "d.txt", d)
    mosp.write_tree(tmp_path / "p.txt", p)
    tree = ["--source", 0, "--distances", tmp_path / "d.txt", "--parents", tmp_path / "p.txt"]
    code, _, err = _run(capsys, *base, *tree)
    assert code == 2 and "invalid tree" in err
    # without validation, a distance above the bound is found after the commit (invalid_input)
    mosp.write_distances(tmp_path / "d.txt", np.where(d < sssp.INFINITE_DISTANCE, 10**15, d))
    code, _, err = _run(capsys, *base, *tree, "--no-validate", "--keep-parents")
    assert code == 2 and "larger than" in err


def test_bad_npz_inputs_exit_2(tmp_path, capsys):
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    np.savez(tmp_path / "partial.npz", row_ptr=np.array([0, 1]), col_ind=np.array([0]))
    np.savez(tmp_path / "g.npz", row_ptr=np.array([0, 1, 1]), col_ind=np.array([1]), weights=np.array([3]))
    np.savez(tmp_path / "nob.npz", something=np.array([1]))
    for graph, batch, fragment in ((tmp_path / "junk.npz", tmp_path / "g.npz", "not a readable .npz"),
                                   (tmp_path / "partial.npz", tmp_path / "g.npz", "missing array(s) weights"),
                                   (tmp_path / "missing.npz", tmp_path / "g.npz", "no such file"),
                                   (tmp_path / "g.npz", tmp_path / "nob.npz", "no batch arrays")):
        code, _, err = _run(capsys, "update", "--graph", graph, "--batch", batch, "--source", 0,
                            "--out", tmp_path / "o.npz")
        assert code == 2, (graph, err)
        assert fragment in err


def test_usage_errors_exit_2(capsys):
    assert cli.main(["update", "--graph", "x"]) == 2
    assert cli.main(["frobnicate"]) == 2
    assert cli.main(["update", "--graph", "x", "--batch", "y", "--out", "z", "--backend", "gpu"]) == 2


@pytest.mark.skipif(backends.cuda_available(), reason="a GPU is usable here")
@pytest.mark.parametrize("engine", ["automatic", "fused", "operators"])
def test_cuda_without_gpu_exits_3(tmp_path, capsys, engine):
    graph, batch = _random_case(8)
    gdir, bdir = _write_mosp(tmp_path, graph, batch)
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 0, "--backend", "cuda",
                        "--cuda-engine", engine, "--out", tmp_path / "o")
    assert code == 3 and "CUDA GPU" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
def test_module_entry_points(tmp_path):
    graph, batch = _random_case(9)
    gdir, bdir = _write_mosp(tmp_path, graph, batch)
    for module in ("engines.cli", "engines"):
        proc = subprocess.run([sys.executable, "-m", module, "update", "--graph", str(gdir), "--batch", str(bdir),
                               "--source", "0", "--out", str(tmp_path / module), "--json"],
                              cwd=REPO, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["statistics"]["engine_used"] == "host"
