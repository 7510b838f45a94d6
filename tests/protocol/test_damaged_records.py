"""Damaged records (issue 15, defect 4): ``report`` and ``engines --resume`` end with exit 2 and a
message naming the file and what is wrong, before anything is written; no traceback, no advice to
--resume. A damaged summary.json, being derived, is rebuilt."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from bench import perf_ab
from protocol.errors import UsageError
from protocol.records import RecordStore

from .helpers import record_host_campaign

CAMPAIGN_ARGS = ["--sides", "host,host", "--batches", "local10k", "--objectives", "0", "--rounds", "5",
                 "--max-foreign-cpu", "1000", "--allow-dirty", "--no-progress", "--no-control"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A finished host campaign on a small graph file (the records every test damages a copy of)."""
    root = tmp_path_factory.mktemp("recorded")
    graph, out = record_host_campaign(root, 5, CAMPAIGN_ARGS)
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


def _first_cell(campaign):
    return next(iter(campaign["cells"].values()))


# fields the report computes with (int(), :g, .get()) that campaign_problem did not check: a value
# of the wrong type was a traceback called a bug in ssspab (exit 1), or, for accepted_pairs, the
# message "it holds 5 accepted pairs ..., but campaign.json records 5"
WRONG_TYPES = {
    "bootstrap_resamples": (lambda c: c["parameters"].update(bootstrap_resamples="x"),
                            "parameters: field 'bootstrap_resamples' is a string, expected an integer"),
    "processes": (lambda c: c["parameters"].update(processes=None),
                  "parameters: field 'processes' is null, expected an integer"),
    "max_foreign_cpu": (lambda c: c["parameters"].update(max_foreign_cpu="1"),
                        "parameters: field 'max_foreign_cpu' is a string, expected a number"),
    "gpu": (lambda c: c.update(gpu=5), "field 'gpu' is an integer, expected an object or null"),
    "clocks": (lambda c: c.update(clocks="locked"), "field 'clocks' is a string, expected an object or null"),
    "accepted_pairs": (lambda c: _first_cell(c).update(accepted_pairs="5"),
                       "field 'accepted_pairs' is a string, expected an integer or null"),
    "workers": (lambda c: _first_cell(c).update(workers=[]), "field 'workers' is a list, expected an object"),
}


@pytest.mark.parametrize("how", list(WRONG_TYPES))
def test_a_field_of_the_wrong_type_is_named_not_a_traceback(copy, capsys, how):
    graph, out, cache = copy
    path = out / "campaign.json"
    campaign = json.loads(path.read_text())
    damage, message = WRONG_TYPES[how]
    damage(campaign)
    path.write_text(json.dumps(campaign))
    (out / "summary.json").unlink()
    assert perf_ab.main(["report", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: damaged record: " in err and message in err and "internal error" not in err
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert resume(graph, out, cache) == 2
    assert message in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_optional_fields_may_be_absent(copy):
    """Campaigns recorded before a field existed lack it: only a present field's type is checked."""
    _, out, _ = copy
    path = out / "campaign.json"
    campaign = json.loads(path.read_text())
    for name in ("gpu", "clocks", "host"):
        campaign.pop(name, None)
    for name in ("processes", "bootstrap_resamples", "seed"):
        campaign["parameters"].pop(name)
    path.write_text(json.dumps(campaign))
    assert RecordStore(out).read_campaign()["campaign_id"] == campaign["campaign_id"]


# values of a round file the pair count does not see, each a silent wrong answer before: a role
# other than A/B made the finished cell "not measured", a negative time moved the interval below 0
ROUND_DAMAGES = {
    "role": (lambda rows: rows.assign(role="C"), "a round's role is 'C', not A or B"),
    "null role": (lambda rows: rows.assign(role=[None] + list(rows["role"][1:])), "a round's role is null"),
    "null accepted": (lambda rows: rows.assign(accepted=[None] + list(rows["accepted"][1:])),
                      "a round's accepted is null"),
    "negative time": (lambda rows: rows.assign(engine_host_ms=-rows["engine_host_ms"]), "is -"),
    "infinite time": (lambda rows: rows.assign(update_host_ms=float("inf")), "update_host_ms is inf, not a time"),
    # every row twice: the pair count (per worker and pair index) stays the same, the statistics
    # counted each round twice
    "copied rows": (lambda rows: pd.concat([rows, rows], ignore_index=True), "is recorded more than once"),
}


@pytest.mark.parametrize("how", list(ROUND_DAMAGES))
def test_round_values_that_cannot_be_a_measurement_are_named(copy, capsys, how):
    import pyarrow as pa
    import pyarrow.parquet as pq

    graph, out, cache = copy
    [rounds] = sorted((out / "rounds").glob("*.parquet"))
    damage, message = ROUND_DAMAGES[how]
    rows = damage(pq.read_table(rounds).to_pandas())
    pq.write_table(pa.Table.from_pandas(rows, preserve_index=False), rounds)
    (out / "summary.json").unlink()
    assert perf_ab.main(["report", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{rounds}: damaged record: " in err and message in err and "internal error" not in err
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert resume(graph, out, cache) == 2
    assert message in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_the_committed_round_files_pass_the_value_checks():
    from protocol.environment import REPO_ROOT

    for folder in {p.parent.parent for p in (REPO_ROOT / "results").rglob("rounds/*.parquet")}:
        RecordStore(folder).read_rounds()  # raises if the checks refused real records
