"""bench/stream.py on the CPU: the stream of batches, the statistics, the host-only run end to end,
the mismatch check and the refusals. No assertion reads the real clock (structure, not speed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bench import stream
from bench.generators import both_directions
from engines import Graph

SMALL_N = 300


def _random_edges(n=SMALL_N, pairs=900, seed=5):
    """Distinct undirected pairs (u < v) of a random graph."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n, size=4 * pairs)
    v = rng.integers(0, n, size=4 * pairs)
    keys = np.unique(np.minimum(u, v)[u != v] * n + np.maximum(u, v)[u != v])[:pairs]
    return keys // n, keys % n


def _symmetric_graph(n=SMALL_N):
    u, v = _random_edges(n)
    src, dst = both_directions(u, v)
    weights = np.random.default_rng(1).integers(1, 101, size=(src.size, 3))
    return Graph.from_edges(src, dst, weights, num_vertices=n)


def _arcs(graph):
    src = np.repeat(np.arange(graph.num_vertices), np.diff(np.asarray(graph.row_ptr, dtype=np.int64)))
    return src, np.asarray(graph.col_ind, dtype=np.int64)


def _stream(graph, count=40, size=16, seed=3):
    src, dst = _arcs(graph)
    return stream.stream_batches(graph.num_vertices, src, dst, graph.num_weights, count=count, size=size, seed=seed)


def _pairs(a, b):
    return list(zip(np.asarray(a).tolist(), np.asarray(b).tolist()))


@pytest.fixture
def edge_file(tmp_path):
    """A 300-vertex random graph as an edge list (1-based, each undirected edge once)."""
    u, v = _random_edges()
    path = tmp_path / "small.edges"
    path.write_text("".join(f"{a + 1} {b + 1}\n" for a, b in zip(u.tolist(), v.tolist())))
    return path


# -- the stream ----------------------------------------------------------------------------------
def test_every_batch_deletes_existing_edges_and_inserts_pairs_in_both_directions():
    graph = _symmetric_graph()
    batches = _stream(graph, count=40, size=16)
    assert len(batches) == 40
    for item in batches:
        b = item.batch
        assert len(b) == 16 and b.num_deletions == 8 and b.num_insertions == 8
        deleted = _pairs(b.delete_src, b.delete_dst)
        inserted = _pairs(b.insert_src, b.insert_dst)
        # each undirected change is its two arcs, one after the other
        assert deleted[0::2] == [(v, u) for u, v in deleted[1::2]]
        assert inserted[0::2] == [(v, u) for u, v in inserted[1::2]]
        assert len({frozenset(p) for p in deleted}) == 4 and len({frozenset(p) for p in inserted}) == 4
        assert all(u != v for u, v in inserted)
        w = np.asarray(b.insert_weights)
        assert w.shape == (8, 3) and w.min() >= 1 and w.max() <= 100
        # deletions only of arcs that exist at this point of the stream
        src, dst = _arcs(graph)
        existing = set(_pairs(src, dst))
        assert set(deleted) <= existing
        assert item.new_arcs == sum(p not in existing for p in inserted)
        summary, _ = graph.apply(b)
        assert summary.deleted_edges == 8 and summary.ignored_deletions == 0
        assert summary.inserted_edges == item.new_arcs and summary.updated_edges == item.reweights


def test_the_stream_is_fixed_by_its_seed():
    graph = _symmetric_graph()
    first, again, other = _stream(graph), _stream(graph), _stream(graph, seed=4)
    fields = ("insert_src", "insert_dst", "insert_weights", "delete_src", "delete_dst")
    for a, b in zip(first, again):
        assert all(np.array_equal(getattr(a.batch, f), getattr(b.batch, f)) for f in fields)
    assert any(not np.array_equal(a.batch.delete_src, b.batch.delete_src) for a, b in zip(first, other))


def test_a_reinserted_pair_becomes_deletable_and_parallel_arcs_keep_a_pair():
    # arcs: 0<->1 twice (parallel), 1<->2 once, 2->3 only one way (not deletable)
    state = stream.StreamState(4, np.array([0, 0, 1, 1, 1, 2, 2]), np.array([1, 1, 0, 0, 2, 1, 3]))
    assert sorted(state.pool) == [0 * 4 + 1, 1 * 4 + 2]
    state.delete(0, 1)
    assert 0 * 4 + 1 in state.where  # one copy of each arc is left
    state.delete(0, 1)
    assert 0 * 4 + 1 not in state.where
    assert state.insert(0, 1) == 2 and 0 * 4 + 1 in state.where
    assert state.insert(0, 1) == 0  # a re-weight
    assert state.insert(3, 2) == 1 and 2 * 4 + 3 in state.where


def test_a_graph_too_small_for_the_batch_is_refused():
    graph = Graph.from_edges([0, 1], [1, 0], np.ones((2, 3), dtype=np.int64), num_vertices=3)
    with pytest.raises(stream.UsageError, match="fewer than the 2"):
        _stream(graph, count=1, size=8)


# -- statistics ----------------------------------------------------------------------------------
def test_summary_of_a_known_list():
    values = list(range(100, 0, -1))  # 1 .. 100, unsorted
    s = stream.summarize(values)
    assert s["count"] == 100 and s["median_ms"] == 50.5 and s["mean_ms"] == 50.5
    assert s["p99_ms"] == pytest.approx(99.01) and s["min_ms"] == 1 and s["max_ms"] == 100
    assert stream.summarize([7.0])["p99_ms"] == 7.0
    assert stream.summarize([])["median_ms"] is None


def test_tree_difference_names_what_differs():
    d, p = np.arange(5, dtype=np.int64), np.arange(5, dtype=np.int32)
    assert stream.tree_difference((d, p), (d.copy(), p.copy())) is None
    bad = d.copy()
    bad[3] += 1
    assert "distances differ at 1 vertices (first: vertex 3" in stream.tree_difference((bad, p), (d, p))
    assert "parents are int64" in stream.tree_difference((d, p.astype(np.int64)), (d, p))


# -- the command, host only ----------------------------------------------------------------------
@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(stream, "cuda_available", lambda: False)


def _run_file(edge_file, tmp_path, *extra):
    out = tmp_path / "out"
    argv = ["--graph-file", str(edge_file), "--batches", "30", "--batch-size", "8", "--warmup", "5",
            "--cache-dir", str(tmp_path / "cache"), "--out", str(out), "--no-progress", *extra]
    return stream.main(argv), out


def test_host_run_end_to_end_on_a_graph_file(no_cuda, edge_file, tmp_path, capsys):
    code, out = _run_file(edge_file, tmp_path)
    assert code == 0
    err = capsys.readouterr().err
    assert "measuring the host reference only" in err and "Traceback" not in err
    record = json.loads((out / "stream.json").read_text())
    assert list(record["engines"]) == ["host"]
    host = record["engines"]["host"]
    times = np.load(out / host["per_batch_file"])["host"]  # every batch, warm-up included
    assert len(times) == 30 and host["summary"]["count"] == 25
    assert all(t >= 0 for t in times)
    assert host["summary"]["median_ms"] == pytest.approx(float(np.median(times[5:])))
    assert host["summary"]["median_ms"] <= host["summary"]["p99_ms"] <= host["summary"]["max_ms"]
    assert record["stream"] == {"batches": 30, "batch_size": 8, "warmup": 5, "seed": stream.DEFAULT_SEED,
                                "new_arcs": record["stream"]["new_arcs"],
                                "reweights": record["stream"]["reweights"], "deleted_arcs": 120}
    assert record["stream"]["new_arcs"] + record["stream"]["reweights"] == 120
    assert record["graph"]["name"] == "small" and record["graph"]["vertices"] == SMALL_N
    assert record["check"] == {"reference": "host", "equal": True, "differences": {}}
    assert record["command"].startswith("python bench/stream.py --graph-file ")
    assert "commit" in record["commit"] and "platform" in record["machine"]
    table = (out / "stream.md").read_text()
    assert "| host | 25 |" in table and "reference" in table


def test_host_run_on_the_shared_power_grid(no_cuda, shared_graphs_dir, tmp_path):
    out = tmp_path / "out"
    code = stream.run(graph="uspowergrid", batches=12, batch_size=100, warmup=2, engines=["host"], out=out,
                      data_dir=shared_graphs_dir, cache_dir=tmp_path / "cache", progress=False)
    assert code == 0
    record = json.loads((out / "stream.json").read_text())
    assert record["graph"]["vertices"] == 4_941 and record["engines"]["host"]["summary"]["count"] == 10


def test_a_result_that_differs_from_the_host_reference_is_exit_1(monkeypatch, edge_file, tmp_path, capsys):
    """A CUDA engine stands in for itself on the host (its run is the host reference's, its final
    tree then spoiled at one vertex): the check must catch it."""
    monkeypatch.setattr(stream, "cuda_available", lambda: True)
    monkeypatch.setattr(stream, "fused_problem", lambda: None)
    real_run_engine = stream.run_engine

    def spoiled(engine, data, batches, objective, progress, **kwargs):
        run = real_run_engine("host", data, batches, objective, progress, **kwargs)
        if engine == "fused":
            run.tree[1][7] = (run.tree[1][7] + 1) % SMALL_N
        return run

    monkeypatch.setattr(stream, "run_engine", spoiled)
    code, out = _run_file(edge_file, tmp_path, "--engines", "fused", "operators", "host")
    assert code == 1
    err = capsys.readouterr().err
    assert "MISMATCH: fused differs from host after 30 batches: parents differ at 1 vertices (first: vertex 7" in err
    assert "operators" not in err.split("MISMATCH")[-1]
    record = json.loads((out / "stream.json").read_text())
    assert record["check"]["equal"] is False and list(record["check"]["differences"]) == ["fused"]
    assert "| fused | 25 |" in (out / "stream.md").read_text()


# -- refusals ------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, words", [
    (["--graph", "nowhere"], "unknown gate"),
    ([], "name one graph"),
    (["--graph", "uspowergrid", "--graph-file", "x.edges"], "name one graph"),
    (["--graph-file", "/no/such/file.edges"], "no such file"),
    (["--graph", "uspowergrid", "--batch-size", "6"], "multiple of 4"),
    (["--graph", "uspowergrid", "--batch-size", "0"], "multiple of 4"),
    (["--graph", "uspowergrid", "--batches", "0"], "at least 1"),
    (["--graph", "uspowergrid", "--batches", "5", "--warmup", "5"], "--warmup 5"),
    (["--graph", "uspowergrid", "--batches", "many"], "invalid int value"),
    (["--graph", "uspowergrid", "--engines", "host", "gpu"], "--engines host gpu"),
    (["--graph", "uspowergrid", "--engines", "host", "host"], "at most once"),
    (["--graph", "uspowergrid", "--seed", "-1"], "--seed -1: expected an integer >= 0"),
])
def test_usage_errors_are_one_line_and_exit_2(no_cuda, argv, words, capsys):
    assert stream.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("stream.py: ") and words in err


def test_an_unreadable_graph_file_is_exit_2(no_cuda, tmp_path, capsys):
    bad = tmp_path / "bad.edges"
    bad.write_text("1 2\nthree four\n")
    assert stream.main(["--graph-file", str(bad), "--cache-dir", str(tmp_path / "c"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "bad.edges" in line]
    assert len(lines) == 1 and lines[0].startswith("stream.py: ") and "line 2" in lines[0]
    assert "Traceback" not in err


def test_a_cuda_engine_without_cuda_is_exit_3(no_cuda, capsys):
    assert stream.main(["--graph", "uspowergrid", "--engines", "fused", "host"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no CUDA GPU is usable here" in err


# -- interleaved ---------------------------------------------------------------------------------
def test_paired_ratios_of_a_constant_ratio():
    a = np.linspace(1.0, 3.0, 50)
    paired = stream.paired_ratios({"fused": list(a), "operators": list(1.25 * a)}, warmup=0)
    assert list(paired) == ["operators/fused"]
    r = paired["operators/fused"]
    assert r["a"] == "fused" and r["b"] == "operators" and r["pairs"] == 50
    assert r["median"] == pytest.approx(1.25)
    assert r["lo"] == pytest.approx(1.25) and r["hi"] == pytest.approx(1.25)
    from protocol.stats import MIN_RESAMPLES

    assert r["resamples"] == MIN_RESAMPLES and r["seed"] == 0  # paired_ratio's own, recorded


def test_paired_ratios_skip_the_warmup_and_pair_in_engines_order():
    # warm-up batches at a ratio of 100 must not count; the timed ratios are 1 .. 9 (median 5)
    a = [1.0] * 13
    b = [100.0] * 4 + [float(k) for k in (3, 1, 9, 5, 7, 2, 8, 4, 6)]
    paired = stream.paired_ratios({"host": b, "fused": a, "operators": a}, warmup=4)  # names out of order
    assert list(paired) == ["operators/fused", "host/fused", "host/operators"]
    r = paired["host/fused"]
    assert r["pairs"] == 9 and r["median"] == 5.0
    assert 1.0 <= r["lo"] < 5.0 < r["hi"] <= 9.0
    numbers = ("median", "lo", "hi", "pairs")  # a fixed seed: the same times, the same interval
    assert [paired["host/fused"][k] for k in numbers] == [paired["host/operators"][k] for k in numbers]
    assert paired["operators/fused"]["median"] == paired["operators/fused"]["lo"] == 1.0


def _balance(orders, engines):
    """Over ``orders``: how often each engine holds each position, and how often each ordered pair
    (X immediately followed by Y) appears within an order."""
    from collections import Counter

    positions = Counter((e, k) for order in orders for k, e in enumerate(order))
    successors = Counter((x, y) for order in orders for x, y in zip(order, order[1:]))
    return ({(e, k): positions[(e, k)] for e in engines for k in range(len(engines))},
            {(x, y): successors[(x, y)] for x in engines for y in engines if x != y})


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 6])
def test_the_interleaved_orders_balance_positions_and_successors(count):
    engines = ["fused", "operators", "host", "d", "e", "f"][:count]
    design = stream.order_design(count)
    period = len(design)
    orders = [stream.batch_order(engines, i) for i in range(period)]
    assert all(sorted(order) == sorted(engines) for order in orders)  # each engine once per batch
    positions, successors = _balance(orders, engines)
    assert set(positions.values()) == {period // count}  # every engine equally often in every position
    if count > 1:  # every ordered pair equally often right after one another
        assert set(successors.values()) == {period * (count - 1) // (count * (count - 1))}
    # one order, AB and BA, then 2 * count (the shortest chained cycles: see below)
    assert period == (count if count <= 2 else 2 * count)


def _carryover(orders, engines):
    """Over one cycle of ``orders`` run back to back (every batch's runs in one sequence, the last
    run followed by the first): how often each engine is preceded by each engine, itself included
    (batch boundaries counted), and how often each engine holds each position of a batch."""
    from collections import Counter

    runs = [e for order in orders for e in order]
    preceded = Counter(zip(runs[-1:] + runs[:-1], runs))  # (before, after), the wrap included
    positions = Counter((e, k) for order in orders for k, e in enumerate(order))
    return ({(x, y): preceded[(x, y)] for x in engines for y in engines},
            {(e, k): positions[(e, k)] for e in engines for k in range(len(engines))})


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 6, 7, 8])
def test_the_orders_run_back_to_back_are_balanced_across_batch_boundaries(count):
    engines = [f"e{k}" for k in range(count)]
    period = len(stream.order_design(count))
    orders = [stream.batch_order(engines, i) for i in range(period)]
    assert all(sorted(order) == sorted(engines) for order in orders)  # each engine once per batch
    preceded, positions = _carryover(orders, engines)
    # exhaustive counts over one cycle: every one of the count**2 (before, after) pairs, itself
    # included, period / count times; every engine in every position period / count times
    assert sum(preceded.values()) == period * count and set(preceded.values()) == {period // count}
    assert set(positions.values()) == {period // count}
    # every boundary repeats an engine: each order starts with the engine that ended the one before
    assert all(orders[i][0] == orders[i - 1][-1] for i in range(period))
    # the same over any whole number of cycles, from any batch on (batch i takes order i mod period)
    later = [stream.batch_order(engines, i) for i in range(3, 3 + 2 * period)]
    assert set(_carryover(later, engines)[0].values()) == {2 * period // count}
    assert period == (1 if count == 1 else 2 if count == 2 else 2 * count)


def _row_complete_squares(count):
    """Every set of ``count`` orders that puts every engine in every position once and every ordered
    pair X != Y next to one another once (a row-complete Latin square), by exhaustive search: the
    order starting with engine r is the r-th (any such set has one order per first engine)."""
    from itertools import permutations

    orders = list(permutations(range(count)))
    found = []

    def extend(rows, pairs):
        if len(rows) == count:
            found.append(list(rows))
            return
        for order in orders:
            if order[0] != len(rows) or any(order[k] == row[k] for row in rows for k in range(count)):
                continue
            adjacent = set(zip(order, order[1:]))
            if not adjacent & pairs:
                extend(rows + [order], pairs | adjacent)

    extend([], set())
    return found


@pytest.mark.parametrize("count", [3, 4, 5])
def test_no_shorter_cycle_is_balanced_across_boundaries(count):
    # a balanced cycle needs every boundary to repeat an engine (count engines, each preceded by
    # itself as often as by any other: period / count self-pairs per engine, one per boundary), and
    # a multiple of count orders; count orders would be a row-complete Latin square whose orders
    # chain first -> last into one cycle. Exhaustively: none of order 3 or 5; order 4 has six, each
    # ending 2 after where it starts (two cycles of two). So the design's 2 * count is the shortest.
    squares = _row_complete_squares(count)
    assert len(squares) == {3: 0, 4: 6, 5: 0}[count]
    for square in squares:
        successor = {row[0]: row[-1] for row in square}
        assert all(successor[successor[r]] == r for r in range(count))  # never one cycle of four
        assert not any(set(_carryover(rows, range(count))[0].values()) == {1}
                       for rows in _permuted(square))
    assert len(stream.order_design(count)) == 2 * count


def _permuted(square):
    from itertools import permutations

    return (list(rows) for rows in permutations(square))


def test_the_plain_williams_orders_are_not_balanced_across_boundaries():
    # the check above can fail: cycled as they come, Williams's orders for three engines (a square
    # and its rows reversed) give each engine 6 predecessors but not 2 of each engine
    plain = [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["c", "b", "a"], ["a", "c", "b"], ["b", "a", "c"]]
    preceded, positions = _carryover(plain, ["a", "b", "c"])
    assert set(positions.values()) == {2} and set(preceded.values()) != {2}
    assert preceded[("c", "c")] == 0 and preceded[("c", "a")] == 3 and preceded[("a", "b")] == 2
    # two engines alternating AB, AB, ...: every run after the other engine, but A always first
    preceded, positions = _carryover([["a", "b"], ["a", "b"]], ["a", "b"])
    assert preceded[("a", "a")] == 0 and positions[("a", 0)] == 2
    # four engines: Williams's square alone cannot chain (each order ends 2 after its start)
    square = [[(k + r) % 4 for k in (0, 1, 3, 2)] for r in range(4)]
    assert all(set(_carryover(rows, range(4))[0].values()) != {1} for rows in _permuted(square))


def test_the_cyclic_rotation_of_three_engines_would_not_be_balanced():
    # the check above can fail: with the old cyclic rotation (batch i starts with engine i mod 3)
    # each engine always follows the same other one (b after a twice, a after b never)
    orders = [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    _, successors = _balance(orders, ["a", "b", "c"])
    assert successors[("a", "b")] == 2 and successors[("b", "a")] == 0


def test_the_order_of_a_batch_is_fixed_by_its_index():
    engines = ["fused", "operators", "host"]
    first = [stream.batch_order(engines, i) for i in range(20)]
    assert first == [stream.batch_order(list(engines), i) for i in range(20)]  # reproducible
    # Williams's six orders, chained: each starts with the engine that ended the one before
    assert first[:6] == [["fused", "operators", "host"], ["host", "fused", "operators"],
                         ["operators", "host", "fused"], ["fused", "host", "operators"],
                         ["operators", "fused", "host"], ["host", "operators", "fused"]]
    assert first[6:12] == first[:6] and first[12:18] == first[:6]  # batch i takes order i mod 6
    assert len({tuple(o) for o in first[:6]}) == 6  # for three engines: all six permutations
    assert [stream.batch_order(["a", "b"], i) for i in range(4)] == [["a", "b"], ["b", "a"]] * 2
    assert stream.batch_order(["solo"], 7) == ["solo"]
    with pytest.raises(ValueError):
        stream.order_design(0)


@pytest.fixture
def two_hosts(monkeypatch):
    """Two engine names both backed by the host reference: the only engine without a GPU."""
    host = stream.ENGINE_CONFIGS["host"]
    monkeypatch.setattr(stream, "ENGINE_CONFIGS", {"first": host, "second": host})
    monkeypatch.setattr(stream, "ENGINES", ("first", "second"))
    monkeypatch.setattr(stream, "CUDA_ENGINES", ())
    monkeypatch.setattr(stream, "cuda_available", lambda: False)


def test_interleaved_run_rotates_and_every_engine_applies_every_batch_once(two_hosts, monkeypatch, edge_file,
                                                                          tmp_path):
    from engines import sssp

    calls, engine_of_graph, batch_index = [], {}, {}
    real_open, real_update, real_stream = stream.open_engine, sssp.update, stream.stream_batches

    def open_engine(engine, data, objective):
        graph, result = real_open(engine, data, objective)
        engine_of_graph[id(graph)] = engine
        return graph, result

    def stream_batches(*args, **kwargs):
        batches = real_stream(*args, **kwargs)
        batch_index.update({id(item.batch): i for i, item in enumerate(batches)})
        return batches

    def update(graph, batch, result, *args, **kwargs):
        calls.append((engine_of_graph[id(graph)], batch_index[id(batch)]))
        return real_update(graph, batch, result, *args, **kwargs)

    monkeypatch.setattr(stream, "open_engine", open_engine)
    monkeypatch.setattr(stream, "stream_batches", stream_batches)
    monkeypatch.setattr(sssp, "update", update)
    code, out = _run_file(edge_file, tmp_path, "--engines", "first", "second", "--interleave")
    assert code == 0
    # batch by batch, the two orders of the design in turn: AB, BA, AB, ...
    assert calls == [(e, i) for i in range(30) for e in (("first", "second") if i % 2 == 0 else ("second", "first"))]
    for engine in ("first", "second"):
        assert [i for e, i in calls if e == engine] == list(range(30))
    record = json.loads((out / "stream.json").read_text())
    assert record["stream"]["order"] == "interleaved"
    design = record["stream"]["order_design"]
    assert design.pop("carryover").startswith("balanced across batch boundaries: each order starts with the engine "
                                              "that ended the order before")
    assert design == {
        "name": "williams-serial", "orders": [["first", "second"], ["second", "first"]],
        "rule": "batch i takes order i mod len(orders)", "per_cycle": {"in_each_position": 1, "after_each_engine": 1}}
    assert record["check"] == {"reference": "first", "equal": True, "differences": {}}  # equal final trees
    times = np.load(out / stream.TIMES_NAME)
    assert len(times["first"]) == len(times["second"]) == 30
    assert {e: r["summary"]["count"] for e, r in record["engines"].items()} == {"first": 25, "second": 25}
    r = record["paired"]["second/first"]
    assert r["pairs"] == 25 and r["lo"] <= r["median"] <= r["hi"]
    assert r["median"] == pytest.approx(float(np.median(times["second"][5:] / times["first"][5:])))
    table = (out / "stream.md").read_text()
    assert "| engine B / engine A | batches | median ratio | 95 % CI |" in table and "| second/first | 25 |" in table
    assert "the orders of a serially balanced Williams design in turn" in table
    assert "itself included, batch boundaries counted" in table
    # a record from before the chained orders (design "williams", no "carryover") reads as it did
    record["stream"]["order_design"] = {"name": "williams", "orders": [["first", "second"], ["second", "first"]],
                                        "rule": "batch i takes order i mod len(orders)"}
    old = stream.markdown(record)
    assert ("Engines interleaved batch by batch (the orders of a Williams design in turn: every engine equally "
            "often in each position and after each other engine); engine B / engine A per batch") in old
    assert "serially" not in old and "| second/first | 25 |" in old


def test_the_interleaved_final_trees_are_checked(two_hosts, monkeypatch, edge_file, tmp_path, capsys):
    real_final_tree = stream.final_tree
    spoiled = []

    def final_tree(result):
        distances, parents = real_final_tree(result)
        if spoiled:  # the second engine's tree (engines are read in --engines order)
            parents = parents.copy()
            parents[7] = (parents[7] + 1) % SMALL_N
        spoiled.append(True)
        return distances, parents

    monkeypatch.setattr(stream, "final_tree", final_tree)
    code, out = _run_file(edge_file, tmp_path, "--engines", "first", "second", "--interleave")
    assert code == 1
    err = capsys.readouterr().err
    assert "MISMATCH: second differs from first after 30 batches: parents differ at 1 vertices" in err


def test_a_sequential_record_has_no_paired_ratios(two_hosts, edge_file, tmp_path):
    code, out = _run_file(edge_file, tmp_path, "--engines", "first", "second")
    assert code == 0
    record = json.loads((out / "stream.json").read_text())
    assert "paired" not in record and "order" not in record["stream"] and "order_design" not in record["stream"]
    assert "engine B / engine A" not in (out / "stream.md").read_text()


def test_the_record_names_the_host_cpu():
    # a small update's call is mostly host work: the CPU that ran it belongs in the record and the
    # markdown (protocol.environment owns how it is read)
    from protocol.environment import cpu_model

    from bench.stream import machine_facts

    facts = machine_facts(False)
    assert facts["cpu_model"] == cpu_model() and facts["cpu_model"]


def test_the_record_and_the_markdown_carry_the_host_probe(no_cuda, monkeypatch, edge_file, tmp_path):
    # the CPU's name does not say its speed (the same code's median differed 1.5x between lent
    # machines): the record keeps protocol.environment.host_probe's figures, the markdown prints them
    from protocol import environment

    probe = {"python_call_us": 0.3125, "numpy_call_us": 18.25, "calls": 1000, "repeats": 7, "array_size": 100,
             "timer": "time.perf_counter_ns", "python_runs_ns": [312_500] * 7, "numpy_runs_ns": [18_250_000] * 7}
    monkeypatch.setattr(environment, "host_probe", lambda: dict(probe))
    monkeypatch.setattr(environment, "cpu_model", lambda: "Fake CPU 9000")
    code, out = _run_file(edge_file, tmp_path)
    assert code == 0
    record = json.loads((out / "stream.json").read_text())
    assert record["machine"]["host_probe"] == probe
    table = (out / "stream.md").read_text()
    assert ("Machine: no GPU, Fake CPU 9000 (host probe: 0.31 µs a Python call, 18.2 µs a small NumPy call; "
            "median of 7 runs of 1,000 calls)") in table
    # a record from before the probe still renders, without it
    del record["machine"]["host_probe"]
    assert stream.markdown(record).rstrip().endswith("Machine: no GPU, Fake CPU 9000")


def test_the_real_host_probe_is_in_the_machine_facts():
    from bench.stream import machine_facts

    probe = machine_facts(False)["host_probe"]
    assert probe["timer"] == "time.perf_counter_ns" and probe["python_call_us"] > 0 and probe["numpy_call_us"] > 0


def test_the_host_probe_is_taken_before_the_timed_batches(no_cuda, monkeypatch, edge_file, tmp_path):
    """The probe describes the host as the batches found it: run() takes it before the first
    update() call, not after the stream (when the host's state may have changed)."""
    from engines import sssp
    from protocol import environment

    events = []
    monkeypatch.setattr(environment, "host_probe", lambda: events.append("probe") or {"python_call_us": 1.0,
                        "numpy_call_us": 2.0, "calls": 1, "repeats": 1, "array_size": 100, "timer": "fake",
                        "python_runs_ns": [1000], "numpy_runs_ns": [2000]})
    update = sssp.update
    monkeypatch.setattr(sssp, "update", lambda *a, **k: events.append("update") or update(*a, **k))
    code, out = _run_file(edge_file, tmp_path)
    assert code == 0
    assert events[0] == "probe" and events.count("probe") == 1 and "update" in events
    assert json.loads((out / "stream.json").read_text())["machine"]["host_probe"]["timer"] == "fake"


# -- the files written ---------------------------------------------------------------------------
def test_the_record_and_its_table_are_written_whole(monkeypatch, tmp_path):
    monkeypatch.setattr(stream, "markdown", lambda record: f"| table of {record['graph']} |\n")
    record = {"graph": "g", "engines": {"host": {"summary": {"median_ms": 1.5}}}}
    stream.write_outputs(tmp_path, record, {"host": [1.0, 2.0]})
    assert (tmp_path / "stream.json").read_text() == json.dumps(record, indent=1)
    assert (tmp_path / "stream.md").read_text() == "| table of g |\n"
    assert list(np.load(tmp_path / stream.TIMES_NAME)["host"]) == [1.0, 2.0]


@pytest.mark.parametrize("name", ["stream.json", "stream.md"])
def test_an_interrupted_write_keeps_the_earlier_record(name, monkeypatch, tmp_path, interrupted_write):
    monkeypatch.setattr(stream, "markdown", lambda record: "| table |\n")
    interrupted_write.of(tmp_path / name)
    with pytest.raises(OSError, match="No space left on device"):
        stream.write_outputs(tmp_path, {"graph": "g"}, {"host": [1.0]})
    interrupted_write.check_kept()


def test_the_records_commit_is_the_projects_git_state_without_the_streams_folder(monkeypatch, tmp_path):
    """One owner of "which code made this record": protocol.environment.git_state, the stream's own
    --out folder left out (results/stream inside the checkout would otherwise make it dirty)."""
    from bench import stream
    from protocol import environment

    asked = []
    monkeypatch.setattr(environment, "git_state", lambda exclude=(): asked.append(exclude) or {"commit": "abc", "dirty": False})
    assert stream.commit_of_checkout(tmp_path / "out") == {"commit": "abc", "dirty": False}
    assert stream.commit_of_checkout() == {"commit": "abc", "dirty": False}
    assert asked == [(tmp_path / "out",), ()]


# -- an interrupted stream -----------------------------------------------------------------------
def _run_interrupted(edge_file, tmp_path, *extra):
    """_run_file, an interrupt that escapes the command failing the test (not stopping pytest)."""
    try:
        return _run_file(edge_file, tmp_path, *extra)
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped stream.main")


@pytest.fixture
def unhandled_signals():
    """SIGINT and SIGTERM fail the test unless the stream takes them over (without it, a stream
    that does not handle them would stop pytest, or kill it on SIGTERM)."""
    import signal

    def unhandled(signum, frame):
        raise AssertionError(f"the stream did not take {signal.Signals(signum).name}")

    previous = {signum: signal.signal(signum, unhandled) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _interrupt_after(monkeypatch, calls, how):
    """Wrap stream.timed_update: after ``calls`` calls, ``how`` (a signal sent to this process
    after the call returned: the stream stops at the next batch boundary), or ``"inside"`` (the
    next call raises KeyboardInterrupt instead of applying its batch: a second Ctrl-C landing
    inside update())."""
    import signal

    real = stream.timed_update
    count = [0]

    def timed_update(*args, **kwargs):
        if how == "inside" and count[0] == calls:
            raise KeyboardInterrupt
        out = real(*args, **kwargs)
        count[0] += 1
        if how != "inside" and count[0] == calls:
            signal.raise_signal(how)
        return out

    monkeypatch.setattr(stream, "timed_update", timed_update)
    return count


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_mid_stream_writes_a_partial_record_of_the_completed_batches(unhandled_signals, no_cuda, monkeypatch,
                                                                             edge_file, tmp_path, capsys, signame):
    import signal

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    _interrupt_after(monkeypatch, 12, getattr(signal, signame))
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 130
    assert {s: signal.getsignal(s) for s in before} == before  # the handlers are given back
    err = capsys.readouterr().err
    assert f"interrupted ({signame}): batches completed of 30: host 12; partial record written to {out}" in err
    record = json.loads((out / "stream.json").read_text())
    assert record["partial"] is True
    interrupted = record["interrupted"]
    assert interrupted["signal"] == signame and interrupted["at"] == "during the timed batches"
    assert interrupted["planned_batches"] == 30 and interrupted["completed"] == {"host": 12}
    assert interrupted["cut_inside_batch"] == {} and interrupted["note"].startswith("partial record")
    host = record["engines"]["host"]
    assert host["partial"] == {"completed": 12, "planned": 30}
    assert host["summary"]["count"] == 7  # 12 batches less the 5 of the warm-up
    assert len(np.load(out / stream.TIMES_NAME)["host"]) == 12
    # the check covers exactly the 12 batches: the host run is the reference after them
    check = record["check"]
    assert check["done"] is True and check["prefix"] == {"host": 12} and check["equal"] is True
    assert check["replayed"] == [] and check["not_checked"] == {}
    table = (out / "stream.md").read_text()
    assert table.startswith("# Streaming benchmark: small (INTERRUPTED: partial record)")
    assert f"**Interrupted ({signame}, during the timed batches): a partial record.** Batches completed of 30 " \
           "planned: host 12." in table
    assert "covers exactly the completed batches: host after 12" in table
    assert "| host | 7 |" in table and "reference (after 12)" in table
    assert "Planned: 30 consecutive batches" in table


def test_the_partial_check_replays_the_host_reference_on_each_engines_prefix(unhandled_signals, two_hosts, monkeypatch,
                                                                            edge_file, tmp_path, capsys):
    """Sequential engines stopped in the second one's batch 12: the first completed all 30 and is
    checked after 30, the second after 12, each against the host reference replayed to that batch;
    a tree spoiled after 12 batches is caught (exit 1: a wrong answer outranks the interruption)."""
    import signal

    _interrupt_after(monkeypatch, 30 + 12, signal.SIGINT)
    code, out = _run_interrupted(edge_file, tmp_path, "--engines", "first", "second")
    assert code == 130
    record = json.loads((out / "stream.json").read_text())
    assert record["interrupted"]["completed"] == {"first": 30, "second": 12}
    check = record["check"]
    assert check["reference"] == "host" and check["prefix"] == {"first": 30, "second": 12}
    assert check["replayed"] == [12, 30] and check["equal"] is True
    assert "replayed off the clock on 30 batches (interrupt again to skip the check)" in capsys.readouterr().err

    real_final_tree = stream.final_tree
    spoiled = []

    def final_tree(result):
        distances, parents = real_final_tree(result)
        spoiled.append(True)
        if len(spoiled) == 2:  # the second engine's tree after its 12 batches
            parents = parents.copy()
            parents[7] = (parents[7] + 1) % SMALL_N
        return distances, parents

    monkeypatch.setattr(stream, "final_tree", final_tree)
    _interrupt_after(monkeypatch, 30 + 12, signal.SIGINT)
    code, out = _run_interrupted(edge_file, tmp_path, "--engines", "first", "second")
    assert code == 1
    err = capsys.readouterr().err
    assert "MISMATCH: second differs from host after 12 batches: parents differ at 1 vertices" in err
    record = json.loads((out / "stream.json").read_text())
    assert list(record["check"]["differences"]) == ["second"] and record["check"]["equal"] is False
    assert "| second | 7 | " in (out / "stream.md").read_text() and "NO (after 12)" in (out / "stream.md").read_text()


def test_an_interrupt_inside_an_update_keeps_the_completed_batches_and_checks_no_half_applied_engine(
        two_hosts, monkeypatch, edge_file, tmp_path, capsys):
    _interrupt_after(monkeypatch, 30 + 12, "inside")  # the second engine's 13th call raises
    code, out = _run_interrupted(edge_file, tmp_path, "--engines", "first", "second")
    assert code == 130
    record = json.loads((out / "stream.json").read_text())
    interrupted = record["interrupted"]
    assert interrupted["completed"] == {"first": 30, "second": 12}
    assert interrupted["cut_inside_batch"] == {"second": 12} and interrupted["signal"] == "SIGINT"
    assert record["engines"]["second"]["summary"]["count"] == 7
    assert record["engines"]["first"]["partial"] == {"completed": 30, "planned": 30}
    check = record["check"]
    assert check["prefix"] == {"first": 30} and check["equal"] is True
    assert check["not_checked"] == {"second": "interrupted inside its batch 12: its graph and result hold part of "
                                              "that batch"}
    times = np.load(out / stream.TIMES_NAME)
    assert len(times["first"]) == 30 and len(times["second"]) == 12
    table = (out / "stream.md").read_text()
    assert "second was cut inside batch 12 (not counted)" in table and "| second | 7 |" in table
    assert "not checked" in table


def test_an_engine_not_started_is_recorded_with_no_batch(unhandled_signals, two_hosts, monkeypatch,
        edge_file, tmp_path):
    import signal

    _interrupt_after(monkeypatch, 30, signal.SIGINT)  # after the first engine's last batch
    code, out = _run_interrupted(edge_file, tmp_path, "--engines", "first", "second")
    assert code == 130
    record = json.loads((out / "stream.json").read_text())
    assert record["interrupted"]["completed"] == {"first": 30, "second": 0}
    assert record["engines"]["second"]["summary"]["count"] == 0
    assert record["check"]["not_checked"] == {"second": "no batch completed"}
    assert record["check"]["prefix"] == {"first": 30}


def test_an_interrupted_interleaved_stream_pairs_the_batches_both_completed(unhandled_signals, two_hosts, monkeypatch,
        edge_file, tmp_path):
    import signal

    _interrupt_after(monkeypatch, 2 * 12 + 1, signal.SIGINT)  # inside batch 12: it is finished, then stop
    code, out = _run_interrupted(edge_file, tmp_path, "--engines", "first", "second", "--interleave")
    assert code == 130
    record = json.loads((out / "stream.json").read_text())
    assert record["interrupted"]["completed"] == {"first": 13, "second": 13}
    assert record["check"]["prefix"] == {"first": 13, "second": 13} and record["check"]["replayed"] == [13]
    assert record["paired"]["second/first"]["pairs"] == 8


def test_an_interrupt_during_the_check_says_it_was_not_done(unhandled_signals, no_cuda, monkeypatch,
        edge_file, tmp_path):
    import signal

    _interrupt_after(monkeypatch, 12, signal.SIGINT)

    def check_prefix(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(stream, "check_prefix", check_prefix)
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 130
    record = json.loads((out / "stream.json").read_text())
    assert record["check"]["done"] is False and record["check"]["equal"] is None
    assert record["interrupted"]["completed"] == {"host": 12}
    table = (out / "stream.md").read_text()
    assert "The check against the host reference was NOT done" in table and "| host | 7 |" in table
    assert "not checked" in table


def test_an_interrupt_while_the_trees_are_read_still_writes_the_record(unhandled_signals, no_cuda, monkeypatch,
                                                                        edge_file, tmp_path):
    import signal

    _interrupt_after(monkeypatch, 12, signal.SIGINT)

    def final_tree(result):  # read only after the interrupt: a further Ctrl-C lands in the read
        raise KeyboardInterrupt

    monkeypatch.setattr(stream, "final_tree", final_tree)
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 130
    record = json.loads((out / "stream.json").read_text())
    assert record["interrupted"]["completed"] == {"host": 12} and record["check"]["done"] is False
    assert len(np.load(out / stream.TIMES_NAME)["host"]) == 12


def test_a_signal_after_the_last_batch_still_ends_as_interrupted(unhandled_signals, no_cuda, monkeypatch,
        edge_file, tmp_path):
    import signal

    _interrupt_after(monkeypatch, 30, signal.SIGTERM)
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 130
    record = json.loads((out / "stream.json").read_text())
    assert record["interrupted"]["completed"] == {"host": 30}
    assert record["interrupted"]["at"] == "after the timed batches"
    assert record["interrupted"]["note"].startswith("interrupted: every engine applied every planned batch")
    assert record["check"]["prefix"] == {"host": 30}


def test_a_complete_record_is_not_marked_partial(no_cuda, edge_file, tmp_path):
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 0
    record = json.loads((out / "stream.json").read_text())
    assert "partial" not in record and "interrupted" not in record
    assert "partial" not in record["engines"]["host"]
    assert "INTERRUPTED" not in (out / "stream.md").read_text()


def test_the_markdown_of_a_partial_record_says_it_is_partial(unhandled_signals, no_cuda, monkeypatch,
        edge_file, tmp_path):
    """The record's reader (stream.markdown, the table of stream.md) on a partial record read back
    from its file: its title, the batches completed of those planned, what the check covered, and
    each engine's rows in the tail's table."""
    import signal

    _interrupt_after(monkeypatch, 20, signal.SIGINT)
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 130
    record = json.loads((out / "stream.json").read_text())
    text = stream.markdown(record)
    assert text == (out / "stream.md").read_text()
    assert text.startswith("# Streaming benchmark: small (INTERRUPTED: partial record)\n")
    assert "a partial record.** Batches completed of 30 planned: host 20." in text
    assert "| host (partial: 20 of 30 batches), all | 15 |" in text


def test_an_interrupt_in_the_warmup_says_no_batch_was_timed(unhandled_signals, no_cuda, monkeypatch, edge_file,
                                                            tmp_path, capsys):
    """Stopped after 3 of the 5 warm-up batches: the record is partial with 0 batches timed, and the
    message, the record's stage and its table say that no batch was timed."""
    import signal

    _interrupt_after(monkeypatch, 3, signal.SIGINT)
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 130
    err = capsys.readouterr().err
    assert ("interrupted (SIGINT): batches completed of 30: host 3; no batch was timed (the first 5 are "
            "warm-up, left out of the statistics)") in err
    record = json.loads((out / "stream.json").read_text())
    assert record["partial"] is True and record["interrupted"]["completed"] == {"host": 3}
    assert record["interrupted"]["at"] == "before any batch was timed"
    assert record["engines"]["host"]["summary"]["count"] == 0
    table = (out / "stream.md").read_text()
    assert "**Interrupted (SIGINT, before any batch was timed): a partial record.**" in table
    assert "No batch was timed: every engine stopped within the first 5 (warm-up) batches." in table


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_an_interrupt_before_the_batches_writes_no_record_and_says_so(unhandled_signals, no_cuda, monkeypatch,
                                                                      edge_file, tmp_path, capsys, signame):
    """A signal while the stream is drawn (before any batch ran): exit 130, one clear line, no record
    (there is no measurement to keep); the signal handlers are given back."""
    import signal

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def stream_batches(*args, **kwargs):
        signal.raise_signal(getattr(signal, signame))
        pytest.fail("the signal did not stop the setup at once")

    monkeypatch.setattr(stream, "stream_batches", stream_batches)
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 130
    assert {s: signal.getsignal(s) for s in before} == before
    err = capsys.readouterr().err
    assert f"stream.py: interrupted ({signame}) before the first batch: no batch was measured; no record " \
           "written" in err
    assert "Traceback" not in err
    assert not (out / "stream.json").exists() and not (out / "stream.md").exists()


def test_an_interrupt_before_the_batches_names_an_earlier_record_it_left(unhandled_signals, no_cuda, monkeypatch,
                                                                         edge_file, tmp_path, capsys):
    import signal

    code, out = _run_file(edge_file, tmp_path)
    assert code == 0
    earlier = (out / "stream.json").read_text()
    monkeypatch.setattr(stream, "stream_batches", lambda *args, **kwargs: signal.raise_signal(signal.SIGINT))
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 130
    assert (out / "stream.json").read_text() == earlier
    assert f"no record written ({out / 'stream.json'} is an earlier run's, left as it was)" in capsys.readouterr().err


# -- a failure mid-stream ------------------------------------------------------------------------
def _fail_on_call(monkeypatch, call: int, error: Exception):
    """The real sssp.update (the host engine), except that its call number ``call`` (0-based,
    every engine's calls counted in turn) raises ``error`` instead of applying its batch."""
    from engines import sssp

    real = sssp.update
    count = [0]

    def update(*args, **kwargs):
        count[0] += 1
        if count[0] - 1 == call:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(sssp, "update", update)


OOM = "device allocation failed: out of memory allocating 4,096 bytes"


def test_an_engine_failing_mid_stream_writes_a_partial_record_and_no_traceback(no_cuda, monkeypatch, edge_file,
                                                                             tmp_path, capsys):
    """The host engine raises OutOfMemoryError in batch 12 of 30, into a folder that holds an earlier
    complete record: that record is replaced by the partial one (never a record that claims the
    stream completed), the error is named (engine, batch, type, message), exit 1 without a traceback."""
    from engines.errors import OutOfMemoryError

    code, out = _run_file(edge_file, tmp_path)
    assert code == 0 and "partial" not in json.loads((out / "stream.json").read_text())
    capsys.readouterr()
    _fail_on_call(monkeypatch, 12, OutOfMemoryError(OOM))
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert (f"stream.py: host failed in batch 12 (OutOfMemoryError: {OOM}): batches completed of 30: host 12; "
            f"partial record written to {out}") in err
    record = json.loads((out / "stream.json").read_text())
    assert record["partial"] is True and "interrupted" not in record
    failed = record["failed"]
    assert failed["engine"] == "host" and failed["batch"] == 12 and failed["during"] == "its update() call"
    assert failed["error"] == {"type": "OutOfMemoryError", "message": OOM}
    assert failed["planned_batches"] == 30 and failed["completed"] == {"host": 12}
    assert failed["cut_inside_batch"] == {"host": 12} and failed["note"].startswith("partial record")
    host = record["engines"]["host"]
    assert host["partial"] == {"completed": 12, "planned": 30} and host["summary"]["count"] == 7
    assert len(np.load(out / stream.TIMES_NAME)["host"]) == 12
    check = record["check"]
    assert check["prefix"] == {} and check["equal"] is None
    assert check["not_checked"] == {"host": "failed inside its batch 12: its graph and result may hold part of "
                                            "that batch"}
    table = (out / "stream.md").read_text()
    assert table.startswith("# Streaming benchmark: small (FAILED: partial record)")
    assert (f"**Failed (host in batch 12: OutOfMemoryError: {OOM}): a partial record.** Batches completed of 30 "
            "planned: host 12; host was cut inside batch 12 (not counted).") in table
    assert "| host | 7 |" in table and "| host (partial: 12 of 30 batches), all | 7 |" in table


def test_a_failure_in_the_second_engine_keeps_and_checks_the_first(two_hosts, monkeypatch, edge_file, tmp_path,
                                                                    capsys):
    from engines.errors import CudaError

    _fail_on_call(monkeypatch, 30 + 12, CudaError("CUDA failure: an illegal memory access was encountered"))
    code, out = _run_interrupted(edge_file, tmp_path, "--engines", "first", "second")
    assert code == 1
    err = capsys.readouterr().err
    assert "second failed in batch 12 (CudaError: CUDA failure: an illegal memory access" in err
    assert "batches completed of 30: first 30, second 12" in err and "Traceback" not in err
    record = json.loads((out / "stream.json").read_text())
    assert record["failed"]["completed"] == {"first": 30, "second": 12}
    check = record["check"]
    assert check["prefix"] == {"first": 30} and check["equal"] is True and check["replayed"] == [30]
    assert list(check["not_checked"]) == ["second"]
    assert record["engines"]["first"]["summary"]["count"] == 25


def test_a_failure_in_an_interleaved_stream_pairs_the_batches_both_completed(two_hosts, monkeypatch, edge_file,
                                                                           tmp_path, capsys):
    """Batch 12's second call fails: the engine that came first in that batch's order completed 13
    batches and is checked after them; the failing one keeps its 12 and is not checked."""
    from engines.errors import CudaError

    _fail_on_call(monkeypatch, 2 * 12 + 1, CudaError("CUDA failure: unspecified launch failure"))
    code, out = _run_interrupted(edge_file, tmp_path, "--engines", "first", "second", "--interleave")
    assert code == 1 and "Traceback" not in capsys.readouterr().err
    record = json.loads((out / "stream.json").read_text())
    failed = record["failed"]
    ahead = next(e for e in ("first", "second") if e != failed["engine"])
    assert failed["batch"] == 12 and failed["completed"] == {ahead: 13, failed["engine"]: 12}
    assert record["check"]["prefix"] == {ahead: 13} and record["check"]["replayed"] == [13]
    assert list(record["paired"]) == ["second/first"] and record["paired"]["second/first"]["pairs"] == 7


def test_a_failure_while_opening_an_engine_names_it(two_hosts, monkeypatch, edge_file, tmp_path, capsys):
    real_open = stream.open_engine

    def open_engine(engine, data, objective):
        if engine == "second":
            raise MemoryError("no room for the graph")
        return real_open(engine, data, objective)

    monkeypatch.setattr(stream, "open_engine", open_engine)
    code, out = _run_interrupted(edge_file, tmp_path, "--engines", "first", "second")
    assert code == 1
    assert "second failed while opening its graph and result (MemoryError: no room for the graph)" in \
        capsys.readouterr().err
    failed = json.loads((out / "stream.json").read_text())["failed"]
    assert failed["engine"] == "second" and failed["batch"] is None
    assert failed["during"] == "opening its graph and result" and failed["completed"] == {"first": 30, "second": 0}


def test_a_bug_mid_stream_keeps_the_partial_record_and_shows_its_traceback(no_cuda, monkeypatch, edge_file,
                                                                          tmp_path, capsys):
    """A programming error (here a TypeError out of update()) is a bug: the partial record is still
    written, then the traceback and one line saying it is one (engines.errors.print_internal_error)."""
    _fail_on_call(monkeypatch, 12, TypeError("unsupported operand"))
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 1
    err = capsys.readouterr().err
    assert "Traceback" in err and "TypeError: unsupported operand" in err
    assert "stream.py: internal error (a bug in ssspab" in err and f"partial record written to {out}" in err
    record = json.loads((out / "stream.json").read_text())
    assert record["partial"] is True and record["failed"]["error"]["type"] == "TypeError"


def test_a_check_that_fails_after_a_failure_is_recorded_as_not_done(no_cuda, monkeypatch, edge_file, tmp_path,
                                                                   capsys):
    """After a CUDA error the device may refuse every later call: a check that raises is 'not done'
    in the record, which is still written."""
    from engines.errors import CudaError

    _fail_on_call(monkeypatch, 12, CudaError("CUDA failure: unspecified launch failure"))

    def check_prefix(*args, **kwargs):
        raise CudaError("CUDA failure: unspecified launch failure")

    monkeypatch.setattr(stream, "check_prefix", check_prefix)
    code, out = _run_interrupted(edge_file, tmp_path)
    assert code == 1
    record = json.loads((out / "stream.json").read_text())
    assert record["check"]["done"] is False
    assert record["check"]["why"] == "the check against the host reference failed after the stream's failure " \
                                     "(CudaError: CUDA failure: unspecified launch failure)"
    assert "The check against the host reference was NOT done" in (out / "stream.md").read_text()


# -- the stream's host memory --------------------------------------------------------------------
def test_a_huge_batch_count_is_refused_before_anything_is_drawn(no_cuda, monkeypatch, capsys):
    monkeypatch.setattr(stream, "load_input", lambda **kwargs: pytest.fail("the graph was loaded"))
    assert stream.main(["--graph", "uspowergrid", "--batches", str(10 ** 12), "--engines", "host",
                        "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("stream.py: --batches 1,000,000,000,000: ")
    assert "GB of host memory" in err and "batches fit" in err


def test_the_memory_limit_is_the_estimate_against_what_is_available():
    per_batch = stream.stream_bytes(1, 100, 3, 2)
    # int64 source and target per change, 3 int64 weights on the half that are insertions, a
    # batch's fixed cost and each engine's per-batch measurements
    assert per_batch == 1024 + 100 * (16 + 4 * 3) + 2 * 512
    assert stream.stream_bytes(1000, 100, 3, 2) == 1000 * per_batch
    stream.check_stream_memory(1000, 100, 3, 2, available=1000 * per_batch)
    with pytest.raises(stream.UsageError, match=r"--batches 1,000: .* but 0\.0 GB is available: at most 999 "
                                                r"batches fit"):
        stream.check_stream_memory(1000, 100, 3, 2, available=1000 * per_batch - 1)
