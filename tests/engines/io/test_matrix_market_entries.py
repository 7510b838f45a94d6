"""Matrix Market entries the fast reader misreads or crashes on: a pattern file's indices are
exact integers ("2 3.7" was read as the edge 2 -> 3, "2 3 4" as 2 -> 3), and a last line that
ends in blanks without a line end is read, never a SIGSEGV of the interpreter (fast_matrix_market
1.7.6, and SciPy's reader built on it, crash on "1 2 3 " at the end of a file)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engines.errors import FileFormatError
from engines.io import read_graph

REPO = Path(__file__).resolve().parents[3]
PATTERN = "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n"
# field -> (header and first entry, last entry without its line end, weights read)
FIELDS = {
    "pattern": (PATTERN, "2 3", None),
    "integer": ("%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 3\n", "2 3 4", [3, 4]),
    "real": ("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 3\n", "2 3 4.5", [3.0, 4.5]),
}
OPEN_ENDS = [" ", "\t", "\r", " \r", "  \t ", "\t\r"]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("entry, problem", [
    ("2 3.7", "the column index '3.7' is not an integer in '2 3.7'"),
    ("2 3e1", "the column index '3e1' is not an integer in '2 3e1'"),
    ("2.5 3", "the row index '2.5' is not an integer in '2.5 3'"),
    ("2 3x", "the column index '3x' is not an integer in '2 3x'"),
    ("2 3 4", "'2 3 4' has 3 fields, but a pattern entry is 'ROW COLUMN': nothing may follow the column index"),
    ("333", "the entry '333' has no column index (a pattern entry is 'ROW COLUMN')"),
])
def test_pattern_entries_are_exact(tmp_path, entry, problem):
    path = tmp_path / "g.mtx"
    path.write_text(f"{PATTERN}{entry}\n")
    with pytest.raises(FileFormatError) as info:
        read_graph(path)
    assert f"{path}, line 4: {problem}" in str(info.value)


def test_a_nul_byte_in_a_pattern_entry_is_refused_not_a_crash(tmp_path):
    cases = {"after.mtx": b"2 3 \0\n", "inside.mtx": b"2 3\0\n", "first.mtx": b"\0 3\n"}
    for name, entry in cases.items():
        (tmp_path / name).write_bytes(PATTERN.encode() + entry)
    proc = _run(f"""
        from engines.errors import FileFormatError
        from engines.io import read_graph
        for name in {sorted(cases)!r}:
            try:
                read_graph({str(tmp_path)!r} + "/" + name)
            except FileFormatError as exc:
                print("refused:", exc)
        """)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.count("refused:") == len(cases) and proc.stdout.count(", line 4: ") == len(cases)


def test_a_last_line_ending_in_blanks_without_a_line_end_is_read(tmp_path):
    paths = {}
    for field, (head, last, _) in FIELDS.items():
        for i, end in enumerate(OPEN_ENDS):
            data = (head + last + end).encode()
            for suffix, body in ((".mtx", data), (".mtx.gz", gzip.compress(data))):
                path = tmp_path / f"{field}{i}{suffix}"
                path.write_bytes(body)
                paths[str(path)] = field
    proc = _run(f"""
        import json
        from engines.io import read_graph
        for path in {sorted(paths)!r}:
            g = read_graph(path)
            weights = None if g.weights is None else g.weights.tolist()
            print(json.dumps([path, g.num_vertices, g.src.tolist(), g.dst.tolist(), weights]))
        """)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    read = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(read) == len(paths)
    for path, n, src, dst, weights in read:
        assert (n, src, dst, weights) == (3, [0, 1], [1, 2], FIELDS[paths[path]][2]), path


@pytest.mark.parametrize("entry, name", [("4 1", "row"), ("1 0", "column"), ("-1 2", "row")])
def test_an_index_outside_the_matrix_names_the_allowed_range(tmp_path, entry, name):
    # the fast reader says only "Row index out of bounds": the size line's order is the range
    path = tmp_path / "g.mtx"
    path.write_text(f"%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n{entry}\n")
    with pytest.raises(FileFormatError) as info:
        read_graph(path)
    assert (f"{path}, line 4: the {name} index is outside [1, 3] (the size line states a 3 x 3 matrix)"
            in str(info.value))
