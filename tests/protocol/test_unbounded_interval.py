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
