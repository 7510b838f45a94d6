"""bench/chain_model.py, the CPU model of the push with lane-local chains (issues 27, 34): its
distances against SciPy's Dijkstra for every setting, its iteration counts on a path and a comb
(the same rules tests/gpu/test_push_chain.py checks on the engines), the capture of the host
reference's start (its chain-free run ends with the host's distances), and the command."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

import engines
from bench import chain_model as M
from engines import sssp
from engines.exitcodes import ExitCode
from tests import harness as H


def _csr(n, src, dst, w):
    order = np.lexsort((dst, src))
    src, dst, w = src[order], dst[order], w[order]
    row_ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(row_ptr, src + 1, 1)
    return np.cumsum(row_ptr), dst.astype(np.int64), w.astype(np.int64)


def _compute_start(n, src, dst, w, source=0, delta=5, bound=10**12):
    row_ptr, col_ind, weight = _csr(n, src, dst, w)
    distances = np.full(n, M.UNREACHED, dtype=np.int64)
    distances[source] = 0
    return M.Start(distances, np.array([source]), row_ptr, col_ind, weight, source, bound, delta)


def _dijkstra(n, src, dst, w, source=0):
    # the minimum over parallel edges, as the spec's distances take it
    matrix = sp.coo_matrix((w.astype(float), (src, dst)), shape=(n, n)).tocsr()
    matrix.sum_duplicates()
    keys = {}
    for u, v, x in zip(src.tolist(), dst.tolist(), w.tolist()):
        keys[(u, v)] = min(keys.get((u, v), x), x)
    rows, cols = zip(*keys) if keys else ((), ())
    matrix = sp.csr_matrix((list(keys.values()), (rows, cols)), shape=(n, n))
    d = dijkstra(matrix, indices=source)
    return np.where(np.isinf(d), M.UNREACHED, d).astype(np.int64)


@pytest.mark.parametrize("lanes", [(0, 5), (64, 5), (4096, 5), (64, 0), (1, 0)])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("hops, max_degree", [(0, 4), (1, 4), (3, 2), (8, 8), (20, 1)])
def test_every_setting_ends_with_the_shortest_distances(seed, hops, max_degree, lanes):
    threads, max_shift = lanes
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    m = int(rng.integers(n, 5 * n))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    w = rng.integers(1, 30, m)
    delta = int(rng.integers(1, 60))
    counts, dist = M.simulate(_compute_start(n, src, dst, w, delta=delta), hops, max_degree,
                              threads=threads, max_shift=max_shift)
    assert np.array_equal(dist, _dijkstra(n, src, dst, w))
    assert counts.followed == 0 if hops == 0 else counts.followed >= 0
    assert counts.relaxations >= int(np.count_nonzero(dist[1:] < M.UNREACHED))  # each reached once at least


@pytest.mark.parametrize("threads", [0, 32, 33_792])
def test_a_path_takes_an_iteration_per_hops_plus_one_vertices(threads):
    n = 500
    src = np.arange(n - 1)
    w = np.random.default_rng(3).integers(1, 4, n - 1)
    start = _compute_start(n, src, src + 1, w, delta=10**9)
    for hops in (0, 1, 4, 16):
        counts, _ = M.simulate(start, hops, threads=threads)
        assert counts.iterations == (n if hops == 0 else (n - 1) // (hops + 1) + 1), hops
        assert counts.relaxations == n - 1 and counts.epochs == 0


def test_a_lane_keeps_only_the_first_vertex_of_its_share():
    """A star 0 -> 1..k, each leaf then a path of its own: with one lane per vertex ("vertex",
    max_shift 0) the lane that pushes 0 keeps leaf 1 and lists the others, so only one path gets
    ahead; with a lane per edge (groups of 32) every leaf is kept by its own lane and every path
    advances hops + 1 vertices an iteration; every lowering its own chain (threads 0) does the
    same."""
    length = 60
    n, src, dst = H.leaves_with_paths(8, length)
    start = _compute_start(n, src, dst, np.ones(src.size, dtype=np.int64), delta=10**9)
    hops = 4
    wide = M.simulate(start, hops, threads=4096, max_shift=5)[0]
    narrow = M.simulate(start, hops, threads=4096, max_shift=0)[0]
    every = M.simulate(start, hops, threads=0)[0]
    # each path (leaf + length vertices) is length + 1 vertices past the source
    assert wide.iterations == every.iterations == (length + 1) // (hops + 1) + 1
    assert narrow.iterations > wide.iterations and narrow.followed < wide.followed


def test_a_vertex_wider_than_the_cap_is_listed_not_followed():
    n = 300
    src = np.concatenate([np.arange(n - 1), np.arange(1, n - 1)])
    dst = np.concatenate([np.arange(1, n), np.zeros(n - 2, dtype=np.int64)])  # back edges to 0
    start = _compute_start(n, src, dst, np.ones(src.size, dtype=np.int64), delta=10**9)
    # every vertex but the last is listed (n - 1 iterations); the last has no out-edge to follow
    assert M.simulate(start, 4, max_degree=1)[0].iterations == n - 1
    assert M.simulate(start, 4, max_degree=2)[0].iterations == (n - 1) // 5 + 1


def test_a_small_delta_sends_chains_to_the_far_pile():
    side = 30
    ids = np.arange(side * side).reshape(side, side)
    src = np.concatenate([ids[:, :-1].ravel(), ids[:, 1:].ravel(), ids[:-1].ravel(), ids[1:].ravel()])
    dst = np.concatenate([ids[:, 1:].ravel(), ids[:, :-1].ravel(), ids[1:].ravel(), ids[:-1].ravel()])
    w = np.random.default_rng(5).integers(1, 20, src.size)
    start = _compute_start(side * side, src, dst, w, delta=3)
    plain, d0 = M.simulate(start, 0)
    chained, d8 = M.simulate(start, 8)
    assert plain.epochs > 0 and chained.epochs > 0
    assert np.array_equal(d0, d8) and np.array_equal(d0, _dijkstra(side * side, src, dst, w))


def test_bad_settings_are_refused():
    start = _compute_start(3, np.array([0, 1]), np.array([1, 2]), np.array([1, 1]))
    for kwargs in ({"hops": -1}, {"hops": 2, "max_degree": 0}, {"hops": 2, "threads": -1},
                   {"hops": 2, "max_shift": 6}):
        with pytest.raises(ValueError):
            M.simulate(start, **kwargs)


def test_the_default_lanes_are_the_fused_grid_on_an_h200():
    from engines.sssp.cuda import fused

    assert M.fused_threads(114_599) == 132 * 256  # at least a block per multiprocessor
    assert M.fused_threads(1_090_920) == min(-(-1_090_920 // fused.VERTICES_PER_BLOCK), 528) * 256


def test_the_captured_start_of_an_update_ends_with_the_hosts_distances():
    rng = np.random.default_rng(8)
    n, m = 2_000, 8_000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    graph = engines.Graph.from_edges(src, dst, rng.integers(1, 50, m), num_vertices=n)
    result = sssp.compute(graph, 0, backend="host")
    _, parents = result.to_numpy()
    tree = np.flatnonzero(parents >= 0)[:40]  # delete 40 tree edges: subtrees to repair
    batch = engines.Batch(insert_src=rng.integers(0, n, 30), insert_dst=rng.integers(0, n, 30),
                          insert_weights=rng.integers(1, 50, 30), delete_src=parents[tree], delete_dst=tree)
    from engines.sssp import host

    before = (host.propagate_near_far, host.PROPAGATION)
    with M.captured_starts() as starts:
        sssp.update(graph, batch, result)
    assert (host.propagate_near_far, host.PROPAGATION) == before  # restored
    assert len(starts) == 1
    distances, _ = result.to_numpy()
    expected = np.where(distances >= 2**61 - 1, M.UNREACHED, distances)
    for hops in (0, 2, 6):
        _, dist = M.simulate(starts[0], hops)
        assert np.array_equal(dist, expected), hops
    totals, iterations, same = M.model(starts, [0, 1, 3])
    assert same and list(totals) == [0, 1, 3] and all(len(v) == 1 for v in iterations.values())
    assert totals[0].followed == 0 and totals[3].iterations <= totals[0].iterations


def test_the_command_on_the_shared_power_grid(shared_graphs_dir, tmp_path, capsys):
    out = tmp_path / "counts.json"
    code = M.main(["--graph", "uspowergrid", "--stream", "4", "--hops", "2", "1", "--json", str(out),
                   "--data-dir", str(shared_graphs_dir.parent), "--cache-dir", str(tmp_path / "cache")])
    assert code == ExitCode.OK
    text = capsys.readouterr().out
    assert "4 near-far runs" in text and "every setting ends with the chain-free distances" in text
    record = json.loads(out.read_text())
    assert list(record["counts"]) == ["0", "2", "1"] and record["same_distances"] is True
    assert record["counts"]["0"]["followed"] == 0


@pytest.mark.parametrize("argv", [["--graph", "uspowergrid"],
                                  ["--graph", "uspowergrid", "--stream", "2", "--compute"]])
def test_usage_errors_exit_2(argv, capsys):
    assert M.main(argv) == 2  # argparse's usage error, its status returned by main()
    assert "usage:" in capsys.readouterr().err


@pytest.mark.parametrize("argv, line", [
    (["--stream", "0"], "--hops must be >= 0, --max-degree and --stream >= 1"),
    (["--stream", "2", "--hops", "-1"], "--hops must be >= 0, --max-degree and --stream >= 1"),
    (["--stream", "2", "--max-shift", "9"], "--threads must be >= 0 and --max-shift in [0, 5]"),
    (["--stream", "2", "--batch-size", "6"], "--batch-size must be a positive multiple of 4 (bench/stream.py)")])
def test_a_bad_value_is_one_line_and_exit_2(argv, line, capsys):
    """Values argparse accepts but the model cannot use: the command's one line (run_command),
    as for every bench command, before any graph is read."""
    assert M.main(["--graph", "uspowergrid", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"chain_model.py: {line}\n" and captured.out == ""


def test_the_chains_round_trips_and_the_cost_on_a_path():
    """On a path one lane follows every chain: a followed vertex of one out-edge costs its range
    and one step (1 + 2 round trips), the last vertex (no out-edge) its range only; the cost is
    ITERATION_ROUND_TRIPS an iteration plus those."""
    n, hops = 500, 4
    src = np.arange(n - 1)
    start = _compute_start(n, src, src + 1, np.ones(n - 1, dtype=np.int64), delta=10**9)
    counts, _ = M.simulate(start, hops, threads=4096)
    assert counts.iterations == 100 and counts.followed == 99 * hops + 4
    assert counts.chain_round_trips == 99 * 3 * hops + (3 + 3 + 3 + 1)
    assert M.cost(counts) == 100 * M.ITERATION_ROUND_TRIPS + counts.chain_round_trips
    plain, _ = M.simulate(start, 0, threads=4096)
    assert plain.chain_round_trips == 0 and M.cost(plain) == n * M.ITERATION_ROUND_TRIPS
    text = M.table({0: plain, hops: counts}, {0: [n], hops: [100]}, 1)
    assert text.splitlines()[1].split()[-1] == "1.00"
    assert float(text.splitlines()[2].split()[-1]) == pytest.approx(M.cost(counts) / M.cost(plain), abs=0.005)


def test_chains_run_only_in_lists_short_enough_for_the_widest_group():
    """kernels.cuh push_list's rule, modelled: a source with 8 leaves, each the start of a path of
    10 more vertices, 4 hops. Over 4,096 threads every list gets groups of 32 lanes: iteration 1
    follows each leaf's chain to its 4th path vertex, iteration 2 from there to the 9th, iteration
    3 pushes the last: 3 iterations. Over 64 threads the 8-vertex lists get groups of 8 lanes, so
    only iteration 1 (a list of one) follows chains; the rest advance a vertex an iteration: 8."""
    length, hops = 10, 4
    n, src, dst = H.leaves_with_paths(8, length)
    start = _compute_start(n, src, dst, np.ones(src.size, dtype=np.int64), delta=10**9)
    assert M.simulate(start, hops, threads=4096)[0].iterations == 3
    assert M.simulate(start, hops, threads=64)[0].iterations == 8
    assert M.simulate(start, 0, threads=64)[0].iterations == length + 2


def test_a_batch_the_gate_lacks_is_one_line_and_exit_2(monkeypatch, capsys):
    """--batch names a batch the prepared gate does not have: the command's one line (it was a
    SystemExit with a message, which run_command turned into a ValueError traceback)."""
    from types import SimpleNamespace

    from bench import prepare

    monkeypatch.setattr(prepare, "prepare_gate",
                        lambda *args, **kwargs: SimpleNamespace(batches={"safe50k": None, "local10k": None}))
    assert M.main(["--graph", "uspowergrid", "--batch", "nope"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "chain_model.py: --batch nope: uspowergrid has no such batch (it has local10k, safe50k)\n"


# -- the --json file ----------------------------------------------------------------------------
@pytest.fixture
def modelled(monkeypatch):
    """No graph read nor chain modelled: the writing of --json alone is under test."""
    monkeypatch.setattr(M, "_starts_for", lambda args: [])
    monkeypatch.setattr(M, "model", lambda starts, hops, max_degree, threads, max_shift: ({}, {}, True))
    monkeypatch.setattr(M, "table", lambda totals, iterations, runs: "| table |")


def test_the_json_file_holds_the_counts(modelled, tmp_path, capsys):
    path = tmp_path / "counts.json"
    assert M.main(["--graph", "g", "--stream", "2", "--batch-size", "8", "--threads", "0", "--json", str(path)]) == 0
    record = {"graph": "g", "what": "2 stream batches of 8", "runs": 0, "max_degree": M.DEFAULT_MAX_DEGREE,
              "threads": 0, "max_shift": M.MAX_SHIFT, "same_distances": True, "counts": {}, "iterations": {}}
    assert path.read_text() == json.dumps(record, indent=2) + "\n"


def test_an_interrupted_json_write_keeps_the_earlier_file(modelled, tmp_path, interrupted_write, capsys):
    path = interrupted_write.of(tmp_path / "counts.json")
    assert M.main(["--graph", "g", "--stream", "2", "--json", str(path)]) == ExitCode.ENVIRONMENT
    interrupted_write.check_kept()
    captured = capsys.readouterr()
    assert "| table |" in captured.out  # printed whatever the file
    assert captured.err == f"chain_model.py: cannot write {path}: No space left on device\n"


def test_a_json_file_that_cannot_be_written_is_refused_before_modelling(monkeypatch, tmp_path, capsys):
    """--json below a file: one line naming it (exit 2), no traceback, and no graph read."""
    monkeypatch.setattr(M, "_starts_for", lambda args: pytest.fail("modelled before the check"))
    (tmp_path / "file").write_text("")
    path = tmp_path / "file" / "counts.json"
    assert M.main(["--graph", "g", "--stream", "2", "--json", str(path)]) == ExitCode.USAGE
    captured = capsys.readouterr()
    assert captured.err == f"chain_model.py: --json {path}: cannot write there ({path.parent} is not a folder)\n"
    assert captured.out == ""


def test_a_defect_outranks_a_failed_json_write(modelled, monkeypatch, tmp_path, interrupted_write, capsys):
    """A setting that ends with other distances and a --json that cannot be written: exit 1 (the
    defect), with the write's line."""
    monkeypatch.setattr(M, "model", lambda starts, hops, max_degree, threads, max_shift: ({}, {}, False))
    path = interrupted_write.of(tmp_path / "counts.json")
    assert M.main(["--graph", "g", "--stream", "2", "--json", str(path)]) == ExitCode.CORRECTNESS
    captured = capsys.readouterr()
    assert "DEFECT" in captured.out and "cannot write" in captured.err
