"""``perf_ab.py report`` writes nothing unless asked: the default prints the report, ``--to PATH``
writes that one file, only ``--write`` replaces the report beside the records (issue 31, item 4)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench import perf_ab

RESULTS = Path(__file__).resolve().parents[2] / "results"


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def records(tmp_path) -> Path:
    """The committed campaign's records and report, copied (none of the side studies beside them)."""
    out = tmp_path / "records"
    out.mkdir()
    for name in ("campaign.json", "M7.md"):
        shutil.copy2(RESULTS / name, out / name)
    for name in ("rounds", "plots"):
        shutil.copytree(RESULTS / name, out / name)
    return out


@pytest.mark.slow
def test_the_default_prints_what_write_would_write_and_writes_nothing(records, capsys):
    before = _snapshot(records)
    assert perf_ab.main(["report", "--out", str(records)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("# M7: ") and "](plots/engine_times.png)" in printed
    assert _snapshot(records) == before  # no summary.json, no plots redrawn, the old M7.md kept
    assert perf_ab.main(["report", "--out", str(records), "--write"]) == 0
    assert f"report: {records / 'M7.md'}" in capsys.readouterr().err
    assert (records / "M7.md").read_text() == printed
    assert (records / "summary.json").is_file()


def test_to_writes_one_file_whose_plot_links_reach_the_records(records, tmp_path, capsys):
    before = _snapshot(records)
    target = tmp_path / "elsewhere" / "report.md"
    target.parent.mkdir()
    assert perf_ab.main(["report", "--out", str(records), "--to", str(target)]) == 0
    assert _snapshot(records) == before
    assert "](../records/plots/engine_times.png)" in target.read_text()
    assert (target.parent / "../records/plots/engine_times.png").is_file()
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.md"]


def test_write_and_to_exclude_each_other(records, tmp_path):
    assert perf_ab.main(["report", "--out", str(records), "--write", "--to", str(tmp_path / "r.md")]) == 2


def test_the_committed_report_is_left_alone(capsys):
    """The README's own example, on the committed campaign: it must leave `git status` clean."""
    files = [RESULTS / "M7.md", RESULTS / "campaign.json"]
    before = [p.read_bytes() for p in files]
    had_summary = (RESULTS / "summary.json").exists()
    assert perf_ab.main(["report", "--out", str(RESULTS)]) == 0
    assert capsys.readouterr().out.startswith("# M7: ")
    assert [p.read_bytes() for p in files] == before
    assert (RESULTS / "summary.json").exists() == had_summary


@pytest.mark.slow
def test_a_running_campaign_is_not_reported_and_its_folder_not_written(records, capsys):
    """While a campaign holds --out (protocol/outlock.py), report refuses in every mode: its
    records are half written. Printing never creates the lock file; --write takes the lock."""
    from protocol.outlock import LOCK_NAME, OutLock

    assert not (records / LOCK_NAME).exists()
    assert perf_ab.main(["report", "--out", str(records)]) == 0
    assert not (records / LOCK_NAME).exists()  # printing wrote nothing, not even a lock
    capsys.readouterr()
    with OutLock(records):
        before = _snapshot(records)
        for extra in ([], ["--write"]):
            assert perf_ab.main(["report", "--out", str(records), *extra]) == 2
            err = capsys.readouterr().err
            assert "a campaign is running in" in err and "pid" in err and "Traceback" not in err
        assert _snapshot(records) == before
    assert perf_ab.main(["report", "--out", str(records), "--write"]) == 0  # once it has ended


@pytest.mark.parametrize("name", ["campaign.json", "summary.json", "rounds/roadNet-PA__safe50k__0.parquet",
                                  "rounds/report.md", "rounds/../campaign.json"])
def test_to_a_record_of_the_campaign_is_refused(records, capsys, monkeypatch, name):
    """--to promises that nothing in the records folder changes; --to <out>/campaign.json replaced
    the campaign's record with the report (its measurements' record gone, exit 0)."""
    (records / "summary.json").write_text("{}")
    before = _snapshot(records)
    monkeypatch.chdir(records)  # as typed in the folder: a relative path
    assert perf_ab.main(["report", "--out", str(records), "--to", name]) == 2
    err = capsys.readouterr().err
    assert f"{name} is a place of the campaign's records in {records}" in err and "Traceback" not in err
    assert _snapshot(records) == before
