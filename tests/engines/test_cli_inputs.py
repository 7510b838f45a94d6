"""``python -m engines.cli`` on user mistakes and unwritable outputs: exit 2, one line naming the
path or the option and the value passed, no traceback (issue 15, defects 5 and 7)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from engines import cli
from engines.io.outputs import output_problem
from tests.engines.test_cli import REPO, _random_case, _run, _write_mosp

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture
def case(tmp_path):
    graph, batch = _random_case(31, K=2)
    return _write_mosp(tmp_path, graph, batch)


def test_batch_given_as_a_plain_file(tmp_path, capsys, case):
    gdir, _ = case
    text = tmp_path / "changes.txt"
    text.write_text("0 1 3 4\n")
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", text, "--source", 0, "--out", tmp_path / "o")
    assert code == 2
    assert f"{text}: not a readable .npz file: it is neither a MOSP folder (insert.txt, delete.txt)" in err
    assert "allow_pickle" not in err and "pickle" not in err


def test_graph_given_as_a_plain_file(tmp_path, capsys, case):
    _, bdir = case
    text = tmp_path / "graph.txt"
    text.write_text("0 1\n")
    code, _, err = _run(capsys, "update", "--graph", text, "--batch", bdir, "--source", 0, "--out", tmp_path / "o")
    assert code == 2 and "neither a MOSP folder (graphCsrRowPtr.txt" in err and "pickle" not in err


def test_objective_out_of_range_names_the_option(tmp_path, capsys, case):
    gdir, bdir = case
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 0, "--objective", 5,
                        "--out", tmp_path / "o")
    assert code == 2
    assert "--objective 5 is out of range [0, 2): the graph has 2 weight columns" in err
    assert "options.objective" not in err
    code, _, err = _run(capsys, "compute", "--graph", gdir, "--source", 0, "--objective", -1, "--out", tmp_path / "o")
    assert code == 2 and "--objective -1 is out of range" in err


def test_source_out_of_range_names_the_option(tmp_path, capsys, case):
    gdir, bdir = case
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 40, "--out", tmp_path / "o")
    assert code == 2 and "--source 40 is not a vertex of the graph (n = 40, ids 0 .. 39)" in err


def test_out_under_a_regular_file_is_refused_before_any_work(tmp_path, capsys, case, monkeypatch):
    gdir, bdir = case
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder\n")
    read = []
    monkeypatch.setattr(cli, "read_graph", lambda *a, **k: read.append(a) or pytest.fail("work was done"))
    for out in (blocker / "out", blocker / "state.npz", blocker):
        code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 0, "--out", out)
        assert code == 2, err
        assert "--out: " in err and str(blocker) in err and "Traceback" not in err
    assert not read


def test_out_npz_that_is_a_folder(tmp_path, capsys, case):
    gdir, bdir = case
    (tmp_path / "state.npz").mkdir()
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 0,
                        "--out", tmp_path / "state.npz")
    assert code == 2 and "is a folder, not a file" in err


@pytest.mark.skipif(IS_ROOT, reason="root writes into read-only folders; the simulated case below covers it")
def test_out_in_a_read_only_folder(tmp_path, capsys, case):
    gdir, bdir = case
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 0, "--out", locked / "o")
    finally:
        locked.chmod(0o755)
    assert code == 2 and f"{locked} is not writable" in err


def test_out_in_a_folder_the_user_cannot_write(tmp_path, capsys, case, monkeypatch):
    """The read-only case for any user: os.access is what a read-only folder or mount answers."""
    gdir, bdir = case
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(locked) else real_access(p, mode))
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 0, "--out", locked / "o")
    assert code == 2 and f"cannot create {locked / 'o'}: {locked} is not writable (permission denied)" in err


def test_a_write_failing_after_the_check_is_exit_2_naming_the_path(tmp_path, capsys, case, monkeypatch):
    gdir, bdir = case

    def denied(path, values):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(cli.mosp, "write_distances", denied)
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 0, "--out", tmp_path / "o")
    assert code == 2 and f"cannot write the output: {tmp_path / 'o' / 'distances.txt'}: Permission denied" in err
    assert "Traceback" not in err


def test_an_internal_error_says_so(tmp_path, capsys, case, monkeypatch):
    gdir, bdir = case
    monkeypatch.setattr(cli, "write_output", lambda *a, **k: {}["no such key"])
    code, _, err = _run(capsys, "update", "--graph", gdir, "--batch", bdir, "--source", 0, "--out", tmp_path / "o")
    assert code == 1 and "Traceback" in err and "internal error (a bug in the engines" in err


def test_output_problem_cases(tmp_path):
    (tmp_path / "file").write_text("x")
    assert output_problem(tmp_path / "new" / "deeper", folder=True) is None
    assert output_problem(tmp_path / "new.npz", folder=False) is None
    assert "is a file, not a folder" in output_problem(tmp_path / "file" / "x.npz", folder=False)
    assert "exists and is not a folder" in output_problem(tmp_path / "file", folder=True)
    assert output_problem(tmp_path / "file", folder=False) is None
    assert not (tmp_path / "new").exists()  # nothing created


def test_user_mistakes_never_print_a_traceback_in_a_real_process(tmp_path, case):
    gdir, bdir = case
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    proc = subprocess.run([sys.executable, "-m", "engines.cli", "update", "--graph", str(gdir), "--batch",
                           str(bdir), "--source", "0", "--out", str(blocker / "o")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and str(blocker) in proc.stderr
    np.testing.assert_equal(blocker.read_text(), "x")


def test_os_errors_and_bugs_are_worded_by_one_helper_each(capsys):
    from engines.errors import os_error_text, print_internal_error

    assert os_error_text(PermissionError(13, "Permission denied", "/x/y")) == "/x/y: Permission denied"
    assert os_error_text(OSError("no file named")) == "no file named"
    try:
        {}["k"]
    except KeyError as exc:
        print_internal_error("cmd: ", exc, blamed="the records", then=". Next")
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().endswith(
        "cmd: internal error (a bug in ssspab, not a problem with the records): KeyError: 'k'; please report it "
        "with the traceback above. Next")
    sources = [p for d in ("engines", "bench", "protocol") for p in (REPO / d).rglob("*.py")]
    for phrase in ("internal error (a bug in ", 'f"{exc.filename}: "'):  # only in the helpers' module
        assert [p.name for p in sources if phrase in p.read_text()] == ["errors.py"]
