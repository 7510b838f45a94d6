"""One campaign per records folder (issue 28, item 3): an exclusive lock on ``--out`` taken before
anything in it is checked or written; every argument validated before campaign.json exists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bench import perf_ab
from protocol.errors import UsageError
from protocol.outlock import LOCK_NAME, OutLock

from .helpers import write_small_edge_list

REPO = Path(__file__).resolve().parents[2]
ARGS = ["--sides", "host,host", "--objectives", "0", "--rounds", "5", "--processes", "1",
        "--max-foreign-cpu", "1000", "--allow-dirty", "--no-progress", "--no-control"]


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    root = tmp_path_factory.mktemp("one")
    path = write_small_edge_list(root / "small.edges", 11)
    cache = root / "cache"
    # prepared once, so that each campaign below measures without preparing
    assert perf_ab.main(["prepare", "--graph-file", str(path), "--cache-dir", str(cache), "--no-progress"]) == 0
    return path, cache


def _engines(graph, out, *extra):
    path, cache = graph
    return perf_ab.main(["engines", *ARGS, "--batches", "local10k", *extra, "--graph-file", str(path),
                         "--out", str(out), "--cache-dir", str(cache)])


def test_a_second_campaign_is_refused_while_the_first_holds_the_folder(graph, tmp_path, capsys):
    out = tmp_path / "out"
    with OutLock(out):
        assert _engines(graph, out) == 2
    err = capsys.readouterr().err
    assert (f"--out {out} is in use by another campaign (pid {os.getpid()}, started ") in err
    assert f"lock file {out / LOCK_NAME}): one campaign per folder" in err and "Traceback" not in err
    assert not (out / "campaign.json").exists()
    assert _engines(graph, out) == 0  # released: the folder is free again
    assert (out / LOCK_NAME).read_text() == ""  # a holder empties the file when it lets go


def test_a_stale_lock_of_a_dead_process_is_taken_over(graph, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK_NAME).write_text("pid 4000000, started 2025-01-01T00:00:00+00:00\n")  # died holding it
    assert _engines(graph, out) == 0
    err = capsys.readouterr().err
    assert (f"note: took over the stale lock of --out {out} (pid 4000000, started 2025-01-01T00:00:00+00:00; that "
            "process ended without letting go of it)") in err


def test_the_lock_is_released_by_the_death_of_its_holder(tmp_path):
    out = tmp_path / "out"
    code = ("import os, sys; sys.path.insert(0, sys.argv[2]); from protocol.outlock import OutLock; "
            "OutLock(sys.argv[1]).acquire(); os._exit(0)")  # dies without releasing
    subprocess.run([sys.executable, "-c", code, str(out), str(REPO)], check=True)
    lock = OutLock(out).acquire()
    assert lock.stale_holder and lock.stale_holder.startswith("pid ")
    lock.release()


def test_a_held_lock_refuses_in_the_same_process_too(tmp_path):
    out = tmp_path / "out"
    with OutLock(out):
        with pytest.raises(UsageError, match="is in use by another campaign"):
            OutLock(out).acquire()


@pytest.mark.slow
def test_two_campaigns_started_0_3_s_apart_never_both_run(graph, tmp_path):
    path, cache = graph
    out = tmp_path / "out"
    argv = [sys.executable, str(REPO / "bench" / "perf_ab.py"), "engines", *ARGS, "--batches", "local10k",
            "unsafe50k", "--graph-file", str(path), "--out", str(out), "--cache-dir", str(cache)]
    first = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    time.sleep(0.3)
    second = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    results = [(p.wait(timeout=300), p.communicate()[1]) for p in (first, second)]
    assert sorted(code for code, _ in results) == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "is in use by another campaign (pid " in refused
    campaign_id = json.loads((out / "campaign.json").read_text())["campaign_id"]
    ids = {i for f in (out / "rounds").glob("*.parquet") for i in pq.read_table(f).column("campaign_id").to_pylist()}
    assert ids == {campaign_id}


@pytest.mark.parametrize("option, message", [
    (["--batches", "nosuchbatch"], "--batches: no batch named nosuchbatch (every graph has safe50k, unsafe50k, local10k)"),
    (["--objectives", "7"], "--objectives: objective 7 is outside [0, 3): every graph has 3 weight column(s)"),
    (["--objectives", "-1"], "--objectives: objective -1 is negative"),
])
def test_a_bad_selection_is_refused_before_campaign_json_exists(graph, tmp_path, capsys, option, message):
    path, cache = graph
    out = tmp_path / "out"
    argv = ["engines", *ARGS, "--graph-file", str(path), "--out", str(out), "--cache-dir", str(cache)]
    argv = [a for a in argv if a != "--objectives" and a != "0"] if "--objectives" in option else argv
    assert perf_ab.main([*argv, *option]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (out / "campaign.json").exists() and not (out / "rounds").exists()
    # the corrected command is not refused as "unfinished campaign"
    assert _engines(graph, out) == 0
