"""bench/engine_table.py on the CPU: the random graph and its 1 % batch, the timing loop (host
engine), the user-path columns and table, and the command line's refusals."""

from __future__ import annotations

import argparse
import json
import os
import signal

import numpy as np
import pytest

from bench import engine_table as et
from bench import host_bench
from engines import sssp
from engines.exitcodes import ExitCode
from engines.sssp import backends


def _arcs(graph):
    src = np.repeat(np.arange(graph.num_vertices), np.diff(np.asarray(graph.row_ptr, dtype=np.int64)))
    return src, np.asarray(graph.col_ind, dtype=np.int64)


def test_parse_random_graph():
    assert et.parse_random_graph("4039,176000") == (4039, 176000)
    for bad in ("4039", "a,b", "1,10", "10,1000"):
        with pytest.raises(argparse.ArgumentTypeError):
            et.parse_random_graph(bad)


def test_random_graph_is_symmetric_simple_and_deterministic():
    g = et.random_graph(4039, 176000)
    assert g.num_vertices == 4039 and g.num_edges == 176000 and g.num_weights == 3
    src, dst = _arcs(g)
    assert (src != dst).all()
    keys = src * g.num_vertices + dst
    assert np.unique(keys).size == keys.size  # no parallel arcs
    assert set(keys.tolist()) == set((dst * g.num_vertices + src).tolist())  # both directions
    w = np.asarray(g.weights)
    assert w.min() >= 1 and w.max() <= 100
    again = et.random_graph(4039, 176000)
    for name in ("row_ptr", "col_ind", "weights"):
        assert np.array_equal(np.asarray(getattr(g, name)), np.asarray(getattr(again, name)))


def test_random_batch_is_one_percent_half_deletions_of_existing_arcs():
    g = et.random_graph(500, 6000)
    b = et.random_batch(g)
    assert len(b) == round(0.01 * g.num_edges) == 60
    assert b.num_deletions == 30 and b.num_insertions == 30
    src, dst = _arcs(g)
    existing = set((src * g.num_vertices + dst).tolist())
    dels = (np.asarray(b.delete_src) * g.num_vertices + np.asarray(b.delete_dst)).tolist()
    assert set(dels) <= existing and len(set(dels)) == len(dels)
    ins = (np.asarray(b.insert_src) * g.num_vertices + np.asarray(b.insert_dst)).tolist()
    assert set(ins[:15]) <= existing and not set(ins[:15]) & set(dels)  # upserts of kept arcs
    assert (np.asarray(b.insert_src) != np.asarray(b.insert_dst)).all()
    summary, _ = et.host_copy(g).apply(b)
    assert summary.deleted_edges == 30 and summary.updated_edges >= 15
    again = et.random_batch(et.random_graph(500, 6000))
    assert np.array_equal(np.asarray(b.insert_weights), np.asarray(again.insert_weights))
    assert np.array_equal(np.asarray(b.delete_src), np.asarray(again.delete_src))


def test_host_copy_has_the_same_csr():
    g = et.random_graph(300, 2000)
    h = et.host_copy(g)
    assert h is not g and h.state_id != g.state_id
    for name in ("row_ptr", "col_ind", "weights"):
        assert np.array_equal(np.asarray(getattr(g, name)), np.asarray(getattr(h, name)))


def test_timing_loop_restores_every_run_and_times_the_whole_call():
    g = et.random_graph(300, 2400)
    batch = et.random_batch(g)
    d, p = sssp.compute(g, 0).to_numpy()
    want = sssp.compute(g, 0)
    snap = g.snapshot()
    result = sssp.Result.from_arrays(g, 0, d, p, validate=False, canonicalize=False)
    times, stats, counters = et._time_updates(g, batch, result, result.clone(), snap, 11, 1,
                                              on_device=False, whole=True)
    assert len(times["host"]) == len(times["whole"]) == 11 and times["device"] == []
    assert counters == {(stats.invalidated, stats.affected)}  # every plain run did the same update
    assert all(t > 0 for t in times["whole"])
    # the last run started from the snapshot: its tree is that of one update of the pre-batch tree
    g.restore(snap)
    sssp.update(g, batch, want)
    assert np.array_equal(result.distances, want.distances) and np.array_equal(result.parents, want.parents)


def test_whole_columns_and_user_path_table():
    assert et.whole_columns(2.0, 2.5) == {"whole_ms": 2.5, "whole_minus_engine_ms": 0.5, "whole_over_engine": 1.25}
    assert et.whole_columns(None, 2.5)["whole_minus_engine_ms"] is None
    engine = {"device_ms": 2.0, "iterations": 40, "host_syncs": 1, **et.whole_columns(2.0, 2.5)}
    row = {"graph": "roadNet-PA", "batch": "safe50k", "fused": engine,
           "operators": dict(engine, host_syncs=45)}
    lines = et.user_path_table([row]).splitlines()
    assert lines[0].startswith("| graph | batch | engine | engine ms (device) | floor ms | engine / floor | "
                               "whole ms | whole - engine")
    # no floor measured (the floor columns: tests/bench/test_floor.py)
    assert lines[2] == "| roadNet-PA | safe50k | fused | 2.000 | – | – | 2.500 | 0.500 | 1.25 | 40 | 1 |"
    assert lines[3].endswith("| 40 | 45 |") and len(lines) == 4


def test_command_line_refusals(capsys):
    # a value the table cannot use: the command's one line and exit 2 (run_command)
    assert et.main(["--graphs", "--repeats", "11"]) == 2
    assert capsys.readouterr().err == "engine_table.py: nothing to measure: name --graphs or give --random-graph\n"
    for argv, line in ((["--repeats", "5"], "--repeats must be at least 11"),
                       (["--host-repeats", "-1"], "--host-repeats must be at least 0"),
                       (["--objective", "9"], "--objective must be in [0, "),
                       # acted as 0 (no host column) without a word
                       (["--host-max-vertices", "-5"], "--host-max-vertices must be at least 0"),
                       # refused before any GPU time: a misspelt batch measured nothing on its gate
                       (["--batches", "safe50"], "--batches: no batch named safe50 (every graph has safe50k, "),
                       (["--graphs", "roadnet-pa"], "unknown gate name(s): roadnet-pa (known: ")):
        assert et.main(["--graphs", "roadNet-PA", *argv]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"engine_table.py: {line}") and err.count("\n") == 1
    # argparse's own usage error: its status returned by main()
    assert et.main(["--random-graph", "4039"]) == 2
    assert "usage:" in capsys.readouterr().err
    args = et.build_parser().parse_args(["--graphs", "--random-graph", "4039,176000", "--table"])
    assert args.graphs == [] and args.random_graph == [(4039, 176000)] and args.table
    if not backends.cuda_available():
        assert et.main(["--graphs", "--random-graph", "300,2000"]) == 3


def test_an_out_folder_that_cannot_be_written_is_refused_first(monkeypatch, tmp_path, capsys):
    """--out below a file: one line naming it (exit 2), no traceback, before the engines are even
    asked whether they run here, let alone measured."""
    monkeypatch.setattr(et, "cuda_config", lambda *args: pytest.fail("reached the engines before --out"))
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "table"
    assert et.main(["--graphs", "--random-graph", "300,2000", "--out", str(out)]) == ExitCode.USAGE
    captured = capsys.readouterr()
    assert captured.err == f"engine_table.py: --out {out}: cannot write there (Not a directory)\n"
    assert captured.out == ""


def test_grid_syncs_count_the_fused_kernels_barriers():
    from engines.sssp.cuda import fused

    record = {"iterations": 84, "epochs": 3, "rounds": 10, "solo_runs": 0, "solo_iterations": 0}
    # pack+roots, 10 rounds, invalidate, heads, pull, first minimum, first split; 84 + 2 x 3
    assert fused.grid_syncs(record, update=True, packed=True) == 1 + 10 + 5 + 84 + 6
    assert fused.grid_syncs(record, update=True, packed=False) == 1 + 10 + 5 + 84 + 6 + 2
    # compute(): the seeding barrier, the loop, the recovery's one barrier without counting
    assert fused.grid_syncs(record, update=False, packed=True) == 1 + 84 + 6
    assert fused.grid_syncs(record, update=False, packed=False) == 1 + 84 + 6 + 1


def test_push_expansion_option_selects_both_engines_expansion():
    from bench import engine_table as T

    args = T.build_parser().parse_args(["--push-expansion", "group"])
    assert args.push_expansion == "group"
    assert T.build_parser().parse_args([]).push_expansion is None
    assert T.cuda_options("fused", "group") == {"cuda_engine": "fused", "push_expansion": "group"}
    assert T.cuda_options("operators", None) == {"cuda_engine": "operators"}
    with pytest.raises(SystemExit):
        T.build_parser().parse_args(["--push-expansion", "warp"])


def test_markdown_puts_scipys_recompute_beside_the_host_compute():
    """Issue 35: the host row's compute() beside SciPy's Dijkstra from scratch on the same graph;
    '–' where the host reference did not run (a graph above --host-max-vertices)."""
    from bench import engine_table as et

    fused = {"device_ms": 0.9, "host_ms": 1.0, "whole_ms": 1.2, "compute_ms": 0.45, "iterations": 84,
             "epochs": 3, "host_syncs": 1, "sync_budget": 1, "grid_syncs": 100}
    ops = dict(fused, device_ms=1.8, host_ms=2.0, host_syncs=40, sync_budget=90)
    row = {"graph": "roadNet-PA", "batch": "safe50k", "fused": fused, "operators": ops,
           "identical": True, "identical_counters": True,
           "host": {"host_ms": 731.0, "compute_ms": 90.2, "scipy_ms": 182.5}}
    header, _, line = et.markdown([row]).splitlines()[:3]
    cells = [c.strip() for c in header.strip("|").split("|")]
    column = cells.index("compute ms (fused / ops / host / SciPy)")
    assert [c.strip() for c in line.strip("|").split("|")][column] == "0.45 / 0.45 / 90 / 182"
    no_host = dict(row)
    del no_host["host"]
    line = et.markdown([no_host]).splitlines()[2]
    assert [c.strip() for c in line.strip("|").split("|")][column] == "0.45 / 0.45 / – / –"


# -- the rows kept when the command is interrupted or killed --------------------------------------
def _table_row(graph: str, identical: bool = True) -> dict:
    engine = {"device_ms": 0.9, "host_ms": 1.0, "compute_ms": 0.45, "iterations": 6, "epochs": 0,
              "host_syncs": 1, "sync_budget": 1, "grid_syncs": 30, "compute_grid_syncs": 40,
              "near_median": 12.0, "us_per_iteration": 10.0, **et.whole_columns(0.9, 1.2)}
    row = {"graph": graph, "batch": "random1pct", "fused": engine, "operators": dict(engine, host_syncs=8),
           "identical": identical, "identical_counters": True, "floor_constants": None}
    row.update(et.floor_columns(engine, row["operators"], None))
    return row


def _rows_written(out):
    return [r["graph"] for r in json.loads((out / "engine_table.json").read_text())]


def test_every_row_is_written_as_soon_as_it_is_measured(tmp_path, capsys):
    """A command killed (not interrupted) between rows leaves every earlier row in --out."""
    table = et.Table(tmp_path / "t", whole=True)
    table.add(_table_row("g1"))
    assert _rows_written(tmp_path / "t") == ["g1"]
    assert "| g1 | random1pct |" in (tmp_path / "t" / "whole_update.md").read_text()
    table.add(_table_row("g2"))
    assert _rows_written(tmp_path / "t") == ["g1", "g2"]
    assert '"graph": "g2"' in capsys.readouterr().out.splitlines()[-1]


def test_ctrl_c_keeps_the_measured_rows_and_names_what_is_missing(tmp_path, capsys):
    def first(emit):
        emit(_table_row("g1"))

    def second(emit):  # Ctrl-C after one of its rows
        emit(_table_row("g2"))
        raise KeyboardInterrupt

    def never(emit):
        pytest.fail("an input after the interruption was measured")

    out = tmp_path / "t"
    inputs = [("g1", first), ("g2", second), ("g3", never)]
    assert et.measure_inputs(inputs, et.Table(out, whole=True)) == 130
    assert _rows_written(out) == ["g1", "g2"]
    note = "Interrupted: 2 rows measured; not measured (in full): g2, g3."
    assert (out / "engine_table.md").read_text().rstrip().endswith(note)
    assert "| g2 | random1pct | fused |" in (out / "whole_update.md").read_text()
    printed = capsys.readouterr()
    assert note in printed.out and "| g2 | random1pct | operators |" in printed.out
    assert printed.err == (f"engine_table.py: interrupted; 2 rows measured, written to {out}; "
                           "not measured (in full): g2, g3\n")


def test_a_wrong_answer_outranks_the_interruption(capsys):
    def wrong(emit):
        emit(_table_row("g1", identical=False))
        raise KeyboardInterrupt

    assert et.measure_inputs([("g1", wrong)], et.Table(None, whole=False)) == 1
    assert capsys.readouterr().err == "engine_table.py: interrupted; 1 row measured; not measured (in full): g1\n"


def test_an_uninterrupted_run_prints_both_tables_once(tmp_path, capsys):
    inputs = [(name, lambda emit, name=name: emit(_table_row(name))) for name in ("g1", "g2")]
    assert et.measure_inputs(inputs, et.Table(tmp_path, whole=True)) == 0
    out = capsys.readouterr().out
    assert out.count("| graph | batch | engine | engine ms (device)") == 1
    assert out.count("| g2 | random1pct | fused |") == 1 and "Interrupted" not in out
    assert "Interrupted" not in (tmp_path / "engine_table.md").read_text()


def test_an_unfinished_table_says_what_is_not_yet_measured(tmp_path, capsys):
    """While the command runs (and after a kill) the table on disk names the inputs still to come;
    the finished one does not. Files of an earlier run in the same folder are replaced first."""
    out = tmp_path / "t"
    out.mkdir()
    (out / "engine_table.json").write_text(json.dumps([_table_row("stale")]))
    seen = []

    def first(emit):
        seen.append(_rows_written(out))  # before any row of this run: none, not the stale one
        emit(_table_row("g1"))
        seen.append((out / "engine_table.md").read_text().rstrip().splitlines()[-1])

    def second(emit):
        emit(_table_row("g2"))
        seen.append((out / "engine_table.md").read_text().rstrip().splitlines()[-1])

    assert et.measure_inputs([("g1", first), ("g2", second)], et.Table(out, whole=False)) == 0
    assert seen == [[], "In progress: 1 row measured; not measured (in full): g1, g2.",
                    "In progress: 2 rows measured; not measured (in full): g2."]
    assert "In progress" not in (out / "engine_table.md").read_text()
    assert sorted(p.name for p in out.iterdir()) == ["engine_table.json", "engine_table.md"]  # no temporaries
    assert _rows_written(out) == ["g1", "g2"]


def test_a_second_ctrl_c_during_the_save_is_ignored(tmp_path, capsys, python_sigint):
    class SignalledTable(et.Table):
        def write(self, note=""):
            if note.startswith("Interrupted"):
                os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C while the rows are saved
            super().write(note)

    def interrupted(emit):
        emit(_table_row("g1"))
        raise KeyboardInterrupt

    out = tmp_path / "t"
    assert et.measure_inputs([("g1", interrupted)], SignalledTable(out, whole=False)) == 130
    assert _rows_written(out) == ["g1"]
    assert (out / "engine_table.md").read_text().rstrip().endswith("not measured (in full): g1.")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored after the save


def test_ctrl_c_after_the_last_input_says_every_input_was_measured(capsys):
    class LateTable(et.Table):
        def show(self, note=""):
            if not note:
                raise KeyboardInterrupt  # while the finished tables are printed
            super().show(note)

    assert et.measure_inputs([("g1", lambda emit: emit(_table_row("g1")))], LateTable(None, whole=False)) == 130
    printed = capsys.readouterr()
    assert "Interrupted: 1 row measured; every input was measured." in printed.out
    assert printed.err.endswith("not measured (in full): none\n")


def test_inputs_are_the_gates_then_the_random_graphs_and_no_out_writes_nothing(tmp_path, monkeypatch):
    args = et.build_parser().parse_args(["--graphs", "roadNet-PA", "roadNet-CA", "--random-graph", "300,2000"])
    assert [name for name, _ in et.inputs_of(args)] == ["roadNet-PA", "roadNet-CA", "random-300-2000"]
    monkeypatch.chdir(tmp_path)
    for out in (None, ""):
        table = et.Table(out, whole=True)
        assert table.out is None
        table.add(_table_row("g1"))
    assert list(tmp_path.iterdir()) == []


def test_the_round_trip_is_charged_only_with_host_time_beyond_the_engine_region():
    """round_trip_us: the operators engine's host time beyond its engine region minus the fused
    engine's, over the extra syncs, so two engines' different GPU work is not charged to the syncs
    (measured rows of an H100 run: roadNet-PA safe50k and road_usa safe50k)."""
    round_trip_us = et.round_trip_us
    fused = {"host_ms": 1.263267, "device_ms": 0.896032, "host_syncs": 1}
    operators = {"host_ms": 1.929788, "device_ms": 1.555392, "host_syncs": 5}
    assert round_trip_us(fused, operators) == pytest.approx(((1.929788 - 1.555392) - (1.263267 - 0.896032)) / 4 * 1e3)
    assert round_trip_us(fused, operators) == pytest.approx(1.79, abs=0.01)
    # road_usa safe50k: the operators engine's region is the shorter; the host times alone read -217
    fused = {"host_ms": 31.69, "device_ms": 27.60, "host_syncs": 1}
    operators = {"host_ms": 29.31, "device_ms": 25.23, "host_syncs": 12}
    assert round_trip_us(fused, operators) == pytest.approx((4.08 - 4.09) / 11 * 1e3)
    # no extra syncs, or a device time missing: nothing derived
    assert round_trip_us(fused, dict(operators, host_syncs=1)) is None
    assert round_trip_us(dict(fused, device_ms=None), operators) is None
    assert round_trip_us(fused, dict(operators, device_ms=None)) is None


@pytest.mark.parametrize("warmup, untimed", [(2, 1), (0, 0)])
def test_the_host_reference_is_timed_after_an_untimed_run(monkeypatch, warmup, untimed):
    """The host reference's compute() and update are each run once untimed before the timed runs
    (a process's first call compiles or loads the Numba kernels), none with --warmup 0; the row
    counts only the timed runs and its tree is the reference's update of the pre-batch tree."""
    g = et.random_graph(300, 2400)
    batch = et.random_batch(g)
    d, p = sssp.compute(g, 0).to_numpy()
    args = argparse.Namespace(warmup=warmup)
    assert et.host_warmup(args) == untimed
    computes, updates = [], []
    real_compute, real_update = sssp.compute, sssp.update
    monkeypatch.setattr(sssp, "compute", lambda *a, **kw: computes.append(1) or real_compute(*a, **kw))
    monkeypatch.setattr(sssp, "update", lambda *a, **kw: updates.append(1) or real_update(*a, **kw))
    ms = host_bench.host_compute_ms(g, 0, 0, 1, et.host_warmup(args))  # what measure_graph calls
    assert len(computes) == 1 + untimed and ms > 0
    snap = g.snapshot()
    row, (dist, par) = et.host_update_row(g, snap, batch, 0, 0, (d, p), 3, et.host_warmup(args))
    assert len(updates) == 3 + untimed and row["runs"] == 3 and row["host_ms"] > 0
    g.restore(snap)
    want = real_compute(g, 0)
    real_update(g, batch, want)
    assert np.array_equal(dist, want.distances) and np.array_equal(par, want.parents)
