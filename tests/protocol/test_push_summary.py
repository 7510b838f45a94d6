"""The push section of a cell's summary (protocol/analysis.py push_summary, issue 26): push
iterations from the accepted rounds, the near-list median from the untimed rounds that carry it,
the fused kernel's grid syncs, and the primary region's time per push iteration."""

from __future__ import annotations

import pandas as pd
import pytest

from protocol.analysis import push_summary
from protocol.floor import FloorConstants


def _rows():
    base = {"accepted": True, "warmup": False}
    rows = []
    for role, iters, grid in (("A", 84, 106), ("B", 84, None)):
        for near in (None, None, None):  # timed rounds: no near-list median
            rows.append({**base, "role": role, "iterations": iters, "grid_syncs": grid,
                         "near_median": near})
        for near in (858.0, 890.0):  # untimed rounds carry it
            rows.append({"accepted": False, "warmup": True, "role": role, "iterations": iters,
                         "grid_syncs": grid, "near_median": near})
    return pd.DataFrame(rows)


def test_push_summary_per_side():
    rows = _rows()
    accepted = {r: rows[(rows["role"] == r) & rows["accepted"]] for r in ("A", "B")}
    primary = {"A": {"median": 1.68}, "B": {"median": 2.02}}
    out = push_summary(rows, accepted, primary)
    assert out["A"] == {"iterations": 84.0, "near_median": 874.0, "grid_syncs": 106.0,
                        "us_per_iteration": pytest.approx(1.68e3 / 84), "floor_ms": None,
                        "over_floor": None}  # no floor constants: no floor
    assert out["B"]["grid_syncs"] is None and out["B"]["near_median"] == 874.0
    assert out["B"]["us_per_iteration"] == pytest.approx(2.02e3 / 84)


def test_records_without_the_columns_summarize_to_none():
    """Campaigns recorded before the columns existed: no near-list median, no grid syncs."""
    rows = _rows().drop(columns=["near_median", "grid_syncs"])
    accepted = {r: rows[(rows["role"] == r) & rows["accepted"]] for r in ("A", "B")}
    out = push_summary(rows, accepted, None)
    assert out["A"] == {"iterations": 84.0, "near_median": None, "grid_syncs": None,
                        "us_per_iteration": None, "floor_ms": None, "over_floor": None}


def test_the_floor_of_the_median_grid_syncs_beside_the_time():
    """With the GPU's floor constants (protocol/floor.py, issue 34): the floor of the side's median
    grid syncs and the primary region's median over it; a side without grid syncs has neither."""
    rows = _rows()
    accepted = {r: rows[(rows["role"] == r) & rows["accepted"]] for r in ("A", "B")}
    primary = {"A": {"median": 1.68}, "B": {"median": 2.02}}
    constants = FloorConstants(barrier_us=1.25, chain_us=1.03, blocks=528)
    out = push_summary(rows, accepted, primary, constants)
    assert out["A"]["floor_ms"] == pytest.approx(106 * 2.28 / 1e3)
    assert out["A"]["over_floor"] == pytest.approx(1.68 / (106 * 2.28 / 1e3))
    assert out["B"]["floor_ms"] is None and out["B"]["over_floor"] is None
    no_time = push_summary(rows, accepted, None, constants)  # no primary region: no ratio
    assert no_time["A"]["floor_ms"] == pytest.approx(0.24168) and no_time["A"]["over_floor"] is None


def test_the_summary_reads_the_floor_recorded_with_the_gpu():
    from protocol.analysis import gpu_floor

    constants = FloorConstants(barrier_us=1.25, chain_us=1.03, blocks=528, device_name="H200")
    assert gpu_floor({"gpu": {"name": "H200", "floor": constants.to_dict()}}) == constants
    assert gpu_floor({"gpu": {"name": "H200"}}) is None  # a campaign measured without --floor
    assert gpu_floor({"gpu": None}) is None and gpu_floor({}) is None  # a host campaign
