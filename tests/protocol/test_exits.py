"""Honest exits (protocol.md §8): exit 4 names the rejection reason and the option that relaxes it;
``make bench`` without a GPU leaves its step's own status 3 where make can only say 2."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import perf_ab
from protocol.rejections import reason_kind, remedy, too_noisy_explanation
from tests.conftest import shared_data_dir

REPO = Path(__file__).resolve().parents[2]
PARAMS = {"max_rejects": 21, "max_foreign_cpu": 1.0, "min_clock_fraction": 0.9}


@pytest.mark.parametrize("reason, kind", [
    ("foreign CPU load 2.31 cores > 1", "foreign_cpu"),
    ("pair repeated (other round: foreign CPU load 1.50 cores > 1)", "foreign_cpu"),
    ("foreign GPU process(es): 4242", "foreign_gpu"),
    ("SM clock 1200 MHz below 0.9 x max 1980 MHz", "sm_clock_low"),
    ("SM clock 1500 MHz off the locked 1755 MHz", "sm_clock_lock"),
    ("clock event: sw_thermal_slowdown", "clock_event"),
    ("memory clock 2619 MHz differs from the cell's 2619 MHz", "memory_clock"),
    ("pair interrupted", "other"),
])
def test_every_recorded_reason_has_a_cause(reason, kind):
    assert reason_kind(reason) == kind


def test_the_remedy_names_the_option_and_its_value():
    assert "--max-foreign-cpu 1 cores" in remedy("foreign_cpu", PARAMS)
    assert "raise --max-foreign-cpu" in remedy("foreign_cpu", PARAMS)
    assert "--min-clock-fraction 0.9" in remedy("sm_clock_low", PARAMS)
    assert "no option relaxes this" in remedy("foreign_gpu", PARAMS)


def _cell(name, status, reasons=None, rejected=0):
    return {"cell": name, "status": status, "reject_reasons": reasons or {}, "rejected_pairs": rejected}


def test_each_too_noisy_cell_gets_one_line_with_its_causes_by_weight():
    summary = {"cells": [
        _cell("g/b/0", "too_noisy", {"foreign CPU load 3.00 cores > 1": 30,
                                     "pair repeated (other round: foreign CPU load 2.00 cores > 1)": 12,
                                     "SM clock 1200 MHz below 0.9 x max 1980 MHz": 2}, rejected=22),
        _cell("g/b/1", "done"),
    ], "control": None, "trust": {"untrustworthy": False}}
    lines = too_noisy_explanation(summary, PARAMS)
    assert len(lines) == 1
    line = lines[0]
    assert line.startswith("cell g/b/0 is too noisy: 22 rejected pairs exceed --max-rejects 21 (raise it")
    assert line.index("42 rejected rounds: other processes used more CPU") < line.index("2 rejected rounds: the SM")


def test_an_untrustworthy_control_is_said_too():
    summary = {"cells": [_cell("g/b/0", "done")], "control": _cell("g/b/0/control", "done"),
               "trust": {"untrustworthy": True, "detail": "A/A ratio 1.020 [1.010, 1.030] excludes 1"}}
    assert too_noisy_explanation(summary, PARAMS) == [
        "the campaign is untrustworthy: A/A ratio 1.020 [1.010, 1.030] excludes 1; run it on a quieter machine, "
        "or with more --rounds"]
    assert too_noisy_explanation(None, PARAMS) == []


@pytest.mark.skipif(shared_data_dir() is None, reason="shared real graphs not found (../shared/data)")
@pytest.mark.slow
def test_a_busy_host_exit_4_names_the_reason_and_the_option(tmp_path, capsys, monkeypatch):
    # every round sees 2.5 foreign cores (a controlled load, measured in this process: one worker)
    # against a limit of 0.5, and no pair may be repeated: the cell is too noisy at once
    from protocol.monitor import CpuLoadMonitor

    monkeypatch.setattr(CpuLoadMonitor, "foreign_cores", lambda self, start, end: 2.5)
    code = perf_ab.main(["engines", "--sides", "host,host", "--graphs", "uspowergrid", "--batches", "local10k",
                         "--objectives", "0", "--rounds", "5", "--processes", "1", "--max-foreign-cpu", "0.5",
                         "--max-rejects", "0",
                         "--no-control", "--out", str(tmp_path), "--allow-dirty", "--no-progress",
                         "--data-dir", str(shared_data_dir())])
    err = capsys.readouterr().err
    assert code == 4, err
    line = next(x for x in err.splitlines() if x.startswith("perf_ab.py engines: exit 4: cell uspowergrid/local10k/0"))
    assert "exceed --max-rejects 0" in line
    assert "other processes used more CPU than --max-foreign-cpu 0.5 cores" in line and "raise --max-foreign-cpu" in line


def _cuda_usable() -> bool:
    from engines.sssp import cuda

    return cuda.is_available()


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
@pytest.mark.skipif(_cuda_usable(), reason="a CUDA GPU is usable here: make bench would run")
def test_make_bench_without_a_gpu_leaves_status_3(tmp_path):
    """Told at once: the GPU is asked for before anything is installed or prepared (issue 31)."""
    status = tmp_path / "bench-status"
    start = time.monotonic()
    proc = subprocess.run(["make", "--no-print-directory", "bench", f"PYTHON={sys.executable}",
                           f"BENCH_STATUS={status}", f"OUT={tmp_path / 'out'}"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert time.monotonic() - start < 10
    assert proc.returncode == 2  # GNU make's own status for any failed recipe
    assert status.read_text().strip() == "3"  # the step's status, as protocol.md §8 says
    assert "needs CuPy and a CUDA GPU" in proc.stdout and str(status) in proc.stdout
    assert "pip install -e \".[bench]\"" not in proc.stdout + proc.stderr and "prepare" not in proc.stdout
    assert not (tmp_path / "out").exists()
