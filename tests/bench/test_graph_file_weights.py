"""``--weights file`` on files whose weights cannot be measured (issue 28, item 1): the refusal
names the file line and the entry as written, never a CSR position, and a list format's third
column is said not to be a weight column."""

from __future__ import annotations

import os

import pytest

from .test_graph_file import prepare


def refused(tmp_path, capsys, name: str, text: str, *options) -> str:
    path = tmp_path / name
    path.write_text(text)
    assert prepare("--graph-file", path, "--weights", "file", *options, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err, err
    return err


def test_a_skew_symmetric_file_names_the_entry_whose_reverse_is_negative(tmp_path, capsys):
    err = refused(tmp_path, capsys, "skew.mtx",
                  "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 2\n2 1 5\n3 2 6\n")
    assert ("skew.mtx, line 3: --weights file: the entry '2 1 5' also gives the reverse edge 1 -> 2 (the file is "
            "skew-symmetric, so the reverse holds the negated value) the weight -5; a weight must be an integer "
            "in [1, 2147483647]") in err
    assert "weights[0]" not in err


def test_a_weight_out_of_range_names_its_dimacs_line(tmp_path, capsys):
    err = refused(tmp_path, capsys, "zero.gr", "p sp 3 2\na 2 3 5\na 1 2 0\n")
    assert "zero.gr, line 3: --weights file: the entry 'a 1 2 0' gives the edge 1 -> 2 the weight 0" in err


@pytest.mark.parametrize("name, text, line, what", [
    ("three.txt", "# a list\n0 1 5\n1 2 6\n", 2,
     "a SNAP list is 'FromNodeId ToNodeId' a line; a further column (a timestamp, a sign) is not a weight"),
    ("three.edges", "1 2 5\n2 3 6\n", 1, "an edge list is 'u v' a line; further columns are not read"),
])
def test_a_third_list_column_is_not_a_weight_column(tmp_path, capsys, name, text, line, what):
    err = refused(tmp_path, capsys, name, text)
    first = text.splitlines()[line - 1]
    assert f"{name}, line {line}: --weights file, but {first!r} has 3 columns and {what}" in err
    assert "write the file as DIMACS ('a u v w') or an integer Matrix Market file" in err
    assert "carries no weights" not in err


def test_inexact_integer_weights_are_refused_before_measuring(tmp_path, capsys):
    err = refused(tmp_path, capsys, "g.mtx",
                  "%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 5\n2 3 7.9\n")
    assert "g.mtx, line 4: the value '7.9' is not an integer (the header declares an integer matrix)" in err


def test_a_symbolic_link_loop_as_the_graph_file_is_named_as_one(tmp_path, capsys):
    loop = tmp_path / "loop.mtx"
    os.symlink(loop.name, loop)
    assert prepare("--graph-file", loop, "--cache-dir", tmp_path / "c") == 2
    err = capsys.readouterr().err
    assert f"{loop}: a symbolic link loop (too many levels of symbolic links), not a regular file" in err
    assert "no such file" not in err
