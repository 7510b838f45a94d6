"""MOSP text files: round trips of graph, batch, distances and trees; malformed files."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from engines.errors import FileFormatError
from engines.io import mosp


@st.composite
def csr_graphs(draw):
    n = draw(st.integers(1, 8))
    k = draw(st.integers(1, 3))
    degrees = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    m = sum(degrees)
    col = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    w = draw(st.lists(st.integers(1, 2**31 - 1), min_size=m * k, max_size=m * k))
    row_ptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    return row_ptr, np.array(col, dtype=np.int32), np.array(w, dtype=np.int64).reshape(m, k), k


@settings(max_examples=40)
@given(csr_graphs())
def test_csr_round_trip(tmp_path_factory, graph):
    row_ptr, col, w, k = graph
    folder = tmp_path_factory.mktemp("mosp")
    mosp.write_csr(folder, row_ptr, col, w)
    r, c, back = mosp.read_csr(folder)
    np.testing.assert_array_equal(r, row_ptr)
    np.testing.assert_array_equal(c, col)
    if col.size:
        np.testing.assert_array_equal(back, w)
        # objective-major on disk: the first m lines are column 0
        first = np.loadtxt(folder / mosp.VALUES_FILE, dtype=np.int64, ndmin=1)[: col.size]
        np.testing.assert_array_equal(first, w[:, 0])


def test_batch_distance_tree_round_trip(tmp_path):
    ins_w = np.array([[3, 4], [5, 6]])
    mosp.write_batch(tmp_path, [0, 2], [1, 0], ins_w, [1, 1], [2, 2])
    assert (tmp_path / "insert.txt").read_text() == "0 1 3 4\n2 0 5 6\n"
    assert (tmp_path / "delete.txt").read_text() == "1 2\n1 2\n"
    s, d, w, ds, dd = mosp.read_batch(tmp_path, num_weights=2)
    assert s.tolist() == [0, 2] and d.tolist() == [1, 0] and w.tolist() == ins_w.tolist()
    assert ds.tolist() == [1, 1] and dd.tolist() == [2, 2]
    inf = 2**61 - 1
    mosp.write_distances(tmp_path / "dist.txt", [0, 5, inf])
    assert mosp.read_distances(tmp_path / "dist.txt", num_vertices=3).tolist() == [0, 5, inf]
    mosp.write_tree(tmp_path / "tree.txt", [-1, 0, -1])
    assert mosp.read_tree(tmp_path / "tree.txt").tolist() == [-1, 0, -1]


def test_empty_batch_files(tmp_path):
    mosp.write_batch(tmp_path, [], [], np.zeros((0, 3)), [], [])
    s, d, w, ds, dd = mosp.read_batch(tmp_path)
    assert s.size == d.size == ds.size == dd.size == 0


def _graph_folder(tmp_path, row_ptr, col, values):
    for name, text in ((mosp.ROW_PTR_FILE, row_ptr), (mosp.COL_IND_FILE, col), (mosp.VALUES_FILE, values)):
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize("row_ptr, col, values, bad_file, line", [
    ("0\n2\n1\n3\n", "1\n2\n0\n", "1\n1\n1\n", mosp.ROW_PTR_FILE, 3),   # offsets decrease
    ("1\n2\n3\n", "1\n2\n0\n", "1\n1\n1\n", mosp.ROW_PTR_FILE, 1),      # does not start at 0
    ("0\n1\n2\n", "1\n7\n", "1\n1\n", mosp.COL_IND_FILE, 2),            # head outside [0, n)
    ("0\n1\n2\n", "1\nx\n", "1\n1\n", mosp.COL_IND_FILE, 2),            # not an integer
    ("0\n1\n2\n", "1\n0\n", "4\n0\n", mosp.VALUES_FILE, 2),             # weight 0
    ("0\n1\n2\n", "1\n0\n", "4\n\n5\n-2\n7\n", mosp.VALUES_FILE, 4),       # blank line skipped in count
])
def test_malformed_csr(tmp_path, row_ptr, col, values, bad_file, line):
    _graph_folder(tmp_path, row_ptr, col, values)
    with pytest.raises(FileFormatError) as info:
        mosp.read_csr(tmp_path)
    assert bad_file in str(info.value) and f"line {line}" in str(info.value)


def test_malformed_counts(tmp_path):
    _graph_folder(tmp_path, "0\n1\n2\n", "1\n", "1\n")
    with pytest.raises(FileFormatError, match=mosp.COL_IND_FILE):
        mosp.read_csr(tmp_path)
    _graph_folder(tmp_path, "0\n1\n2\n", "1\n0\n", "1\n2\n3\n")
    with pytest.raises(FileFormatError, match="not a multiple"):
        mosp.read_csr(tmp_path)


def test_malformed_batch_and_tree(tmp_path):
    (tmp_path / "insert.txt").write_text("0 1 5\n1 2\n")
    with pytest.raises(FileFormatError, match=r"insert\.txt, line 2"):
        mosp.read_batch(tmp_path)
    (tmp_path / "insert.txt").write_text("0 1 5\n1 2 0\n")
    with pytest.raises(FileFormatError, match=r"insert\.txt, line 2"):
        mosp.read_batch(tmp_path)
    (tmp_path / "insert.txt").write_text("0 1 5\n")
    (tmp_path / "delete.txt").write_text("0 1\n-3 1\n")
    with pytest.raises(FileFormatError, match=r"delete\.txt, line 2"):
        mosp.read_batch(tmp_path)
    (tmp_path / "tree.txt").write_text("-1\n0\n5\n")
    with pytest.raises(FileFormatError, match=r"tree\.txt, line 3"):
        mosp.read_tree(tmp_path / "tree.txt")
    with pytest.raises(FileFormatError, match="3 lines for 4 vertices"):
        mosp.read_tree(tmp_path / "tree.txt", num_vertices=4)
