"""bench/engine_table.py's command on a GPU: a small random graph through main(), every file it
writes, and the rows equal between the engines (the CPU side: tests/bench/test_engine_table.py)."""

from __future__ import annotations

import json

from bench import engine_table as et


def test_main_measures_a_random_graph_and_writes_every_table(tmp_path, capsys):
    out = tmp_path / "table"
    code = et.main(["--graphs", "--random-graph", "300,2000", "--no-floor", "--table", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    rows = json.loads((out / "engine_table.json").read_text())
    assert [(r["graph"], r["batch"]) for r in rows] == [("random-300-2000", et.RANDOM_BATCH_NAME)]
    row = rows[0]
    assert row["identical"] and row["identical_counters"]
    for engine in et.CUDA_ENGINES:
        assert row[engine]["device_ms"] > 0 and row[engine]["whole_ms"] > 0
        assert row[engine]["runs"] == 11
    assert row["fused"]["host_syncs"] == 1
    # the host reference's row through main(): one timed run (the untimed one before it is counted
    # by tests/bench/test_engine_table.py), its compute() and SciPy's beside it
    assert row["host"]["runs"] == 1 and row["host"]["host_ms"] > 0
    assert row["host"]["compute_ms"] > 0 and row["host"]["scipy_ms"] > 0
    table = (out / "engine_table.md").read_text()
    assert "| random-300-2000 | random1pct |" in table and "In progress" not in table
    whole = (out / "whole_update.md").read_text()
    assert "| random-300-2000 | random1pct | fused |" in whole
    assert "| random-300-2000 | random1pct | operators |" in whole
    printed = capsys.readouterr().out
    assert printed.count('"graph": "random-300-2000"') == 1  # the row's JSON line, once
