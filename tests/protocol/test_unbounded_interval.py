"""A round timed at 0 ms (CUDA events resolve about half a microsecond; a record may say 0.0, which
the record checks accept as a time) makes its pair's ratio B / A infinite, so the cell's interval
can be unbounded above. summary.json holds no infinity (JSON), so that bound is null there: the
report, its plot and the campaign's summary table must show such a cell, not stop on it with a
TypeError (``None - float``, ``format(None, '.3f')``)."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest

from bench import perf_ab
from protocol.console import print_summary_table
from protocol.plots import ratio_against_syncs
from protocol.records import RecordStore

from .helpers import record_host_campaign

ARGS = ["--sides", "host,host", "--batches", "local10k", "--objectives", "0", "--rounds", "5", "--processes", "1",
        "--max-foreign-cpu", "1000", "--allow-dirty", "--no-progress", "--no-control"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    _, out = record_host_campaign(tmp_path_factory.mktemp("unbounded"), 11, ARGS)
    return out


@pytest.fixture
def zero_timed(recorded, tmp_path):
    """The campaign with side A's engine time at 0 ms in two of its five accepted rounds."""
    out = tmp_path / "records"
    shutil.copytree(recorded, out)
    (out / "summary.json").unlink()
    [path] = (out / "rounds").glob("*.parquet")
    table = pq.read_table(path)
    rows = table.to_pylist()
    zeroed = 0
    for row in rows:
        if row["role"] == "A" and row["accepted"] and not row["warmup"] and zeroed < 2:
            row["engine_host_ms"] = 0.0
            zeroed += 1
    assert zeroed == 2
    pq.write_table(table.from_pylist(rows, schema=table.schema), path)
    return out


def test_the_report_renders_a_cell_whose_interval_is_unbounded(zero_timed, capsys):
    assert perf_ab.main(["report", "--out", str(zero_timed), "--write"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    summary = json.loads((zero_timed / "summary.json").read_text())
    [cell] = summary["cells"]
    assert cell["ratio"] is not None and cell["ratio_hi"] is None  # infinity, which JSON cannot hold
    assert (zero_timed / "plots" / "ratio_vs_syncs.png").is_file()


def test_the_summary_table_shows_an_unbounded_interval(zero_timed, capsys):
    from rich.console import Console

    assert perf_ab.main(["report", "--out", str(zero_timed), "--write"]) == 0  # summary.json derived again
    capsys.readouterr()
    console = Console(width=200, record=True)
    print_summary_table(RecordStore(zero_timed), console=console)
    text = console.export_text()
    assert "[" in text and ", –]" in text  # the open end, as the report shows it


def test_the_ratio_plot_draws_an_unbounded_interval(tmp_path):
    summary = {"sides": {"A": "host", "B": "host"},
               "cells": [{"cell": "g/b/0", "ratio": 1.0, "ratio_lo": 0.9, "ratio_hi": None,
                          "syncs": {"host_syncs_B": 0}},
                         {"cell": "g/b/1", "ratio": 1.0, "ratio_lo": None, "ratio_hi": None,
                          "syncs": {"host_syncs_B": 1}}]}
    assert ratio_against_syncs(summary, tmp_path / "ratio.png").is_file()


# -- a pair timed 0 ms on both sides: its ratio is 0 / 0 ----------------------------------------
def _zero_both_sides(recorded, out, pairs: int | None):
    """The campaign with both sides' engine time at 0 ms in ``pairs`` of its accepted pairs (None:
    all of them)."""
    shutil.copytree(recorded, out)
    (out / "summary.json").unlink()
    [path] = (out / "rounds").glob("*.parquet")
    table = pq.read_table(path)
    rows = table.to_pylist()
    timed = sorted({r["pair_index"] for r in rows if r["accepted"] and not r["warmup"]})
    chosen = set(timed if pairs is None else timed[:pairs])
    for row in rows:
        if row["accepted"] and not row["warmup"] and row["pair_index"] in chosen:
            row["engine_host_ms"] = 0.0
    pq.write_table(table.from_pylist(rows, schema=table.schema), path)
    return out, len(chosen), len(timed)


def test_a_pair_timed_0_ms_on_both_sides_is_left_out_of_the_ratio_and_counted(recorded, tmp_path, capsys):
    # before: its ratio 0 / 0 was a NaN that the median spread to the whole cell, "not measured"
    out, zeroed, pairs = _zero_both_sides(recorded, tmp_path / "records", 1)
    assert perf_ab.main(["report", "--out", str(out), "--write"]) == 0
    capsys.readouterr()
    [cell] = json.loads((out / "summary.json").read_text())["cells"]
    paired = cell["regions"][cell["primary_region"]]["paired"]
    assert paired["timeless_pairs"] == zeroed == 1 and paired["pairs"] == pairs - 1
    assert cell["ratio"] is not None and cell["ratio_lo"] is not None and cell["ratio_hi"] is not None
    assert not cell["verdict"].startswith("not measured")


def test_a_cell_of_pairs_all_timed_0_ms_says_why_it_is_not_measured(recorded, tmp_path, capsys):
    out, zeroed, pairs = _zero_both_sides(recorded, tmp_path / "records", None)
    assert zeroed == pairs
    assert perf_ab.main(["report", "--out", str(out), "--write"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    [cell] = json.loads((out / "summary.json").read_text())["cells"]
    assert cell["verdict"] == (f"not measured: all {pairs} pairs timed 0 ms on both sides "
                               "(below the clock's resolution)")
    assert cell["ratio"] is None
    assert "timed 0 ms on both sides" in (out / "M7.md").read_text()
