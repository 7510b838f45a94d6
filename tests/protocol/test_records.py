"""Records (protocol.md §9): Parquet rounds and JSON, flushed per round, surviving interruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from protocol.errors import UsageError
from protocol.exitcodes import ExitCode
from protocol.instruments import Instruments
from protocol.records import ROUND_COLUMNS, RecordStore, cell_key
from protocol.runner import CampaignRunner

from .campaign_script import config_for_tests
from .helpers import HookedSide, host_config, small_graph_input

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def toy():
    # one per test: an interrupted campaign leaves its graph in the post-batch state (its process
    # would end there), and every side now re-checks the prepared tree against compute()
    return small_graph_input()


def _row(**values):
    row = dict.fromkeys(ROUND_COLUMNS)
    row.update(values)
    return row


def test_cell_rounds_round_trip_and_amend(tmp_path):
    store = RecordStore(tmp_path)
    rounds = store.cell_rounds(cell_key("g", "b", 0))
    rounds.append(_row(cell="g/b/0", role="A", accepted=True, engine_host_ms=1.5, pair_index=0, warmup=False))
    rounds.append(_row(cell="g/b/0", role="B", accepted=True, engine_host_ms=2.5, pair_index=0, warmup=False))
    rounds.amend(0, accepted=False, reject_reason="pair repeated")
    frame = store.read_rounds({"campaign_id": None, "cells": {"g/b/0": {"status": "running"}}})
    assert list(frame.columns) == list(ROUND_COLUMNS)
    assert frame["engine_host_ms"].tolist() == [1.5, 2.5]
    assert frame["accepted"].tolist() == [False, True]
    assert frame["reject_reason"].tolist()[0] == "pair repeated"
    # reopening (as --resume does) sees the same rows; no temporary files are left
    assert len(store.cell_rounds("g/b/0").rows) == 2
    assert [p.name for p in (tmp_path / "rounds").iterdir()] == ["g__b__0.parquet"]
    with pytest.raises(ValueError, match="lacks"):
        rounds.append({"cell": "g/b/0"})


def test_empty_store_reads_an_empty_frame(tmp_path):
    frame = RecordStore(tmp_path).read_rounds({"campaign_id": "c0ffee000001", "cells": {}})
    assert frame.empty and list(frame.columns) == list(ROUND_COLUMNS)
    with pytest.raises(UsageError, match="campaign.json"):
        RecordStore(tmp_path).read_campaign()


def test_campaign_record_has_schema_environment_and_inputs(toy, tmp_path):
    with Instruments.open(gpu=False) as inst:
        CampaignRunner(host_config(), RecordStore(tmp_path), inst).run([toy])
    campaign = RecordStore(tmp_path).read_campaign()
    assert campaign["schema_version"] == 1
    assert set(campaign["sessions"][0]["git"]) == {"commit", "dirty", "dirty_allowed"}
    host = campaign["host"]
    assert {"cpu_model", "logical_cores", "os", "python", "numpy", "cupy"} <= set(host)
    text = (tmp_path / "campaign.json").read_text()
    assert os.uname().nodename not in text  # no host name in records
    entry = campaign["inputs"][0]
    assert entry["origin"]["kind"] == "standin" and entry["batches"][0]["sha256"] == "ab" * 32
    assert campaign["parameters"]["sides"] == {"A": "host", "B": "host"}
    assert campaign["finished_utc"] is not None


def test_interrupted_campaign_resumes_to_completion(toy, tmp_path):
    def interrupt(call):
        if call == 7:
            raise KeyboardInterrupt

    config = config_for_tests(HookedSide("host", interrupt))
    with pytest.raises(KeyboardInterrupt):
        with Instruments.open(gpu=False) as inst:
            CampaignRunner(config, RecordStore(tmp_path), inst).run([toy])
    store = RecordStore(tmp_path)
    kept = store.read_rounds()
    assert len(kept) > 0 and store.read_campaign()["cells"]["toy/mixed/0"]["status"] == "running"
    # a resume loads its inputs anew (the interrupted process's graph was left mid-update)
    _resume_and_check(store, small_graph_input(), kept)


def _resume_and_check(store, toy, kept):
    with Instruments.open(gpu=False) as inst:
        code = CampaignRunner(config_for_tests(), store, inst, resume=True).run([toy])
    assert code == ExitCode.OK
    rows = store.read_rounds()
    # every round finished before the interruption is still there, unchanged (but for a half
    # pair's first round, which is no longer counted)
    half = ~kept["warmup"] & ~kept.duplicated("pair_index", keep=False) & (kept["pair_index"] == kept["pair_index"].max())
    same = ["role", "pair_index", "engine_host_ms", "update_host_ms", "session", "timestamp"]
    pd.testing.assert_frame_equal(rows.iloc[: len(kept)][same].reset_index(drop=True), kept[same].reset_index(drop=True))
    assert (rows.iloc[: len(kept)][half.to_numpy()]["reject_reason"] == "pair interrupted").all()
    timed = rows[~rows["warmup"]]
    acc = timed[timed["accepted"]]
    assert acc.groupby("role").size().to_dict() == {"A": 6, "B": 6}
    assert not acc.duplicated(["role", "pair_index"]).any()
    assert set(rows["session"]) == {0, 1}
    campaign = store.read_campaign()
    assert len(campaign["sessions"]) == 2 and campaign["cells"]["toy/mixed/0"]["status"] == "done"
    assert store.read_summary()["cells"][0]["accepted"] == {"A": 6, "B": 6}


def test_resume_refuses_changed_parameters(toy, tmp_path):
    with Instruments.open(gpu=False) as inst:
        CampaignRunner(config_for_tests(), RecordStore(tmp_path), inst).run([toy])
    with pytest.raises(UsageError, match="rounds"):
        with Instruments.open(gpu=False) as inst:
            CampaignRunner(host_config(rounds=7), RecordStore(tmp_path), inst, resume=True).run([toy])


def test_resume_skips_finished_cells(toy, tmp_path):
    with Instruments.open(gpu=False) as inst:
        CampaignRunner(config_for_tests(), RecordStore(tmp_path), inst).run([toy])
    before = RecordStore(tmp_path).read_rounds()
    with Instruments.open(gpu=False) as inst:
        assert CampaignRunner(config_for_tests(), RecordStore(tmp_path), inst, resume=True).run([toy]) == 0
    assert len(RecordStore(tmp_path).read_rounds()) == len(before)


def _child(mode, tmp_path, nvml_log=None):
    marker = tmp_path / "marker"
    args = [sys.executable, "-m", "tests.protocol.campaign_script", mode, str(tmp_path / "out"), str(marker)]
    if nvml_log:
        args.append(str(nvml_log))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while not marker.exists():
        if proc.poll() is not None:
            raise AssertionError(f"child ended early: {proc.returncode} {proc.stderr.read().decode()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("child never reached the pause")
        time.sleep(0.05)
    return proc


@pytest.mark.slow
def test_sigkill_mid_campaign_keeps_rounds_and_resume_completes(toy, tmp_path):
    proc = _child("kill", tmp_path)
    proc.kill()  # SIGKILL: no handler, no flush, nothing runs
    proc.wait(timeout=30)
    store = RecordStore(tmp_path / "out")
    kept = store.read_rounds()
    assert len(kept) >= 4  # the files are whole: atomic rewrites
    _resume_and_check(store, toy, kept)


@pytest.mark.slow
def test_sigterm_resets_locked_clocks(tmp_path):
    log = tmp_path / "nvml.log"
    proc = _child("sigterm", tmp_path, log)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGTERM  # the default action still ends the process
    calls = log.read_text().splitlines()
    assert calls[0].startswith("nvmlDeviceSetGpuLockedClocks 1980 1980")
    assert "nvmlDeviceResetGpuLockedClocks" in calls
    assert "nvmlDeviceResetMemoryLockedClocks" in calls
    assert calls.index("nvmlDeviceResetGpuLockedClocks") > 0


def test_interpreter_exit_resets_locked_clocks(tmp_path):
    log = tmp_path / "nvml.log"
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.protocol.campaign_script", "atexit", str(tmp_path / "o"), str(marker), str(log)],
        cwd=REPO, env=env, capture_output=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    calls = log.read_text().splitlines()
    assert calls[-1] == "nvmlDeviceResetGpuLockedClocks" and calls[0].startswith("nvmlDeviceSetGpuLockedClocks")


def test_exception_in_a_round_resets_locked_clocks(toy, tmp_path):
    from protocol.clocks import LockRequest

    from .fake_nvml import FakeNvml

    fake = FakeNvml()

    def boom(call):
        if call == 5:
            raise KeyboardInterrupt  # escapes the runner, unlike an engine error

    with pytest.raises(KeyboardInterrupt):
        with Instruments.open(gpu=True, nvml_module=fake, lock_request=LockRequest("max"),
                              sample_interval_s=0.01) as inst:
            CampaignRunner(config_for_tests(HookedSide("host", boom)), RecordStore(tmp_path), inst).run([toy])
    assert fake.locked_sm is None and len(fake.called("nvmlDeviceResetGpuLockedClocks")) == 1


def test_engine_error_in_a_round_is_recorded_and_clocks_reset(toy, tmp_path):
    from protocol.clocks import LockRequest

    from .fake_nvml import FakeNvml

    fake = FakeNvml()

    def fail(call):
        if call == 5:
            raise RuntimeError("engine blew up")

    with Instruments.open(gpu=True, nvml_module=fake, lock_request=LockRequest(1500),
                          sample_interval_s=0.01) as inst:
        code = CampaignRunner(config_for_tests(HookedSide("host", fail)), RecordStore(tmp_path), inst).run([toy])
    assert code == ExitCode.CORRECTNESS
    assert "engine blew up" in RecordStore(tmp_path).read_summary()["cells"][0]["detail"]
    assert fake.locked_sm is None and len(fake.called("nvmlDeviceResetGpuLockedClocks")) == 1


@pytest.mark.parametrize("relative", [False, True])
def test_an_interrupted_text_write_keeps_the_earlier_file_and_names_the_file(relative, tmp_path, monkeypatch,
                                                                             interrupted_write):
    from protocol import records

    monkeypatch.chdir(tmp_path)
    path = interrupted_write.of((Path("out") if relative else tmp_path / "out") / "report.md")
    with pytest.raises(OSError) as failure:
        records.write_text(path, "the new report\n")
    interrupted_write.check_kept()
    # the error names the file being written (as a plain open() would), not its temporary file
    assert str(failure.value) == f"[Errno 28] No space left on device: '{path}'"
    assert failure.value.filename == str(path) and failure.value.strerror == "No space left on device"


def test_a_folder_that_refuses_the_temporary_file_names_the_file(tmp_path, monkeypatch):
    from protocol import records

    def refused(prefix, dir):
        raise PermissionError(13, "Permission denied", os.path.join(dir, prefix + "x1y2z3"))

    monkeypatch.setattr(records.tempfile, "mkstemp", refused)
    monkeypatch.chdir(tmp_path)
    for path in (tmp_path / "table.md", Path("table.md")):
        with pytest.raises(PermissionError) as failure:
            records.write_text(path, "text\n")
        assert str(failure.value) == f"[Errno 13] Permission denied: '{path}'"
    assert list(tmp_path.iterdir()) == []


def test_an_error_naming_another_file_is_left_as_it_is(tmp_path):
    from protocol import records

    elsewhere = OSError(5, "Input/output error", str(tmp_path / "other"))

    def write(handle):
        raise elsewhere

    with pytest.raises(OSError) as failure:
        records._atomic_write_bytes(tmp_path / "record.json", write)
    assert failure.value is elsewhere and list(tmp_path.iterdir()) == []


def test_writable_folder_makes_the_folder_and_leaves_nothing_in_it(tmp_path):
    from protocol.records import writable_folder

    folder = tmp_path / "a" / "b"
    assert writable_folder(folder, "--out x") == folder
    assert folder.is_dir() and list(folder.iterdir()) == []


def test_writable_folder_refuses_with_the_label(tmp_path):
    """A folder that cannot be made (a file in its path; a permission check would not hold for
    root): UsageError starting with what the user named, and the system's reason."""
    from protocol.errors import UsageError
    from protocol.records import writable_folder

    (tmp_path / "file").write_text("kept")
    with pytest.raises(UsageError) as exc:
        writable_folder(tmp_path / "file" / "sub", "--out OUT")
    assert str(exc.value) == "--out OUT: cannot write there (Not a directory)"
    assert (tmp_path / "file").read_text() == "kept"
    with pytest.raises(UsageError) as exc:
        writable_folder(tmp_path / "file", "--out OUT")
    assert str(exc.value) == f"--out OUT: cannot write there ({tmp_path / 'file'} is not a folder)"
    assert (tmp_path / "file").read_text() == "kept"


def test_write_failed_names_the_file_and_the_reason():
    from protocol.records import write_failed

    assert write_failed("out/x.md", OSError(28, "No space left on device")) == \
        "cannot write out/x.md: No space left on device"
    assert write_failed("x", OSError("odd")) == "cannot write x: odd"


def test_write_or_say_writes_every_file_and_returns_none(tmp_path, capsys):
    from protocol.records import write_or_say

    files = [(tmp_path / "t.md", "| table |\n"), (str(tmp_path / "r.json"), {"a": 1})]
    assert write_or_say("cmd.py", files) is None
    assert (tmp_path / "t.md").read_text() == "| table |\n"
    assert json.loads((tmp_path / "r.json").read_text()) == {"a": 1}
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("wrong_answer, status", [(False, ExitCode.ENVIRONMENT), (True, ExitCode.CORRECTNESS)])
def test_write_or_say_turns_a_failed_write_into_one_line_and_a_status(wrong_answer, status, tmp_path,
                                                                      interrupted_write, capsys):
    """A write that fails after the work: the shared line on stderr, no exception, the files after
    it not written, and exit 3, or 1 when a wrong answer was already found (it outranks the file)."""
    from protocol.records import write_or_say

    failing = interrupted_write.of(tmp_path / "a.json")
    files = [(tmp_path / "first.md", "kept"), (failing, {"new": True}), (tmp_path / "after.md", "never")]
    assert write_or_say("cmd.py", files, wrong_answer=wrong_answer) == status
    interrupted_write.check_kept()
    assert (tmp_path / "first.md").read_text() == "kept" and not (tmp_path / "after.md").exists()
    assert capsys.readouterr().err == f"cmd.py: cannot write {failing}: No space left on device\n"


def test_write_or_say_raises_what_is_not_a_write_failure(tmp_path):
    """Only OSError is the write's: a record that cannot be encoded is a bug and is raised."""
    from protocol.records import write_or_say

    with pytest.raises(TypeError):
        write_or_say("cmd.py", [(tmp_path / "r.json", {"x": object()})])
