"""Strict readers (issue 28, item 1): every numeric field is parsed exactly, DIMACS comments are
whole lines, and a path that is not a regular file is named as such; every refusal names the
file, the line and the text as written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engines.errors import FileFormatError
from engines.io import check_present, mosp, read_graph

REPO = Path(__file__).resolve().parents[3]
INTEGER_HEADER = "%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 5\n"


def refusal(path: Path, **options) -> str:
    with pytest.raises(FileFormatError) as info:
        read_graph(path, **options)
    message = str(info.value)
    assert str(path) in message, message
    return message


@pytest.mark.parametrize("value", ["1e3", "7.9", "12abc", "0x10", "1_000", "7."])
def test_integer_matrix_market_values_are_exact_integers(tmp_path, value):
    path = tmp_path / "g.mtx"
    path.write_text(f"{INTEGER_HEADER}2 3 {value}\n")
    message = refusal(path)
    assert f"line 4: the value {value!r} is not an integer (the header declares an integer matrix)" in message
    assert f"'2 3 {value}'" in message


def test_nothing_may_follow_an_integer_value(tmp_path):
    path = tmp_path / "g.mtx"
    path.write_text(f"{INTEGER_HEADER}2 3 3 extra\n")
    assert ("line 4: '2 3 3 extra' has 4 fields, but an integer entry is 'ROW COLUMN VALUE': nothing may "
            "follow the value") in refusal(path)


def test_real_entries_without_values_name_the_line(tmp_path):
    path = tmp_path / "g.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2\n2 3\n")
    message = refusal(path)
    assert "line 3: the entry '1 2' has no value (a real entry is 'ROW COLUMN VALUE')" in message
    assert "truncated" not in message


def test_a_truncated_real_file_is_still_called_truncated(tmp_path):
    path = tmp_path / "g.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 3 9\n1 2 1.5\n")
    assert "truncated or its size line is wrong" in refusal(path)


def test_real_values_are_exact_numbers(tmp_path):
    path = tmp_path / "g.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 7.5abc\n2 3 1e3\n")
    assert "line 3: the value '7.5abc' is not a real number" in refusal(path)
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 7.5\n2 3 -1e3\n")
    assert read_graph(path).weights.tolist() == [7.5, -1000.0]


def test_exact_files_still_read_with_blank_lines_tabs_and_crlf(tmp_path):
    path = tmp_path / "g.mtx"
    path.write_bytes(b"%%MatrixMarket matrix coordinate integer symmetric\r\n3 3 2\r\n2\t1\t5\r\n\r\n 3 2 6 \r\n")
    graph = read_graph(path)
    assert graph.weights.tolist() == [5, 5, 6, 6]


def test_dimacs_c_inside_an_arc_line_is_not_a_comment(tmp_path):
    path = tmp_path / "g.gr"
    path.write_text("p sp 3 2\na 1 2 4\na 2 3 12c34\n")
    assert ("line 3: not an integer: '12c34' in 'a 2 3 12c34' (a comment is a whole line starting with 'c', "
            "never the end of a line)") in refusal(path)


@pytest.mark.parametrize("value", ["1e3", "7.0"])
def test_dimacs_weights_are_exact_integers(tmp_path, value):
    path = tmp_path / "g.gr"
    path.write_text(f"c header\np sp 3 2\na 1 2 4\na 2 3 {value}\n")
    assert f"line 4: not an integer: {value!r} in 'a 2 3 {value}'" in refusal(path)


def test_dimacs_whole_comment_lines_anywhere_are_comments(tmp_path):
    path = tmp_path / "g.gr"
    path.write_text("c first\np sp 3 2\nc the arcs\na 1 2 4\nc with e and . in it\na 2 3 5\n")
    assert read_graph(path).weights.tolist() == [4, 5]
    path.write_text("c first\np sp 3 2\na 1 2 4\n  c indented\na 2 3 5\n")
    assert "line 4: a comment line starts with 'c' in its first column, found '  c indented'" in refusal(path)


@pytest.mark.parametrize("name, text, line, token", [
    ("g.edges", "1 2\n2 1e3\n", 2, "1e3"),
    ("g.txt", "# a comment. with e\n0 1\n1. 2\n", 3, "1."),
])
def test_edge_list_ids_are_exact_integers(tmp_path, name, text, line, token):
    path = tmp_path / name
    path.write_text(text)
    assert f"line {line}: not an integer: {token!r}" in refusal(path)


def test_mosp_values_are_exact_integers(tmp_path):
    mosp.write_csr(tmp_path, [0, 1, 2], [1, 0], [[4], [5]])
    (tmp_path / mosp.VALUES_FILE).write_text("4\n5e0\n")
    with pytest.raises(FileFormatError, match=r"graphCsrValues.txt, line 2: not an integer: '5e0'"):
        mosp.read_csr(tmp_path)


# ---- not a regular file -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["loop.mtx", "loop.gr", "loop.txt", "loop.edges"])
def test_a_symbolic_link_loop_is_named_as_one(tmp_path, name):
    path = tmp_path / name
    os.symlink(path.name, path)
    assert "a symbolic link loop (too many levels of symbolic links), not a regular file" in refusal(path)
    with pytest.raises(FileFormatError, match="symbolic link loop"):
        check_present(path, "matrix_market")


def test_a_broken_symbolic_link_names_its_target(tmp_path):
    path = tmp_path / "g.mtx"
    os.symlink("nowhere.mtx", path)
    assert "a broken symbolic link (to 'nowhere.mtx', which does not exist)" in refusal(path)


@pytest.mark.parametrize("format", ["matrix_market", "dimacs", "snap", "edge_list"])
def test_a_character_device_is_not_a_regular_file(format):
    message = refusal(Path("/dev/zero"), format=format)
    assert "/dev/zero: not a regular file (a character device)" in message


def test_a_fifo_is_named_without_waiting_for_a_writer(tmp_path):
    """In a subprocess with a time limit: were the FIFO opened, the reader would wait forever."""
    for name in ("g.mtx", "g.gr", "g.txt", "g.edges"):
        os.mkfifo(tmp_path / name)
    folder = tmp_path / "mosp"
    mosp.write_csr(folder, [0, 1, 1], [1], [[3]])
    (folder / mosp.VALUES_FILE).unlink()
    os.mkfifo(folder / mosp.VALUES_FILE)
    batch = tmp_path / "batch"
    batch.mkdir()
    os.mkfifo(batch / mosp.INSERT_FILE)
    script = (
        "import sys; from pathlib import Path\n"
        "from engines.errors import FileFormatError\n"
        "from engines.io import read_graph, input_sha256, mosp\n"
        "root = Path(sys.argv[1])\n"
        "calls = [lambda p=root / n: read_graph(p) for n in ('g.mtx', 'g.gr', 'g.txt', 'g.edges')]\n"
        "calls += [lambda: input_sha256(root / 'mosp'), lambda: read_graph(root / 'mosp'),\n"
        "          lambda: mosp.read_batch(root / 'batch')]\n"
        "for call in calls:\n"
        "    try:\n"
        "        call()\n"
        "    except FileFormatError as exc:\n"
        "        print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 7, done.stdout + done.stderr
    assert all(line.endswith("not a regular file (a FIFO (named pipe))") for line in lines), lines
    assert lines[-1].startswith(str(batch / mosp.INSERT_FILE))


BOM = "\ufeff"
# a comment holding 'e' and '.' makes the exact-field scan read the lines (see _text.read_int_table)
BOM_FILES = {
    "g.edges": ("# generated by an editor v1.0\n1 2\n2 3\n", [0, 1, 1, 2], [1, 0, 2, 1]),
    "g.txt": ("# FromNodeId ToNodeId, generated\n0 1\n1 2\n", [0, 1], [1, 2]),
    "g.gr": ("c generated\np sp 3 2\na 1 2 4\na 2 3 5\n", [0, 1], [1, 2]),
    "g.mtx": ("%%MatrixMarket matrix coordinate integer general\n% generated\n3 3 2\n1 2 4\n2 3 5\n", [0, 1], [1, 2]),
}


@pytest.mark.parametrize("name", sorted(BOM_FILES))
def test_a_byte_order_mark_at_the_start_is_skipped_in_every_text_format(tmp_path, name):
    # editors on Windows write one; pandas already skipped it in the fast parse, so the checks
    # around it refused a valid edge list, and DIMACS and Matrix Market files named a
    # '\ufeffp' line type or a header that is not one
    text, src, dst = BOM_FILES[name]
    path = tmp_path / name
    path.write_text(BOM + text, encoding="utf-8")
    graph = read_graph(path)
    assert (graph.src.tolist(), graph.dst.tolist()) == (src, dst)


def test_a_byte_order_mark_does_not_move_the_line_named(tmp_path):
    path = tmp_path / "g.edges"
    path.write_text(BOM + "1 2\n3 4e0\n", encoding="utf-8")
    assert "line 2: not an integer: '4e0'" in refusal(path)


def test_a_byte_order_mark_in_a_gzip_matrix_market_file_is_skipped(tmp_path):
    import gzip

    path = tmp_path / "g.mtx.gz"
    path.write_bytes(gzip.compress((BOM + BOM_FILES["g.mtx"][0]).encode()))
    assert read_graph(path).weights.tolist() == [4, 5]


def test_lone_carriage_return_line_ends_with_comments_still_read(tmp_path):
    # pandas (and Python) read a lone CR as a line end; the exact-field scan read "1 2\r# e..."
    # as one line and refused a valid file without naming any line
    path = tmp_path / "g.edges"
    path.write_bytes(b"1 2\r# generated\r3 4\r")
    assert read_graph(path).src.tolist() == [0, 1, 2, 3]
    path.write_bytes(b"1 2\r# generated\r3 4e0\r")
    assert "line 3: not an integer: '4e0'" in refusal(path)
    path.write_bytes(b"# generated\r1 2\r3 4e0\r")  # a comment first must not hide the lines after it
    assert "line 3: not an integer: '4e0'" in refusal(path)
