"""Readers on hand-written files: semantics (directions, self-loops, duplicates, weights) and
malformed variants (FileFormatError naming the file and line)."""

from __future__ import annotations

import gzip
import io
import os
import tarfile

import numpy as np
import pytest

from engines.errors import FileFormatError
from engines.io import (read_dimacs, read_edge_list, read_graph, read_graph_cached, read_matrix_market,
                        read_snap)


def pairs(g):
    return list(zip(g.src.tolist(), g.dst.tolist()))


def write(path, text, *, gz=False):
    if gz:
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


# ---- Matrix Market -------------------------------------------------------------------------

MTX_SYM = """%%MatrixMarket matrix coordinate real symmetric
% a comment
4 4 5
2 1 3.5
3 1 2.0
3 3 9.0
4 2 1.0
2 1 7.0
"""


def test_mtx_symmetric_both_directions_no_loops_no_duplicates(tmp_path):
    g = read_matrix_market(write(tmp_path / "a.mtx", MTX_SYM))
    assert g.num_vertices == 4
    assert pairs(g) == [(0, 1), (0, 2), (1, 0), (1, 3), (2, 0), (3, 1)]
    # the first entry of the duplicated pair (2,1) wins: 3.5, not 7.0
    w = dict(zip(pairs(g), g.weights.tolist()))
    assert w[(1, 0)] == 3.5 and w[(0, 1)] == 3.5 and w[(3, 1)] == 1.0


def test_mtx_general_pattern_has_no_weights_and_keeps_direction(tmp_path):
    text = "%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 3\n3 3\n"
    g = read_matrix_market(write(tmp_path / "p.mtx", text))
    assert g.weights is None
    assert pairs(g) == [(0, 1), (1, 2)]


def test_mtx_skew_and_hermitian_give_both_directions(tmp_path):
    skew = "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n3 1 2.0\n"
    g = read_matrix_market(write(tmp_path / "s.mtx", skew))
    assert pairs(g) == [(0, 2), (2, 0)]
    herm = "%%MatrixMarket matrix coordinate complex hermitian\n2 2 1\n2 1 1.0 1.0\n"
    assert pairs(read_matrix_market(write(tmp_path / "h.mtx", herm))) == [(0, 1), (1, 0)]


def test_mtx_gz_and_suitesparse_tarball(tmp_path):
    expected = pairs(read_matrix_market(write(tmp_path / "a.mtx", MTX_SYM)))
    assert pairs(read_matrix_market(write(tmp_path / "b.mtx.gz", MTX_SYM, gz=True))) == expected
    archive = tmp_path / "gate.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in (("gate/gate_coord.mtx", "%%MatrixMarket matrix array real general\n1 1\n1\n"),
                           ("gate/gate.mtx", MTX_SYM)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert pairs(read_graph(archive)) == expected


@pytest.mark.parametrize("text, line", [
    ("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 x 1.0\n", 4),
    ("%%MatrixMarket matrix coordinate real general\n3 4 1\n1 2 1.0\n", 2),
    ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1),
    ("not a header\n1 1 1\n", 1),
])
def test_mtx_malformed_names_file_and_line(tmp_path, text, line):
    path = write(tmp_path / "bad.mtx", text)
    with pytest.raises(FileFormatError) as info:
        read_matrix_market(path)
    assert str(path) in str(info.value) and f"line {line}" in str(info.value)


def test_mtx_truncated_names_file(tmp_path):
    path = write(tmp_path / "short.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 1.0\n")
    with pytest.raises(FileFormatError, match="short.mtx"):
        read_matrix_market(path)


# ---- edge lists and SNAP -------------------------------------------------------------------

def test_edge_list_one_based_symmetrized(tmp_path):
    g = read_edge_list(write(tmp_path / "x.edges", "2 1\n3 2\n3 3\n2 1\n"))
    assert g.num_vertices == 3 and g.weights is None
    assert pairs(g) == [(0, 1), (1, 0), (1, 2), (2, 1)]


def test_snap_zero_based_directed_with_comments_gz(tmp_path):
    text = "# Directed graph\n# FromNodeId\tToNodeId\n0\t1\n1\t0\n1\t4\n4\t4\n1\t4\n"
    for path in (write(tmp_path / "r.txt", text), write(tmp_path / "r.txt.gz", text, gz=True)):
        g = read_snap(path)
        assert g.num_vertices == 5
        assert pairs(g) == [(0, 1), (1, 0), (1, 4)]


@pytest.mark.parametrize("text, line", [
    ("1 2\n2 3\n3\n", 3),
    ("1 2\n2 x\n", 2),
    ("1 2\n0 3\n", 2),
    ("1 2\n2 3 4\n", 2),
    ("1 2\n1.5 3\n", 2),
])
def test_edge_list_malformed(tmp_path, text, line):
    path = write(tmp_path / "bad.edges", text)
    with pytest.raises(FileFormatError) as info:
        read_edge_list(path)
    assert str(path) in str(info.value) and f"line {line}" in str(info.value)


def test_snap_malformed_counts_comment_lines(tmp_path):
    path = write(tmp_path / "bad.txt", "# c1\n# c2\n0 1\n-1 2\n")
    with pytest.raises(FileFormatError, match="line 4"):
        read_snap(path)


def test_shared_edge_lists(shared_graphs_dir):
    lux = read_edge_list(shared_graphs_dir / "luxembourg_osm.edges")
    assert (lux.num_vertices, lux.num_edges) == (114_599, 2 * 119_666)
    grid = read_edge_list(shared_graphs_dir / "uspowergrid.edges")
    assert (grid.num_vertices, grid.num_edges) == (4_941, 2 * 6_594)
    # symmetric: the reverse of every edge is present
    fwd = set(zip(grid.src.tolist(), grid.dst.tolist()))
    assert all((v, u) in fwd for u, v in fwd)


# ---- DIMACS --------------------------------------------------------------------------------

GR = "c road graph\np sp 4 5\nc arcs\na 1 2 7\na 2 1 7\na 2 3 5\na 3 3 1\na 2 3 9\n"


def test_dimacs_semantics(tmp_path):
    for path in (write(tmp_path / "g.gr", GR), write(tmp_path / "g.gr.gz", GR, gz=True)):
        g = read_dimacs(path)
        assert g.num_vertices == 4
        assert pairs(g) == [(0, 1), (1, 0), (1, 2)]
        assert g.weights.tolist() == [7, 7, 5]


@pytest.mark.parametrize("text, line", [
    ("p sp 3 2\na 1 2 4\nx 2 3 1\n", 3),
    ("p sp 3 2\na 1 2 4\na 2 5 1\n", 3),
    ("p sp 3 2\na 1 2 4\na 2 3\n", 3),
    ("p max 3 2\na 1 2 4\n", 1),
    ("c only\na 1 2 3\n", 2),
])
def test_dimacs_malformed(tmp_path, text, line):
    path = write(tmp_path / "bad.gr", text)
    with pytest.raises(FileFormatError) as info:
        read_dimacs(path)
    assert str(path) in str(info.value) and f"line {line}" in str(info.value)


def test_dimacs_arc_count_mismatch(tmp_path):
    path = write(tmp_path / "count.gr", "p sp 3 3\na 1 2 4\n")
    with pytest.raises(FileFormatError, match="problem line states 3"):
        read_dimacs(path)


# ---- dispatch and cache --------------------------------------------------------------------

def test_unknown_suffix_and_missing_file(tmp_path):
    with pytest.raises(FileFormatError, match="unknown graph file type"):
        read_graph(write(tmp_path / "g.xyz", "1 2\n"))
    # a name that is not there is reported as absent whatever its suffix (it was "unknown graph
    # file type", which sent the user looking for a format option)
    with pytest.raises(FileFormatError, match="no such file"):
        read_graph(tmp_path / "missing.xyz")
    os.symlink("gone", tmp_path / "link")
    with pytest.raises(FileFormatError, match=r"a broken symbolic link \(to 'gone'"):
        read_graph(tmp_path / "link")
    with pytest.raises(FileFormatError, match="no such file"):
        read_graph(tmp_path / "g.mtx")


def test_cache_reuses_and_keys_by_content(tmp_path):
    path = write(tmp_path / "a.mtx", MTX_SYM)
    cache = tmp_path / "cache"
    g1, sha1 = read_graph_cached(path, cache_dir=cache)
    entries = list((cache / "parsed").iterdir())
    assert len(entries) == 1 and sha1 in entries[0].name
    g2, sha2 = read_graph_cached(path, cache_dir=cache)
    assert sha2 == sha1 and pairs(g2) == pairs(g1)
    np.testing.assert_array_equal(g2.weights, g1.weights)
    # new content, new key: the stale entry is never read
    write(path, MTX_SYM.replace("4 2 1.0", "4 1 1.0"))
    g3, sha3 = read_graph_cached(path, cache_dir=cache)
    assert sha3 != sha1 and (3, 0) in pairs(g3) and (3, 1) not in pairs(g3)
    # a damaged entry is rebuilt
    entry = next(p for p in (cache / "parsed").iterdir() if sha3 in p.name)
    entry.write_bytes(b"garbage")
    g4, _ = read_graph_cached(path, cache_dir=cache)
    assert pairs(g4) == pairs(g3)



INCONSISTENT_ENTRIES = {
    "src and dst of different lengths": {"src": np.array([0, 1, 2], np.int32), "dst": np.array([1], np.int32)},
    "ids beyond the vertex count": {"num_vertices": np.int64(2), "dst": np.array([1, 0, 0, 5], np.int32)},
    "a vertex count that is no number": {"num_vertices": np.array([3, 4])},
    "ids that are not int32": {"src": np.array([0.5, 1, 1, 2])},
    "weights of another length": {"weights": np.array([1.0])},
}


@pytest.mark.parametrize("damage", sorted(INCONSISTENT_ENTRIES))
def test_a_cache_entry_that_is_no_consistent_graph_is_rebuilt(tmp_path, damage):
    # a readable .npz whose arrays do not make the graph (tampered with, or written by other
    # code under the same name) was returned as it was: a wrong graph, or a TypeError
    path = write(tmp_path / "a.mtx", MTX_SYM)
    cache = tmp_path / "cache"
    good, _ = read_graph_cached(path, cache_dir=cache)
    entry = next((cache / "parsed").iterdir())
    arrays = {"num_vertices": np.int64(good.num_vertices), "src": good.src, "dst": good.dst,
              "weights": good.weights, **INCONSISTENT_ENTRIES[damage]}
    with open(entry, "wb") as handle:
        np.savez(handle, **arrays)
    again, _ = read_graph_cached(path, cache_dir=cache)
    assert again.num_vertices == good.num_vertices and pairs(again) == pairs(good)
    np.testing.assert_array_equal(again.weights, good.weights)

def test_scipy_fallback_reader(tmp_path, monkeypatch):
    from engines.io import matrix_market

    path = write(tmp_path / "a.mtx", MTX_SYM)
    fast = read_matrix_market(path)
    monkeypatch.setattr(matrix_market, "_fmm", None)
    slow = read_matrix_market(path)
    assert pairs(slow) == pairs(fast)
    np.testing.assert_array_equal(slow.weights, fast.weights)
    bad = write(tmp_path / "bad.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 x 1.0\n")
    with pytest.raises(FileFormatError, match="bad.mtx"):
        read_matrix_market(bad)
