"""One name for the folder of real graph files in the environment: SSSPAB_DATA_DIR (issue 31,
item 6); the tests' old SSSPAB_SHARED_DATA is still read, with a one-line note."""

from __future__ import annotations

import pytest

from bench import gates


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.delenv("SSSPAB_DATA_DIR", raising=False)
    monkeypatch.delenv("SSSPAB_SHARED_DATA", raising=False)
    monkeypatch.setattr(gates, "_deprecation_said", False)
    return monkeypatch


def test_the_variable_names_the_first_folder_searched(fresh, tmp_path):
    assert gates.data_dir_from_environment() is None
    fresh.setenv("SSSPAB_DATA_DIR", str(tmp_path))
    assert gates.data_dir_from_environment() == str(tmp_path)
    assert gates.data_dir_candidates()[:2] == [tmp_path, tmp_path / "graphs"]
    assert gates.data_dir_candidates(tmp_path / "x")[0] == tmp_path / "x"  # --data-dir wins


def test_the_old_name_is_read_with_one_note(fresh, tmp_path, capsys):
    fresh.setenv("SSSPAB_SHARED_DATA", str(tmp_path))
    assert gates.data_dir_from_environment() == str(tmp_path)
    assert gates.data_dir_from_environment() == str(tmp_path)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SSSPAB_SHARED_DATA is deprecated" in err and "SSSPAB_DATA_DIR" in err
    fresh.setenv("SSSPAB_DATA_DIR", str(tmp_path / "new"))
    assert gates.data_dir_from_environment() == str(tmp_path / "new")  # the new name wins


def test_the_tests_and_the_records_read_the_same_variable(fresh, tmp_path):
    from bench import perf_ab
    from bench.engines_cmd import data_dir_used
    from tests.conftest import shared_data_dir

    (tmp_path / "graphs").mkdir()
    fresh.setenv("SSSPAB_DATA_DIR", str(tmp_path))
    assert shared_data_dir() == tmp_path.resolve()
    assert data_dir_used(perf_ab.build_parser().parse_args(["engines"])) == str(tmp_path)
