"""Readers on files that are broken, empty, compressed wrongly, beyond 32 bits or lying in their
header: always a ``FileFormatError`` naming the file (and the line where there is one), never a
raw exception, a wrapped id or an aborted interpreter (issue 15, defects 1-3 and 6)."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from engines.errors import FileFormatError, InvalidArgumentError
from engines.io import (FORMATS, mosp, read_edge_list, read_graph, read_graph_cached,
                        read_matrix_market, read_snap)

REPO = Path(__file__).resolve().parents[3]
GZ_SUFFIXES = (".txt.gz", ".edges.gz", ".gr.gz", ".mtx.gz")
SAMPLE = {  # a small valid text per format, the same 3-vertex path 1 - 2 - 3 (1-based names)
    ".txt.gz": "# snap\n0 1\n1 2\n",
    ".edges.gz": "1 2\n2 3\n",
    ".gr.gz": "p sp 3 2\na 1 2 4\na 2 3 5\n",
    ".mtx.gz": "%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 3\n",
}


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def error_of(path: Path, **options) -> str:
    with pytest.raises(FileFormatError) as info:
        read_graph(path, **options)
    message = str(info.value)
    assert str(path) in message, message
    return message


# ---- gzip: not gzip at all, truncated, damaged (defect 3) -------------------------------------

@pytest.mark.parametrize("suffix", GZ_SUFFIXES)
def test_gz_name_on_plain_bytes_is_a_format_error(tmp_path, suffix):
    path = write(tmp_path / f"plain{suffix}", SAMPLE[suffix])  # not compressed at all
    assert "not a gzip file" in error_of(path)


@pytest.mark.parametrize("suffix", GZ_SUFFIXES)
def test_truncated_gz_is_a_format_error(tmp_path, suffix):
    # long enough that the header parses and the stream breaks in the body
    body = SAMPLE[suffix] + _many_lines(suffix, 20_000)
    data = gzip.compress(body.encode())
    path = tmp_path / f"cut{suffix}"
    path.write_bytes(data[: len(data) // 2])
    message = error_of(path)
    assert "truncated" in message or "damaged" in message


def _many_lines(suffix: str, count: int) -> str:
    """``count`` more valid-looking edge lines in the syntax of ``suffix`` (the header's counts are
    wrong for them, but the truncation is met first)."""
    if suffix == ".gr.gz":
        return "".join(f"a {1 + i % 3} {1 + (i + 1) % 3} 7\n" for i in range(count))
    if suffix == ".txt.gz":
        return "".join(f"{i % 3} {(i + 1) % 3}\n" for i in range(count))
    return "".join(f"{1 + i % 3} {1 + (i + 1) % 3}\n" for i in range(count))


@pytest.mark.parametrize("suffix", GZ_SUFFIXES)
def test_valid_gz_still_reads(tmp_path, suffix):
    path = tmp_path / f"ok{suffix}"
    path.write_bytes(gzip.compress(SAMPLE[suffix].encode()))
    g = read_graph(path)
    assert g.num_vertices == 3 and g.num_edges >= 2


@pytest.mark.parametrize("suffix", GZ_SUFFIXES)
def test_bytes_after_the_gzip_data_are_named_as_such(tmp_path, suffix):
    """gzip reads bytes after a complete member as the next member: the file is gzip, its tail is
    not, and the error says so (it used to say "not a gzip file")."""
    path = tmp_path / f"appended{suffix}"
    path.write_bytes(gzip.compress((SAMPLE[suffix] + _many_lines(suffix, 3)).encode()) + b"trailing junk")
    message = error_of(path)
    assert "bytes after the end of the gzip data" in message and "not a gzip file" not in message


@pytest.mark.parametrize("suffix", GZ_SUFFIXES)
def test_a_gzip_member_that_fails_its_own_check_is_damaged_not_appended_to(tmp_path, suffix):
    """A CRC mismatch is a BadGzipFile too, in a file that starts as gzip: it was named as bytes
    appended after the gzip data."""
    data = bytearray(gzip.compress((SAMPLE[suffix] + _many_lines(suffix, 3)).encode()))
    data[-8] ^= 0xFF  # the member's CRC-32 (the trailer's first four bytes)
    path = tmp_path / f"crc{suffix}"
    path.write_bytes(bytes(data))
    message = error_of(path)
    assert "damaged gzip data (CRC check failed" in message
    assert "bytes after the end" not in message and "not a gzip file" not in message


def test_carriage_return_line_ends_in_matrix_market_are_named(tmp_path):
    """Lines ending in CR alone make the whole file one header "line": the error names the line
    ends, not a bad header; CR LF reads as LF."""
    text = "%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 4\n2 3 5\n"
    path = write(tmp_path / "cr.mtx", "")
    path.write_bytes(text.replace("\n", "\r").encode())
    message = error_of(path)
    assert "carriage return alone" in message and "line 1" in message
    path.write_bytes(text.replace("\n", "\r\n").encode())
    g = read_graph(path)
    assert g.num_vertices == 3 and g.src.tolist() == [0, 1] and g.weights.tolist() == [4, 5]


def test_damaged_gzip_body_names_the_file(tmp_path):
    data = bytearray(gzip.compress(_many_lines(".edges.gz", 5000).encode()))
    data[40:60] = b"\x00" * 20  # corrupt deflate data after the gzip header
    path = tmp_path / "bad.edges.gz"
    path.write_bytes(bytes(data))
    message = error_of(path)
    assert "damaged" in message or "truncated" in message or "line" in message


def test_broken_suitesparse_tarball(tmp_path):
    path = write(tmp_path / "gate.tar.gz", "not a tar archive")
    assert "not a readable gzip-compressed tar archive" in error_of(path)


# ---- empty files (defect 6) -------------------------------------------------------------------

@pytest.mark.parametrize("name, fragment", [
    ("empty.edges", "no edges"),
    ("empty.txt", "no edges"),
    ("comments.txt", "no edges"),
    ("empty.gr", "no problem line"),
    ("empty.mtx", "the file is empty"),
])
def test_empty_files(tmp_path, name, fragment):
    path = write(tmp_path / name, "# only a comment\n" if name.startswith("comments") else "")
    assert fragment in error_of(path)


def test_a_blank_first_line_of_a_matrix_market_file_is_no_header_not_an_empty_file(tmp_path):
    # only a file with nothing at all is empty; a blank line before the rest is a missing banner
    path = write(tmp_path / "blank.mtx", "\n%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 2 3\n")
    message = error_of(path)
    assert "not a Matrix Market header" in message and "empty" not in message


def test_empty_edge_list_with_a_stated_vertex_count_is_a_graph(tmp_path):
    g = read_edge_list(write(tmp_path / "e.edges", ""), num_vertices=4)
    assert (g.num_vertices, g.num_edges) == (4, 0)
    with pytest.raises(InvalidArgumentError, match="num_vertices = -5"):
        read_edge_list(tmp_path / "e.edges", num_vertices=-5)


# ---- 32 bits, never wrapped (defect 2) --------------------------------------------------------

def test_dimacs_vertex_count_beyond_32_bits_is_refused_not_wrapped(tmp_path):
    path = write(tmp_path / "big.gr", "p sp 3000000000 1\na 1 2500000000 5\n")
    message = error_of(path)
    assert "line 1" in message and "3,000,000,000 vertices" in message and "32-bit" in message


def test_dimacs_weight_beyond_32_bits(tmp_path):
    path = write(tmp_path / "w.gr", "p sp 3 2\na 1 2 4\na 2 3 5000000000\n")
    message = error_of(path)
    assert "line 3" in message and "5000000000" in message


@pytest.mark.parametrize("name, text, line", [
    ("big.edges", "1 2\n2147483648 1\n", 2),  # 1-based: id 2^31 - 1 after the shift
    ("big.txt", "0 1\n2147483647 1\n", 2),     # 0-based: id 2^31 - 1 cannot be an int32 id of a fitting n
    ("huge.edges", "1 2\n1 99999999999999999999\n", 2),  # beyond int64 too
])
def test_edge_list_ids_beyond_32_bits(tmp_path, name, text, line):
    message = error_of(write(tmp_path / name, text))
    assert f"line {line}" in message


def test_matrix_market_order_beyond_32_bits(tmp_path):
    path = write(tmp_path / "big.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                                       "3000000000 3000000000 1\n1 2\n")
    message = error_of(path)
    assert "line 2" in message and "32-bit" in message


# ---- Matrix Market headers that lie, and the abort (defect 1) ---------------------------------

HUGE_HEADER = "%%MatrixMarket matrix coordinate real general\n10 10 100000000000\n1 2 1.0\n2 3 1.0\n"


def test_matrix_market_entry_count_larger_than_the_file_can_hold(tmp_path):
    message = error_of(write(tmp_path / "huge.mtx", HUGE_HEADER))
    assert "line 2" in message and "100,000,000,000 entries" in message


def test_matrix_market_entry_count_bound_for_compressed_files(tmp_path):
    path = tmp_path / "huge.mtx.gz"
    path.write_bytes(gzip.compress(HUGE_HEADER.encode()))
    message = error_of(path)
    assert "100,000,000,000 entries" in message and "compressed" in message
    archive = tmp_path / "huge.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("huge/huge.mtx")
        info.size = len(HUGE_HEADER)
        tar.addfile(info, io.BytesIO(HUGE_HEADER.encode()))
    assert "100,000,000,000 entries" in error_of(archive)


def _run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


def test_huge_header_ends_cleanly_in_a_subprocess(tmp_path):
    path = write(tmp_path / "huge.mtx", HUGE_HEADER)
    proc = _run_python(f"""
        from engines.errors import FileFormatError
        from engines.io import read_matrix_market
        try:
            read_matrix_market({str(path)!r})
        except FileFormatError as exc:
            print("refused:", exc)
        """)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert "refused:" in proc.stdout and "entries" in proc.stdout


def test_reader_failure_inside_fast_matrix_market_never_aborts(tmp_path):
    """The abort's mechanism: a Python exception inside fast_matrix_market's reader (the
    MemoryError of a huge allocation) keeps its C++ cursor alive in the traceback; closing the
    stream first made the cursor's destructor abort the process ("seek of closed file")."""
    pytest.importorskip("fast_matrix_market")
    for name, text in (("a.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 3 1.0\n"),):
        path = write(tmp_path / name, text)
        gz = tmp_path / (name + ".gz")
        gz.write_bytes(gzip.compress(text.encode()))
        proc = _run_python(f"""
            import fast_matrix_market
            def allocation_fails(cursor, **kwargs):
                raise MemoryError("simulated: cannot allocate the entries")
            fast_matrix_market._read_body_coo = allocation_fails
            from engines.errors import OutOfMemoryError
            from engines.io import read_matrix_market
            for path in ({str(path)!r}, {str(gz)!r}):
                try:
                    read_matrix_market(path)
                except OutOfMemoryError as exc:
                    print("out of memory:", exc)
            import gc; gc.collect()
            print("still alive")
            """)
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
        assert proc.stdout.count("out of memory:") == 2 and "still alive" in proc.stdout


# ---- the headerless .mtx, the format argument, symmetrized SNAP --------------------------------

def test_headerless_mtx_points_to_the_edge_list_reader(tmp_path):
    path = write(tmp_path / "3elt.mtx", "1 2\n2 3\n3 1\n")
    message = error_of(path)
    assert "line 1" in message and "read_edge_list" in message and "--format edge_list" in message
    g = read_graph(path, format="edge_list")
    assert (g.num_vertices, g.num_edges) == (3, 6)


def test_read_graph_format_argument(tmp_path):
    with pytest.raises(InvalidArgumentError, match="unknown graph format 'csv'"):
        read_graph(tmp_path / "x.edges", format="csv")
    with pytest.raises(FileFormatError, match="format="):
        read_graph(write(tmp_path / "x.unknown", "1 2\n"))
    assert set(FORMATS) == {"matrix_market", "snap", "dimacs", "edge_list", "mosp"}


def test_snap_symmetrize_stores_both_directions(tmp_path):
    # an undirected SNAP list (ego-Facebook style): each edge once, smaller id first
    path = write(tmp_path / "ego.txt", "# undirected\n0 1\n0 2\n2 3\n3 4\n")
    directed = read_snap(path)
    both = read_snap(path, symmetrize=True)
    assert directed.num_edges == 4 and both.num_edges == 8
    assert set(zip(both.src.tolist(), both.dst.tolist())) == {
        (0, 1), (1, 0), (0, 2), (2, 0), (2, 3), (3, 2), (3, 4), (4, 3)}
    # the cache keys the reader options: the two readings never mix
    cache = tmp_path / "cache"
    g1, _ = read_graph_cached(path, cache_dir=cache)
    g2, _ = read_graph_cached(path, cache_dir=cache, options={"symmetrize": True})
    assert (g1.num_edges, g2.num_edges) == (4, 8)


def test_mosp_folder_through_read_graph(tmp_path):
    mosp.write_csr(tmp_path, [0, 2, 2, 3], [1, 1, 0], np.array([[3], [4], [5]]))
    g = read_graph(tmp_path)  # a folder: the MOSP reader, parallel edges kept as stored
    assert g.num_vertices == 3 and g.src.tolist() == [0, 0, 2] and g.dst.tolist() == [1, 1, 0]
    assert g.weights.tolist() == [[3], [4], [5]]
    g2, sha = read_graph_cached(tmp_path, cache_dir=tmp_path / "c")
    assert g2.dst.tolist() == [1, 1, 0] and len(sha) == 64
    (tmp_path / mosp.VALUES_FILE).unlink()
    with pytest.raises(FileFormatError, match="graphCsrValues.txt"):
        read_graph_cached(tmp_path, cache_dir=tmp_path / "c2")


# ---- any bytes: a FileFormatError naming the file, or a graph ----------------------------------

TOKENS = ["1", "2", "3", "0", "-1", "x", "1.5", "nan", "99999999999", "2147483648", "%%MatrixMarket",
          "matrix", "coordinate", "real", "pattern", "general", "symmetric", "p", "sp", "a", "c", "#", "%"]
PREFIXES = ["", "%%MatrixMarket matrix coordinate real general\n", "%%MatrixMarket matrix coordinate pattern "
            "symmetric\n", "p sp 3 2\n"]


@settings(max_examples=60, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prefix=st.sampled_from(PREFIXES),
       words=st.lists(st.tuples(st.sampled_from(TOKENS), st.sampled_from([" ", "\t", "\n"])), max_size=30),
       suffix=st.sampled_from([".mtx", ".txt", ".gr", ".edges", ".mtx.gz", ".txt.gz", ".gr.gz", ".edges.gz"]),
       cut=st.floats(0, 1.5))
def test_any_text_gives_a_graph_or_a_format_error(tmp_path, prefix, words, suffix, cut):
    data = (prefix + "".join(w + sep for w, sep in words)).encode()
    if suffix.endswith(".gz"):
        data = gzip.compress(data)
        if cut < 1:  # truncated somewhere
            data = data[: int(len(data) * cut)]
    path = tmp_path / f"fuzz{suffix}"
    path.write_bytes(data)
    try:
        g = read_graph(path)
    except FileFormatError as exc:
        assert str(path) in str(exc)
    else:
        assert g.src.dtype == np.int32 and (g.src >= 0).all() and (g.dst >= 0).all()
        assert g.num_edges == 0 or max(g.src.max(), g.dst.max()) < g.num_vertices


def test_mosp_batch_ids_beyond_32_bits(tmp_path):
    (tmp_path / mosp.INSERT_FILE).write_text("0 1 5\n1 2147483647 5\n")
    with pytest.raises(FileFormatError, match=r"insert\.txt, line 2: vertex id 2147483647 does not fit"):
        mosp.read_batch(tmp_path, num_weights=1)
    (tmp_path / mosp.INSERT_FILE).write_text("0 1 5\n")
    (tmp_path / mosp.DELETE_FILE).write_text("0 1\n\n4294967296 0\n")
    with pytest.raises(FileFormatError, match=r"delete\.txt, line 3: vertex id 4294967296"):
        mosp.read_batch(tmp_path, num_weights=1)


def test_matrix_market_long_comment_lines_are_comments(tmp_path):
    path = write(tmp_path / "long.mtx", "%%MatrixMarket matrix coordinate pattern general\n%" + "x" * 10_000
                 + "\n3 3 2\n1 2\n2 3\n")
    g = read_matrix_market(path)
    assert (g.num_vertices, g.num_edges) == (3, 2)


# ---- the review of issue 15 -------------------------------------------------------------------

MALFORMED_MTX = [  # (text, the line at fault), as tests/engines/io/test_readers.py has them
    ("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 x 1.0\n", 4),
    ("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 9 1.0\n", 4),
    ("%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 1.0\n2 3 1.0\n1 3\n", 5),
]


@pytest.mark.parametrize("fast", [True, False], ids=["fast_matrix_market", "scipy"])
@pytest.mark.parametrize("text, line", MALFORMED_MTX)
def test_both_matrix_market_readers_name_the_line_alike(tmp_path, monkeypatch, fast, text, line):
    from engines.io import matrix_market

    if fast and matrix_market._fmm is None:
        pytest.skip("fast_matrix_market is not installed")
    if not fast:
        monkeypatch.setattr(matrix_market, "_fmm", None)  # the SciPy fallback
    path = write(tmp_path / "bad.mtx", text)
    with pytest.raises(FileFormatError) as info:
        read_matrix_market(path)
    assert str(info.value).startswith(f"{path}, line {line}: ") and "Line" not in str(info.value)


def test_hashing_an_unreadable_file_is_a_format_error_naming_it(tmp_path, unreadable):
    from engines.io import input_sha256

    path = write(tmp_path / "g.edges", "1 2\n")
    unreadable(path)
    with pytest.raises(FileFormatError, match=f"^{path}: cannot read the file: Permission denied$"):
        input_sha256(path)


def test_an_incomplete_mosp_folder_is_named_before_hashing(tmp_path):
    from engines.io import input_sha256

    folder = tmp_path / "g"
    folder.mkdir()
    (folder / mosp.ROW_PTR_FILE).write_text("0\n")
    for call in (lambda: input_sha256(folder), lambda: read_graph_cached(folder, cache_dir=tmp_path / "c")):
        with pytest.raises(FileFormatError, match=f"^{folder}: not a MOSP graph folder: it lacks "
                                                  f"{mosp.COL_IND_FILE}, {mosp.VALUES_FILE}$"):
            call()


@pytest.mark.parametrize("value", [-5, 2.5, True, "4", 2**31])
def test_num_vertices_is_checked_once_for_graphs_and_readers(tmp_path, value):
    from engines import Graph

    path = write(tmp_path / "e.edges", "1 2\n")
    with pytest.raises(InvalidArgumentError) as by_graph:
        Graph.from_edges([], [], np.zeros((0, 1)), num_vertices=value)
    with pytest.raises(InvalidArgumentError) as by_reader:
        read_edge_list(path, num_vertices=value)
    assert str(by_reader.value) == f"{by_graph.value} (reading {path})"


def test_the_readers_take_the_vertex_and_weight_limits_from_engines_arguments():
    sources = {p.name: p.read_text() for p in (REPO / "engines" / "io").glob("*.py")}
    for name, text in sources.items():
        assert "iinfo(np.int32)" not in text and "VERTEX_LIMIT" not in text and "WEIGHT_LIMIT" not in text, name


def test_an_id_past_a_stated_vertex_count_names_its_line(tmp_path):
    # the message named the id and the count but not where the id is
    path = write(tmp_path / "e.edges", "# three vertices\n1 2\n2 3\n\n3 7\n1 3\n")
    with pytest.raises(FileFormatError) as info:
        read_edge_list(path, num_vertices=3)
    message = str(info.value)
    assert "line 5" in message and "vertex id 7 exceeds the stated 3 vertices" in message
    zero_based = write(tmp_path / "z.edges", "0 1\n1 3\n")
    with pytest.raises(FileFormatError, match="line 2: vertex id 3 exceeds the stated 3 vertices"):
        read_edge_list(zero_based, one_based=False, num_vertices=3)
