"""No silent data loss (protocol.md §9): a new campaign never replaces one in ``--out`` without
``--force``; the report's reproduce lines name every folder; a summary derived from other records
than those in the folder is never used.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from bench import perf_ab
from protocol import SCHEMA_VERSION
from protocol.config import CampaignConfig
from protocol.outlock import LOCK_NAME
from protocol.records import ROUND_COLUMNS, RecordStore, cell_key
from protocol.sides import parse_sides
from protocol.reproduce import engines_command, line_path, prepare_command, recorded_option, report_command
from tests.conftest import shared_data_dir

REPO = Path(__file__).resolve().parents[2]
KEY = cell_key("toy", "mixed", 0)


def _campaign(campaign_id="c0ffee000001", *, finished=True, status="done", reproduce=None):
    return {
        "schema_version": SCHEMA_VERSION,
        "campaign_id": campaign_id,
        "started_utc": "2025-01-01T00:00:00.000+00:00",
        "finished_utc": "2025-01-01T01:00:00.000+00:00" if finished else None,
        "reproduce": reproduce,
        "parameters": CampaignConfig(sides=parse_sides("host,host")).parameters(),
        "inputs": [],
        "cells": {KEY: {"graph": "toy", "batch": "mixed", "objective": 0, "status": status}},
        "sessions": [{"started_utc": "2025-01-01T00:00:00.000+00:00"}],
    }


def _round(**values):
    row = dict.fromkeys(ROUND_COLUMNS)
    row.update({"campaign_id": "c0ffee000001", "cell": KEY, "graph": "toy", "batch": "mixed", "objective": 0, "role": "A", "side": "host",
                "warmup": False, "accepted": True, "pair_index": 0, "engine_host_ms": 1.0, **values})
    return row


def _records(folder, **campaign):
    store = RecordStore(folder)
    store.write_campaign(_campaign(**campaign))
    store.cell_rounds(KEY).append(_round(), _round(role="B", engine_host_ms=1.1))
    return store


def _snapshot(folder: Path) -> dict:
    """The records in ``folder`` (the lock a campaign takes on it is no record)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != LOCK_NAME}


def engines(*argv):
    return perf_ab.main(["engines", "--sides", "host,host", "--graphs", "uspowergrid", "--allow-dirty",
                         "--no-progress", *map(str, argv)])


# -- refusing to overwrite --------------------------------------------------------------------------
def test_a_finished_campaign_is_not_replaced(tmp_path, capsys):
    _records(tmp_path)
    before = _snapshot(tmp_path)
    assert engines("--out", tmp_path) == 2
    err = capsys.readouterr().err
    assert "holds the finished campaign c0ffee000001" in err and "1 of 1 cells finished" in err
    assert "--force" in err and "--resume" in err and "another --out" in err
    assert _snapshot(tmp_path) == before  # nothing touched


def test_an_unfinished_campaign_is_offered_resume(tmp_path, capsys):
    _records(tmp_path, finished=False, status="running")
    assert engines("--out", tmp_path) == 2
    err = capsys.readouterr().err
    assert "holds the unfinished campaign c0ffee000001" in err and "Continue it with --resume" in err
    assert "replace it with --force" in err


def test_round_files_alone_are_records_too(tmp_path, capsys):
    RecordStore(tmp_path).cell_rounds(KEY).append(_round())
    before = _snapshot(tmp_path)
    assert engines("--out", tmp_path) == 2
    assert "holds campaign records (round files or an unreadable campaign.json)" in capsys.readouterr().err
    assert _snapshot(tmp_path) == before


def test_resume_refuses_round_files_without_their_campaign_record(tmp_path, capsys):
    """--resume on round files whose campaign.json is gone started a new campaign, and a new
    campaign clears the folder's round files: the measurements that the same command without
    --resume refuses to replace were deleted silently. Now exit 2, nothing touched."""
    RecordStore(tmp_path).cell_rounds(KEY).append(_round())
    before = _snapshot(tmp_path)
    assert engines("--out", tmp_path, "--resume") == 2
    err = capsys.readouterr().err
    assert "holds round files but no campaign.json" in err and "--force" in err and "Traceback" not in err
    assert _snapshot(tmp_path) == before


def test_a_file_named_rounds_is_refused_before_any_record(tmp_path, capsys):
    """--out holding a file named rounds: the campaign wrote campaign.json, then failed its first
    round with 'cannot write the records ... continue with --resume' (exit 3). Now exit 2 before
    anything is written, naming the file."""
    (tmp_path / "rounds").write_text("not a folder")
    before = _snapshot(tmp_path)
    assert engines("--out", tmp_path) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'rounds'} exists and is not a folder" in err and "--resume" not in err
    assert _snapshot(tmp_path) == before


def test_resume_and_force_exclude_each_other(tmp_path, capsys):
    assert engines("--out", tmp_path, "--resume", "--force") == 2
    assert "pass one of them" in capsys.readouterr().err


def test_force_and_resume_pass_the_check(tmp_path):
    from bench.engines_cmd import _check_outputs

    _records(tmp_path)
    args = perf_ab.build_parser().parse_args(["engines", "--out", str(tmp_path), "--force"])
    _check_outputs(args, str(tmp_path))  # no UsageError: --force replaces
    args = perf_ab.build_parser().parse_args(["engines", "--out", str(tmp_path), "--resume"])
    _check_outputs(args, str(tmp_path))  # --resume continues (its parameters are checked later)
    empty = tmp_path / "empty"
    empty.mkdir()
    _check_outputs(perf_ab.build_parser().parse_args(["engines", "--out", str(empty)]), str(empty))


# -- the summary follows the records ----------------------------------------------------------------
def test_a_summary_counts_only_for_the_records_it_came_from(tmp_path):
    store = _records(tmp_path)
    summary = {"campaign_id": "c0ffee000001", "sides": {"A": "host", "B": "host"}, "bootstrap": {}, "cells": []}
    store.write_summary(summary)
    assert store.read_summary()["records_sha256"] == store.records_fingerprint()
    # what the summary does not read may change after it (the runner records the end time last)
    campaign = store.read_campaign()
    store.write_campaign({**campaign, "finished_utc": "2025-01-02T00:00:00.000+00:00", "clocks": {"mode": "x"}})
    assert store.read_summary() is not None
    # a round more: stale
    store.cell_rounds(KEY).append(_round(pair_index=1))
    assert store.read_summary() is None
    store.write_summary(summary)
    assert store.read_summary() is not None
    # a cell's status changed: stale
    campaign = store.read_campaign()
    campaign["cells"][KEY]["status"] = "too_noisy"
    store.write_campaign(campaign)
    assert store.read_summary() is None
    # another campaign's summary (the issue: `git checkout -- results` over a host-vs-host run)
    store.write_summary(summary)
    store.write_campaign({**store.read_campaign(), "campaign_id": "another00002"})
    assert store.read_summary() is None


def test_the_report_rebuilds_a_stale_summary(tmp_path):
    from protocol.report import render_report

    store = _records(tmp_path)
    stale = {"campaign_id": "6d0198bf46e4", "sides": {"A": "cuda:fused", "B": "cuda:operators"},
             "bootstrap": {}, "cells": [], "records_sha256": "0" * 64}
    store.summary_path.write_text(json.dumps(stale))
    text = render_report(store).read_text()
    assert "Campaign `c0ffee000001`" in text and "6d0198bf46e4" not in text
    assert "cuda:operators" not in text
    assert store.read_summary()["campaign_id"] == "c0ffee000001"


# -- the reproduce lines ----------------------------------------------------------------------------
def test_the_lines_name_out_and_data_dir():
    line = "python bench/perf_ab.py engines --sides host,host --graphs uspowergrid --out results/x --data-dir ../d"
    campaign = {**_campaign(reproduce=line),
                "inputs": [{"graph": "uspowergrid", "origin": {"kind": "real", "path": "../d/u.mtx"}}]}
    assert prepare_command(campaign) == "python bench/perf_ab.py prepare --graphs uspowergrid --data-dir ../d"
    assert engines_command(campaign, REPO / "elsewhere") == line  # as recorded
    assert report_command(campaign, REPO / "elsewhere") == "python bench/perf_ab.py report --out results/x"
    # a record from before the line carried --out: the folder the records are read from
    old = _campaign(reproduce="python bench/perf_ab.py engines --sides host,host")
    assert engines_command(old, REPO / "results") == "python bench/perf_ab.py engines --sides host,host --out results"
    assert report_command(old, REPO / "results") == "python bench/perf_ab.py report --out results"
    assert recorded_option("x --out 'a b'", "--out") == "a b" and recorded_option(None, "--out") is None


def test_the_recorded_line_spells_out_what_was_measured(tmp_path, monkeypatch):
    from bench.engines_cmd import _rebuild_argv

    monkeypatch.delenv("SSSPAB_DATA_DIR", raising=False)
    monkeypatch.delenv("SSSPAB_SHARED_DATA", raising=False)
    args = perf_ab.build_parser().parse_args(["engines", "--sides", "host,host"])
    argv = _rebuild_argv(args, gates=["roadNet-PA", "road_usa"], out=tmp_path / "r")
    assert argv[argv.index("--graphs") + 1:argv.index("--graphs") + 3] == ["roadNet-PA", "road_usa"]
    assert argv[argv.index("--out") + 1] == str(tmp_path / "r")  # outside the repository: as given
    assert "--data-dir" not in argv and "--resume" not in argv and "--force" not in argv
    assert argv[argv.index("--rounds") + 1] == "21" and argv[argv.index("--sides") + 1] == "host,host"
    if hasattr(args, "processes"):  # the worker processes, where this version has them
        assert argv[argv.index("--processes") + 1] == str(args.processes)
    monkeypatch.setenv("SSSPAB_DATA_DIR", str(tmp_path / "data"))
    argv = _rebuild_argv(args, out=tmp_path / "r")
    assert argv[argv.index("--data-dir") + 1] == str(tmp_path / "data")
    args = perf_ab.build_parser().parse_args(["engines", "--data-dir", str(REPO / "x")])
    assert _rebuild_argv(args, out=REPO / "results")[-4:] == ["--out", "results", "--data-dir", "x"]


@pytest.mark.skipif(shared_data_dir() is None, reason="shared real graphs not found (../shared/data)")
@pytest.mark.slow
def test_the_printed_lines_run_and_never_delete_the_records(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)  # the lines are relative to the repository
    out = tmp_path / "results"
    assert engines("--batches", "local10k", "--objectives", "0", "--rounds", "5", "--max-foreign-cpu", "1000",
                   "--no-control", "--out", out, "--data-dir", shared_data_dir()) == 0
    capsys.readouterr()
    section = (out / "M7.md").read_text().split("## 9. Reproduce", 1)[1]
    lines = [line for line in section.splitlines() if line.startswith("python bench/perf_ab.py")]
    assert [shlex.split(line)[2] for line in lines] == ["prepare", "engines", "report"]
    prepare, engines_line, report = (shlex.split(line)[2:] for line in lines)
    assert prepare[prepare.index("--data-dir") + 1] == line_path(shared_data_dir())
    assert engines_line[engines_line.index("--out") + 1] == str(out)  # outside the repository: as given
    assert report == ["report", "--out", str(out)]
    before = _snapshot(out)
    assert perf_ab.main([*engines_line, "--no-progress", "--allow-dirty"]) == 2  # refused, as printed
    assert "--force" in capsys.readouterr().err
    assert _snapshot(out) == before
    assert perf_ab.main(prepare + ["--no-progress"]) == 0
    assert perf_ab.main(report) == 0
