"""Worker processes (docs/protocol.md §2 "Worker processes"; protocol.md §7 "Hierarchical
interval"; protocol.md §8, §9).

Campaigns on the host reference with spawned worker processes: every worker's rounds carry its
process, the workers of a cell are spread over the campaign, a worker killed mid-cell loses only
its unfinished round, and --resume re-runs only that worker, in a new process. The hierarchical
statistics are in test_stats.py; here the summary and the report that show them.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bench import perf_ab
from protocol.errors import UsageError
from protocol.exitcodes import ExitCode, campaign_exit_code
from protocol.instruments import Instruments
from protocol.records import RecordStore, cell_key
from protocol.report import render_report
from protocol.runner import CampaignRunner
from protocol.sides import Side
from protocol.stats import hierarchical_ratio
from protocol.units import cell_state

from .helpers import KillingSide, SleepingSide, VirtualClock, VirtualSide, host_config, small_graph_input

HOST = Side("host", "host")


@pytest.fixture(scope="module")
def toy():
    return small_graph_input(n=600, m=2400)


def run(config, inputs, out, *, resume=False, **runner_options):
    store = RecordStore(out)
    with Instruments.open(gpu=False) as inst:
        code = CampaignRunner(config, store, inst, resume=resume, **runner_options).run(inputs)
    return code, store


def worker_config(**overrides):
    return host_config(**{"rounds": 6, "processes": 3, "objectives": [0, 1], **overrides})


def timed(rows):
    return rows[~rows["warmup"]]


# -- spawned workers --------------------------------------------------------------------------------
@pytest.mark.slow
def test_each_worker_process_records_its_rounds_and_the_workers_are_spread(toy, tmp_path):
    code, store = run(worker_config(control=True), [toy], tmp_path)
    assert code in (ExitCode.OK, ExitCode.TOO_NOISY)  # TOO_NOISY only if the A/A control says so
    rows = store.read_rounds()
    acc = timed(rows)[timed(rows)["accepted"]]
    # every cell (the A/A control too): three workers, two accepted pairs each (ceil(6 / 3))
    per = acc.groupby(["cell", "process", "role"]).size()
    assert set(per.index.get_level_values("cell")) == {"toy/mixed/0", "toy/mixed/1", "toy/mixed/0/control"}
    assert (per == 2).all() and len(per) == 3 * 3 * 2
    # each worker ran its own guard-free warm-up: 2 rounds per side per worker
    warm = rows[rows["warmup"]].groupby(["cell", "process"]).size()
    assert (warm == 4).all() and len(warm) == 9
    # worker-major: all of worker 0's cells before any of worker 1's, then worker 2's
    spans = rows.groupby("process")["timestamp"].agg(["min", "max"]).sort_index()
    assert spans["max"][0] < spans["min"][1] and spans["max"][1] < spans["min"][2]
    campaign = store.read_campaign()
    assert campaign["parameters"]["processes"] == 3 and campaign["sessions"][0]["workers"] == "processes"
    for key in ("toy/mixed/0", "toy/mixed/1"):
        units = campaign["cells"][key]["workers"]
        assert {w: u["status"] for w, u in units.items()} == {"0": "done", "1": "done", "2": "done"}
        assert campaign["cells"][key]["accepted_pairs"] == 6
    cell = store.read_summary()["cells"][0]
    assert cell["processes"] == 3 and cell["accepted"] == {"A": 6, "B": 6}
    assert cell["within_spread"] is not None and cell["between_spread"] is not None
    spread = cell["regions"][cell["primary_region"]]["processes"]
    assert spread["pairs"] == [2, 2, 2] and len(spread["medians"]) == 3
    assert cell["regions"][cell["primary_region"]]["paired"]["processes"] == 3
    # the campaign process never measured: its copy of the graph is untouched
    assert toy.graph.state_id == toy.graph.snapshot().state_id


@pytest.mark.slow
def test_a_killed_worker_loses_nothing_else_and_resume_reruns_only_it(toy, tmp_path):
    marker = tmp_path / "killed"
    # side B per unit: guard 1, warm-up 2, timed 3 (3 pairs each): call 10 of worker 0's process is
    # the first timed round of B in the second cell, right after A's round of that pair
    config = worker_config(processes=2, sides=(HOST, KillingSide("host", marker, at_call=10)))
    code, store = run(config, [toy], tmp_path / "out")
    assert marker.exists()
    assert code == ExitCode.ENVIRONMENT  # a crashed worker: not a wrong answer, an incomplete campaign
    campaign = store.read_campaign()
    crashed = campaign["cells"]["toy/mixed/1"]
    assert crashed["status"] == "worker_failed"
    assert crashed["workers"]["0"]["status"] == "crashed" and crashed["workers"]["1"]["status"] == "done"
    assert "SIGKILL" in crashed["workers"]["0"]["detail"] and "--resume" in crashed["detail"]
    assert campaign["cells"]["toy/mixed/0"]["status"] == "done"
    rows = store.read_rounds()
    lost_unit = (rows["cell"] == "toy/mixed/1") & (rows["process"] == 0)
    # the dead worker's finished rounds are kept: its warm-up and the first round of the pair
    assert rows[lost_unit]["warmup"].sum() == 4 and (~rows[lost_unit]["warmup"]).sum() == 1
    # every other unit is complete
    for key, process in (("toy/mixed/0", 0), ("toy/mixed/0", 1), ("toy/mixed/1", 1)):
        unit = timed(rows[(rows["cell"] == key) & (rows["process"] == process)])
        assert unit["accepted"].sum() == 6, (key, process)
    summary = {c["cell"]: c for c in store.read_summary()["cells"]}
    assert summary["toy/mixed/1"]["status"] == "worker_failed"
    assert "crashed worker process" in render_report(store).read_text()

    code, store = run(config, [toy], tmp_path / "out", resume=True)
    assert code == ExitCode.OK
    again = store.read_rounds()
    # the finished units were not run again: their rows are exactly as before
    others = ~((again["cell"] == "toy/mixed/1") & (again["process"] == 0))
    before = ~lost_unit
    cols = ["cell", "process", "session", "role", "pair_index", "engine_host_ms", "timestamp"]
    pd.testing.assert_frame_equal(again[others][cols].reset_index(drop=True), rows[before][cols].reset_index(drop=True))
    # the crashed unit ran again in a new process: the new session's rows complete it
    unit = again[(again["cell"] == "toy/mixed/1") & (again["process"] == 0)]
    assert set(unit["session"]) == {0, 1}
    assert (unit[unit["session"] == 0]["reject_reason"].dropna() == "pair interrupted").all()
    new = timed(unit[unit["session"] == 1])
    assert new["accepted"].sum() == 6
    campaign = store.read_campaign()
    assert campaign["cells"]["toy/mixed/1"]["status"] == "done"
    assert campaign["cells"]["toy/mixed/1"]["workers"]["0"]["session"] == 1
    assert [s["resumed"] for s in campaign["sessions"]] == [False, True]


@pytest.mark.slow
def test_a_silent_worker_is_killed_at_its_deadline_and_reported_as_crashed(toy, tmp_path):
    import os

    marker = tmp_path / "slept"
    # the same call as the killed worker's above (B's first timed round of worker 0's second cell),
    # but the process stays alive and silent, far past the tiny deadline
    config = worker_config(processes=2, worker_timeout=1.0,
                           sides=(HOST, SleepingSide("host", marker, at_call=10, seconds=3600)))
    code, store = run(config, [toy], tmp_path / "out")
    assert code == ExitCode.ENVIRONMENT  # it returned, as for a crashed worker
    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):  # the silent worker was killed (and reaped)
        os.kill(pid, 0)
    campaign = store.read_campaign()
    hung = campaign["cells"]["toy/mixed/1"]
    assert hung["status"] == "worker_failed" and "--resume" in hung["detail"]
    assert hung["workers"]["0"]["status"] == "crashed" and hung["workers"]["1"]["status"] == "done"
    detail = hung["workers"]["0"]["detail"]
    assert f"(pid {pid}) sent nothing for " in detail and "while measuring cell toy/mixed/1 (worker 0)" in detail
    assert "and was killed" in detail and "its 0 accepted pairs are kept" in detail
    assert campaign["cells"]["toy/mixed/0"]["status"] == "done"
    rows = store.read_rounds()
    hung_unit = (rows["cell"] == "toy/mixed/1") & (rows["process"] == 0)
    # what the silent worker recorded before it went silent is kept: its warm-up, A's round of the pair
    assert rows[hung_unit]["warmup"].sum() == 4 and (~rows[hung_unit]["warmup"]).sum() == 1
    for key, process in (("toy/mixed/0", 0), ("toy/mixed/0", 1), ("toy/mixed/1", 1)):
        unit = timed(rows[(rows["cell"] == key) & (rows["process"] == process)])
        assert unit["accepted"].sum() == 6, (key, process)
    assert "crashed worker process" in render_report(store).read_text()


@pytest.mark.slow
def test_the_command_runs_three_workers_by_default_reading_the_cache(tmp_path, capsys):
    rng = np.random.default_rng(5)
    edges = rng.integers(1, 201, size=(600, 2))
    graph = tmp_path / "small.edges"
    graph.write_text("".join(f"{u} {v}\n" for u, v in edges))
    out = tmp_path / "records"
    code = perf_ab.main(["engines", "--sides", "host,host", "--batches", "local10k", "--objectives", "0",
                         "--rounds", "6", "--max-foreign-cpu", "1000", "--allow-dirty", "--no-progress",
                         "--no-control", "--graph-file", str(graph), "--out", str(out),
                         "--cache-dir", str(tmp_path / "cache")])
    assert code == 0, capsys.readouterr().err
    rows = RecordStore(out).read_rounds()
    assert sorted(set(rows["process"])) == [0, 1, 2]
    campaign = json.loads((out / "campaign.json").read_text())
    assert campaign["parameters"]["processes"] == 3 and "--processes 3" in campaign["reproduce"]
    report = (out / "M7.md").read_text()
    assert "3 worker processes per cell (2 accepted pairs each" in report
    assert "| cell | processes | median B / A per process (pairs) | spread within | spread between |" in report


# -- in-process workers (deterministic) ---------------------------------------------------------
def test_in_process_workers_on_a_virtual_clock_give_a_hierarchical_interval(toy, tmp_path, monkeypatch):
    import protocol.region

    clock = VirtualClock()
    monkeypatch.setattr(protocol.region, "time", clock)  # the engine timing: the whole update and its region
    rng = np.random.default_rng(3)
    sides = (VirtualSide("host", clock, rng), VirtualSide("host-b", clock, rng, slowdown=0.05))
    config = host_config(sides=sides, rounds=21, processes=3)
    code, store = run(config, [toy], tmp_path, in_process=True)
    assert code == ExitCode.OK
    cell = store.read_summary()["cells"][0]
    assert cell["processes"] == 3 and cell["verdict"].startswith("B slower by ")
    rows = store.read_rounds()
    acc = timed(rows)[timed(rows)["accepted"]]
    a = acc[acc["role"] == "A"].sort_values(["process", "pair_index"])
    b = acc[acc["role"] == "B"].sort_values(["process", "pair_index"])
    expected = hierarchical_ratio(a["engine_host_ms"], b["engine_host_ms"], a["process"], seed=0)
    got = (cell["ratio"], cell["ratio_lo"], cell["ratio_hi"])
    assert got == pytest.approx((expected.median, expected.lo, expected.hi))
    assert store.read_campaign()["sessions"][0]["workers"] == "in_process"
    assert "run inside the campaign's process" in render_report(store).read_text()


def test_round_files_recorded_before_the_process_column_read_as_worker_zero(toy, tmp_path):
    import pyarrow.parquet as pq

    code, store = run(host_config(rounds=5), [toy], tmp_path)
    assert code == ExitCode.OK
    before = store.read_summary()["cells"][0]
    path = next(store.root.glob("rounds/*.parquet"))
    pq.write_table(pq.read_table(path).drop_columns(["process"]), path)
    rows = RecordStore(tmp_path).read_rounds()
    assert (rows["process"] == 0).all()
    store.summary_path.unlink()
    render_report(store)
    after = store.read_summary()["cells"][0]
    assert after["processes"] == 1 and (after["ratio"], after["ratio_lo"]) == (before["ratio"], before["ratio_lo"])


def test_resume_of_a_campaign_recorded_before_workers_existed(toy, tmp_path):
    code, store = run(host_config(rounds=5), [toy], tmp_path)
    campaign = store.read_campaign()
    del campaign["parameters"]["processes"]  # an older record: one process, not recorded
    store.write_campaign(campaign)
    code, _ = run(host_config(rounds=5), [toy], tmp_path, resume=True)
    assert code == ExitCode.OK
    with pytest.raises(UsageError, match="differ from the recorded campaign in processes"):
        run(host_config(rounds=5, processes=2), [toy], tmp_path, resume=True)


# -- the parts ----------------------------------------------------------------------------------
def test_rounds_split_over_the_workers_and_their_limits():
    assert host_config(rounds=21, processes=3).rounds_per_process == 7
    assert host_config(rounds=21, processes=2).rounds_per_process == 11  # rounded up: never fewer
    assert host_config(rounds=5, processes=3, max_rounds=20).max_rounds_per_process == 7
    with pytest.raises(UsageError, match="at least 2 accepted pairs"):
        host_config(rounds=5, processes=5)
    with pytest.raises(UsageError, match="at least 1 worker"):
        host_config(processes=0)
    assert host_config(processes=3).parameters()["processes"] == 3


def test_a_worker_deadline_grows_with_the_longest_silence_and_has_a_floor():
    from protocol.workers import SETUP_TIMEOUT_S, SILENCE_MULTIPLE, WorkerPass, WorkerSetup

    worker = WorkerPass(WorkerSetup(config=worker_config(worker_timeout=20.0), campaign_id="x", session=0,
                                    process=0))
    assert worker._deadline_s(in_unit=False) == SETUP_TIMEOUT_S  # starting and loading a graph
    assert worker._deadline_s(in_unit=True) == 20.0  # nothing seen yet: the floor
    worker.longest_silence_s = 5.0
    assert worker._deadline_s(in_unit=True) == SILENCE_MULTIPLE * 5.0
    patient = WorkerPass(WorkerSetup(config=worker_config(worker_timeout=2 * SETUP_TIMEOUT_S), campaign_id="x",
                                     session=0, process=0))
    assert patient._deadline_s(in_unit=False) == 2 * SETUP_TIMEOUT_S  # the option raises the setup's too


def test_the_worker_timeout_is_checked_and_not_a_recorded_parameter():
    assert "worker_timeout" not in worker_config(worker_timeout=5.0).parameters()
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(UsageError, match="--worker-timeout"):
            worker_config(worker_timeout=bad)


def test_cell_state_from_its_units():
    done = {"status": "done"}
    assert cell_state({"0": done, "1": done}, 2) == ("done", None)
    assert cell_state({"0": done}, 2) == ("running", None)
    crashed = {"status": "crashed", "detail": "the worker process was killed by signal 9 (SIGKILL)"}
    status, detail = cell_state({"0": done, "1": crashed}, 2)
    assert status == "worker_failed" and detail.startswith("worker 1: the worker process was killed")
    assert "--resume" in detail
    noisy = {"status": "too_noisy", "detail": "3 rejected pairs exceed --max-rejects 2"}
    assert cell_state({"0": crashed, "1": noisy}, 2)[0] == "too_noisy"
    wrong = {"status": "check_failed", "detail": "digest"}
    assert cell_state({"0": noisy, "1": wrong}, 2) == ("check_failed", "worker 1: digest")
    assert cell_state({"0": wrong}, 1) == ("check_failed", "digest")  # one worker: the detail as before


def test_exit_code_of_a_crashed_worker():
    assert campaign_exit_code(["done", "worker_failed"]) == ExitCode.ENVIRONMENT
    assert campaign_exit_code(["worker_failed", "too_noisy"]) == ExitCode.ENVIRONMENT
    assert campaign_exit_code(["worker_failed", "check_failed"]) == ExitCode.CORRECTNESS


def test_the_report_shows_both_spreads(tmp_path):
    from .test_report import _write_fixture

    store = _write_fixture(tmp_path)
    key = cell_key("roadNet-PA", "safe50k", 0)
    rounds = store.cell_rounds(key)
    for row in rounds.rows:  # three workers of seven pairs; worker 2 of this cell 3 % slower
        process = row["pair_index"] % 3 if row["pair_index"] >= 0 else 0
        row["process"] = process
        if process == 2 and row["role"] == "B" and row["engine_device_ms"] is not None:
            row["engine_device_ms"] *= 1.03
    rounds.amend(0)  # rewrite the file with the changed rows
    text = render_report(store).read_text()
    cell = next(c for c in store.read_summary()["cells"] if c["cell"] == key)
    assert cell["processes"] == 3 and cell["between_spread"] > 0.02 > cell["within_spread"]
    verdicts = text.split("## 2. Verdicts", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in verdicts.splitlines() if line.startswith("| roadNet-PA | safe50k | 0 |"))
    assert row.rstrip(" |").endswith(
        f"3: {100 * cell['within_spread']:.1f} % / {100 * cell['between_spread']:.1f} %")
    per_process = next(line for line in verdicts.splitlines() if line.startswith(f"| {key} | 3 |"))
    spread = cell["regions"]["engine_device"]["processes"]
    assert ", ".join(f"{m:.3f} ({n})" for m, n in zip(spread["medians"], spread["pairs"])) in per_process
    # the other cells ran in one process: no between-process spread, and no per-process row
    one = next(line for line in verdicts.splitlines() if line.startswith("| roadNet-PA | safe50k | 1 |"))
    assert one.rstrip(" |").endswith(" / –") and "| roadNet-PA/safe50k/1 | " not in verdicts
    assert "The medians of the worker processes differ by up to" in text


def test_in_a_container_the_worker_context_is_ours_too():
    # NVML lists host PIDs there: the campaign process and its worker process each hold a context
    from protocol.monitor import foreign_gpu_processes
    from protocol.nvml import Nvml

    from .fake_nvml import FakeNvml

    invisible = 2**22 + 12345  # above Linux's pid_max: a PID of another namespace
    fake = FakeNvml(processes=[invisible, invisible + 1])
    nvml = Nvml.load(fake)
    h = nvml.handle()
    assert foreign_gpu_processes(nvml, h, own_context=2) == []
    assert foreign_gpu_processes(nvml, h, own_context=True) == [invisible + 1]
    fake.processes = [invisible, invisible + 1, invisible + 2]
    assert foreign_gpu_processes(nvml, h, own_context=2) == [invisible + 2]
    with Instruments.open(gpu=True, nvml_module=fake, own_context=True) as inst:
        inst.worker_contexts = 1  # what the runner sets while spawned workers measure a CUDA side
        fields, reason = inst.end_round(inst.begin_round())
        assert fields["foreign_gpu_pids"] == str(invisible + 2) and "foreign GPU" in reason
