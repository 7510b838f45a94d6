"""``perf_ab.py report``'s refusals of an --out that is no records folder (the report's rendering
itself is tested in tests/protocol/test_report_cmd.py)."""

from __future__ import annotations

import pytest

from bench import perf_ab


@pytest.mark.parametrize("write", [[], ["--write"]])
def test_an_out_that_is_a_file_is_exit_2_naming_it(tmp_path, capsys, write):
    out = tmp_path / "campaign.md"
    out.write_text("not a folder\n")
    assert perf_ab.main(["report", "--out", str(out), *write]) == 2
    err = capsys.readouterr().err
    assert err == f"perf_ab.py report: error: --out {out} is a file, not a campaign's records folder\n"
    assert out.read_text() == "not a folder\n"  # nothing changed


def test_an_out_under_a_file_is_missing_records(tmp_path, capsys):
    parent = tmp_path / "file"
    parent.write_text("x")
    assert perf_ab.main(["report", "--out", str(parent / "records")]) == 2
    err = capsys.readouterr().err
    assert "no campaign records in" in err and "Traceback" not in err and err.count("\n") == 1
