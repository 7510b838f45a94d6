"""Damaged records (issue 15, defect 4): ``report`` and ``engines --resume`` end with exit 2 and a
message naming the file and what is wrong, before anything is written; no traceback, no advice to
--resume. A damaged summary.json, being derived, is rebuilt."""

from __future__ import annotations

import json
import shutil

import pytest

from bench import perf_ab
from protocol.errors import UsageError
from protocol.records import RecordStore

from .helpers import write_small_edge_list

CAMPAIGN_ARGS = ["--sides", "host,host", "--batches", "local10k", "--objectives", "0", "--rounds", "5",
                 "--max-foreign-cpu", "1000", "--allow-dirty", "--no-progress", "--no-control"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A finished host campaign on a small graph file (the records every test damages a copy of)."""
    root = tmp_path_factory.mktemp("recorded")
    graph = write_small_edge_list(root / "small.edges", 5)
    out = root / "records"
    code = perf_ab.main(["engines", *CAMPAIGN_ARGS, "--graph-file", str(graph), "--out", str(out),
                         "--cache-dir", str(root / "cache")])
    assert code == 0
    return root, graph, out


@pytest.fixture
def copy(recorded, tmp_path):
    root, graph, out = recorded
    target = tmp_path / "records"
    shutil.copytree(out, target)
    return graph, target, root / "cache"


def resume(graph, out, cache):
    return perf_ab.main(["engines", *CAMPAIGN_ARGS, "--graph-file", str(graph), "--out", str(out),
                         "--cache-dir", str(cache), "--resume"])


DAMAGES = {
    "bad JSON": ('{"schema_version": 1, "campaign_id": ', "not valid JSON"),
    "a list": ("[1, 2, 3]\n", "is a list, not an object"),
    "no sessions": (None, "lacks the field 'sessions'"),
    "sessions of the wrong type": ("sessions=str", "field 'sessions' is a string, expected a list"),
    "inputs without batches": ("inputs=nobatches", "inputs[0] lacks the field 'batches'"),
}


def damage_campaign(path, how):
    text, _ = DAMAGES[how]
    if text is None or "=" in text:
        campaign = json.loads(path.read_text())
        if text is None:
            del campaign["sessions"]
        elif text == "sessions=str":
            campaign["sessions"] = "one"
        else:
            del campaign["inputs"][0]["batches"]
        text = json.dumps(campaign)
    path.write_text(text)


@pytest.mark.parametrize("how", list(DAMAGES))
def test_report_on_a_damaged_campaign_record_exits_2(copy, capsys, how):
    _, out, _ = copy
    damage_campaign(out / "campaign.json", how)
    assert perf_ab.main(["report", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'campaign.json'}: damaged record: " in err and DAMAGES[how][1] in err
    assert "Traceback" not in err and "--resume" not in err


@pytest.mark.parametrize("how", list(DAMAGES))
def test_resume_on_a_damaged_campaign_record_exits_2_and_writes_nothing(copy, capsys, how):
    graph, out, cache = copy
    damage_campaign(out / "campaign.json", how)
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert resume(graph, out, cache) == 2
    err = capsys.readouterr().err
    assert "campaign.json: damaged record" in err and DAMAGES[how][1] in err and "Traceback" not in err
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_truncated_round_file(copy, capsys):
    graph, out, cache = copy
    [rounds] = sorted((out / "rounds").glob("*.parquet"))
    rounds.write_bytes(rounds.read_bytes()[: rounds.stat().st_size // 2])
    campaign = (out / "campaign.json").read_bytes()
    assert perf_ab.main(["report", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{rounds}: damaged record: not a readable Parquet file" in err and "Traceback" not in err
    assert resume(graph, out, cache) == 2
    err = capsys.readouterr().err
    assert f"{rounds}: damaged record" in err and "Traceback" not in err
    assert (out / "campaign.json").read_bytes() == campaign  # no session was added


def test_round_file_without_the_round_columns(copy, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    _, out, _ = copy
    [rounds] = sorted((out / "rounds").glob("*.parquet"))
    pq.write_table(pa.table({"cell": ["x"]}), rounds)
    with pytest.raises(UsageError, match="lacks the column"):
        RecordStore(out).read_rounds()


def test_damaged_summary_is_rebuilt(copy, capsys):
    _, out, _ = copy
    good = json.loads((out / "summary.json").read_text())
    for text in ("{not json", "[]", json.dumps({"cells": "none"})):
        (out / "summary.json").write_text(text)
        assert perf_ab.main(["report", "--out", str(out), "--write"]) == 0
        assert json.loads((out / "summary.json").read_text())["cells"] == good["cells"]


def test_the_committed_campaign_record_is_whole():
    from protocol.environment import REPO_ROOT

    RecordStore(REPO_ROOT / "results").read_campaign()  # raises if the checks refused real records


def test_report_into_a_folder_it_cannot_write(copy, capsys, monkeypatch):
    import os

    _, out, _ = copy
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(out) else real_access(p, mode))
    assert perf_ab.main(["report", "--out", str(out), "--write"]) == 2
    err = capsys.readouterr().err
    assert f"the report cannot be written: {out} is not writable" in err and "Traceback" not in err


def test_a_round_file_that_cannot_be_read_is_not_called_damaged(copy, capsys, monkeypatch):
    import pyarrow.parquet as pq

    _, out, _ = copy
    [rounds] = sorted((out / "rounds").glob("*.parquet"))
    real = pq.read_table

    def read_table(path, *args, **kwargs):  # what pyarrow raises for a file without read permission
        if str(path) == str(rounds):
            raise PermissionError(13, f"Failed to open local file '{path}'. Detail: [errno 13] Permission denied")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(pq, "read_table", read_table)
    assert perf_ab.main(["report", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{rounds}: the record cannot be read: " in err and "Permission denied" in err
    assert "damaged" not in err and "Traceback" not in err


def test_a_campaign_record_that_cannot_be_read_is_not_called_damaged(copy, capsys, monkeypatch):
    from protocol import records

    _, out, _ = copy

    def read_json(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(records, "read_json", read_json)
    assert perf_ab.main(["report", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'campaign.json'}: the record cannot be read: Permission denied" in err and "damaged" not in err


def test_a_campaign_record_without_its_schema_version_says_the_field_is_missing(copy, capsys):
    _, out, _ = copy
    campaign = json.loads((out / "campaign.json").read_text())
    del campaign["schema_version"]
    (out / "campaign.json").write_text(json.dumps(campaign))
    assert perf_ab.main(["report", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "damaged record: the campaign record lacks the field 'schema_version'" in err and "None" not in err
    campaign["schema_version"] = 99
    (out / "campaign.json").write_text(json.dumps(campaign))
    assert perf_ab.main(["report", "--out", str(out)]) == 2
    assert "schema version 99, this tool reads 1" in capsys.readouterr().err
