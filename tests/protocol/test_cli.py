"""``perf_ab.py engines`` and ``perf_ab.py report`` as a user runs them (protocol.md §8)."""

from __future__ import annotations

import pytest

from bench import perf_ab
from tests.conftest import shared_data_dir


def cuda_usable() -> bool:
    from engines.sssp import cuda

    return cuda.is_available()


def engines(*argv):
    return perf_ab.main(["engines", *argv])


@pytest.mark.skipif(cuda_usable(), reason="a CUDA GPU is usable here")
def test_cuda_sides_without_gpu_exit_3(tmp_path, capsys):
    assert engines("--graphs", "uspowergrid", "--out", str(tmp_path), "--allow-dirty") == 3
    err = capsys.readouterr().err
    assert "no CUDA GPU is usable here" in err and "--sides host,host" in err
    assert not (tmp_path / "campaign.json").exists()  # stopped before measuring


def test_lock_without_a_gpu_side_exit_3(tmp_path, capsys):
    code = engines("--sides", "host,host", "--graphs", "uspowergrid", "--lock-clocks", "max",
                   "--out", str(tmp_path), "--allow-dirty")
    assert code == 3 and "needs a CUDA side" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [(["--sides", "host"], "two sides"),
     (["--sides", "host,cuda:turbo"], "unknown side"),
     (["--sides", "host,host", "--rounds", "3"], "at least 5"),
     (["--sides", "host,host", "--graphs", "atlantis"], "unknown gate name"),
     (["--sides", "host,host", "--lock-clocks", "fast"], "--lock-clocks"),
     (["--sides", "host,host", "--objectives", "x"], "--objectives"),
     (["--sides", "host,host", "--worker-timeout", "0"], "--worker-timeout 0: expected a number of seconds > 0")],
)
def test_usage_errors_exit_2(argv, message, tmp_path, capsys):
    assert engines(*argv, "--out", str(tmp_path)) == 2
    assert message in capsys.readouterr().err


def test_argparse_errors_exit_2(capsys):
    assert engines("--order", "sideways") == 2


def test_report_without_records_exit_2(tmp_path, capsys):
    assert perf_ab.main(["report", "--out", str(tmp_path)]) == 2
    assert "campaign.json" in capsys.readouterr().err


@pytest.mark.skipif(shared_data_dir() is None, reason="shared real graphs not found (../shared/data)")
@pytest.mark.slow
def test_host_campaign_on_uspowergrid_then_report(tmp_path, monkeypatch, capsys):
    import protocol.runner

    monkeypatch.setattr(protocol.runner, "git_state", lambda **_: {"commit": None, "dirty": True})
    out = tmp_path / "results"
    base = ["--sides", "host,host", "--graphs", "uspowergrid", "--batches", "local10k", "--objectives", "0",
            "--rounds", "5", "--out", str(out), "--no-progress", "--max-foreign-cpu", "1000", "--no-control"]
    assert engines(*base) == 2  # dirty tree without --allow-dirty
    assert "--allow-dirty" in capsys.readouterr().err
    assert engines(*base, "--allow-dirty") == 0
    printed = capsys.readouterr()
    assert "uspowergrid/local10k/0" in printed.out  # the summary table
    report = (out / "M7.md").read_text()
    import json
    import os

    origin = json.loads((out / "campaign.json").read_text())["inputs"][0]["origin"]
    assert not os.path.isabs(origin["path"])  # records hold repository-relative paths
    assert "real files: uspowergrid" in report
    assert "--graphs uspowergrid" in report  # the reproduce section
    (out / "M7.md").unlink()
    assert perf_ab.main(["report", "--out", str(out), "--write"]) == 0
    assert (out / "M7.md").read_text() == report


@pytest.mark.skipif(shared_data_dir() is None, reason="../shared/data is absent")
def test_unexpected_failure_mid_campaign_keeps_rounds_and_exits_1(tmp_path, capsys, monkeypatch):
    """A failure nobody planned for (it happened once: an NVML call missing from the installed
    module) ends with exit 1, a message that names it and --resume, and the finished rounds kept."""
    from protocol import cell

    real_round = cell.CellRun._round
    calls = {"n": 0}

    def failing_round(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 8:
            raise AttributeError("module 'pynvml' has no attribute 'nvmlSomethingNew'")
        return real_round(self, *args, **kwargs)

    monkeypatch.setattr(cell.CellRun, "_round", failing_round)
    # one process: the rounds run in this one, where the patch is (a worker process would not see it)
    code = engines("--sides", "host,host", "--graphs", "uspowergrid", "--batches", "local10k",
                   "--objectives", "0", "--rounds", "5", "--max-foreign-cpu", "64", "--processes", "1",
                   "--out", str(tmp_path), "--allow-dirty", "--no-progress")
    err = capsys.readouterr().err
    assert code == 1
    assert "nvmlSomethingNew" in err and "--resume" in err
    assert list((tmp_path / "rounds").glob("*")), "the finished rounds were not kept"
