"""MOSP-style text files: a CSR graph, change batches, distances and trees, one value per line.

The layout this module reads and writes (all integers in decimal ASCII, ``\\n`` line ends, no
headers, no comments; blank lines are skipped):

``graphCsrRowPtr.txt``
    n + 1 lines: the CSR row offsets, starting at 0, non-decreasing, ending at m.
``graphCsrColInd.txt``
    m lines: the head vertex of each edge, in CSR order (0-based, in [0, n)).
``graphCsrValues.txt``
    K * m lines: the weights, objective-major (lines k*m .. k*m + m - 1 hold column k, edge
    order as in graphCsrColInd.txt). K is the line count divided by m (K = 1 when m = 0).
``insert.txt``
    one insertion a line: ``u v w1 ... wK`` (0-based ids, K weights), batch order.
``delete.txt``
    one deletion a line: ``u v``, batch order.
distance file (any name)
    n lines, one distance per vertex; unreachable vertices hold ``INFINITE_DISTANCE``
    (2^61 - 1, MOSP's ``DISTANCE_INF``).
tree file (any name)
    n lines, one parent per vertex; ``-1`` for the source and unreachable vertices.

Malformed files raise ``FileFormatError`` naming the file and the line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..arguments import VERTEX_MAX, WEIGHT_MAX
from ._text import exists_as_anything, format_error, iter_lines, read_int_table, require_regular_file
from .parsed import ParsedGraph

ROW_PTR_FILE = "graphCsrRowPtr.txt"
COL_IND_FILE = "graphCsrColInd.txt"
VALUES_FILE = "graphCsrValues.txt"
INSERT_FILE = "insert.txt"
DELETE_FILE = "delete.txt"


def _read_column(path: Path) -> np.ndarray:
    require_regular_file(path)
    table = read_int_table(path, min_columns=1, max_columns=1, comment=None)
    return table[:, 0]


def _write_lines(path: Path, values: np.ndarray) -> None:
    values = np.asarray(values, dtype=np.int64).reshape(-1)
    text = "\n".join(map(str, values.tolist()))
    path.write_text(text + ("\n" if values.size else ""), encoding="ascii")


def _write_table(path: Path, table: np.ndarray) -> None:
    table = np.asarray(table, dtype=np.int64)
    with open(path, "w", encoding="ascii") as handle:
        if table.size:
            np.savetxt(handle, table, fmt="%d", delimiter=" ")


def _first_line_where(path: Path, mask: np.ndarray) -> int:
    """1-based file line of the first data row where ``mask`` is True (blank lines skipped)."""
    index = int(np.argmax(mask))
    seen = -1
    for number, line in iter_lines(path):
        if line.strip():
            seen += 1
            if seen == index:
                return number
    return index + 1


def read_csr(directory: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(row_ptr int64 (n+1), col_ind int32 (m), weights int64 (m, K))`` from a MOSP folder."""
    directory = Path(directory)
    row_path, col_path, val_path = (directory / f for f in (ROW_PTR_FILE, COL_IND_FILE, VALUES_FILE))
    row_ptr = _read_column(row_path)
    col_ind = _read_column(col_path)
    values = _read_column(val_path)
    if row_ptr.size == 0:
        raise format_error(row_path, None, "empty: the row pointer needs n + 1 >= 1 lines")
    if row_ptr[0] != 0:
        raise format_error(row_path, 1, f"the first offset must be 0, found {row_ptr[0]}")
    step = np.diff(row_ptr)
    if (step < 0).any():
        raise format_error(row_path, _first_line_where(row_path, np.concatenate([[False], step < 0])),
                           "offsets decrease")
    n, m = row_ptr.size - 1, int(row_ptr[-1])
    if col_ind.size != m:
        raise format_error(col_path, None, f"{col_ind.size} lines, but the row pointer ends at {m}")
    bad = (col_ind < 0) | (col_ind >= n)
    if bad.any():
        raise format_error(col_path, _first_line_where(col_path, bad),
                           f"vertex {col_ind[np.argmax(bad)]} outside [0, {n})")
    if m == 0:
        if values.size:
            raise format_error(val_path, 1, "values for a graph without edges")
        return row_ptr, col_ind.astype(np.int32), np.zeros((0, 1), dtype=np.int64)
    if values.size == 0 or values.size % m:
        raise format_error(val_path, None, f"{values.size} lines is not a multiple of the {m} edges")
    bad = (values < 1) | (values > WEIGHT_MAX)
    if bad.any():
        raise format_error(val_path, _first_line_where(val_path, bad),
                           f"weight {values[np.argmax(bad)]} outside [1, {WEIGHT_MAX}]")
    k = values.size // m
    weights = np.ascontiguousarray(values.reshape(k, m).T)
    return row_ptr, col_ind.astype(np.int32), weights


def read_csr_graph(directory: str | Path) -> ParsedGraph:
    """A MOSP CSR folder as a :class:`ParsedGraph`, exactly as stored: rows in file order, parallel
    edges and self-loops kept (unlike the other readers), weights ``(m, K)`` int64."""
    directory = Path(directory)
    if not directory.is_dir():
        raise format_error(directory, None, "not a folder (a MOSP graph is a folder holding "
                                            f"{ROW_PTR_FILE}, {COL_IND_FILE} and {VALUES_FILE})")
    row_ptr, col_ind, weights = read_csr(directory)
    n = row_ptr.size - 1
    if n > VERTEX_MAX:
        raise format_error(directory / ROW_PTR_FILE, None, f"{n:,} vertices do not fit 32-bit vertex ids")
    src = np.repeat(np.arange(n, dtype=np.int32), np.diff(row_ptr))
    return ParsedGraph(n, src, col_ind, weights)


def write_csr(directory: str | Path, row_ptr, col_ind, weights) -> None:
    """Write the three CSR files; ``weights`` is ``(m, K)``/``(m,)`` or objective-major flat ``(K*m,)``
    when ``col_ind`` says m and the length is a multiple of it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    col_ind = np.asarray(col_ind)
    weights = np.asarray(weights, dtype=np.int64)
    if weights.ndim == 2:
        flat = weights.T.reshape(-1)  # objective-major
    else:
        flat = weights
    _write_lines(directory / ROW_PTR_FILE, row_ptr)
    _write_lines(directory / COL_IND_FILE, col_ind)
    _write_lines(directory / VALUES_FILE, flat)


def read_batch(directory: str | Path, *, num_weights: int | None = None):
    """``(insert_src, insert_dst, insert_weights (k, K), delete_src, delete_dst)`` int64 arrays
    from ``insert.txt`` and ``delete.txt`` (a missing file means no changes of that kind)."""
    directory = Path(directory)
    ins_path, del_path = directory / INSERT_FILE, directory / DELETE_FILE
    if exists_as_anything(ins_path):  # present but not a regular file: an error, never "no insertions"
        ins = read_int_table(ins_path, min_columns=3, max_columns=66, comment=None)
    else:
        ins = np.zeros((0, 2 + (num_weights or 1)), dtype=np.int64)
    if num_weights is not None and ins.shape[0] and ins.shape[1] != 2 + num_weights:
        raise format_error(ins_path, 1, f"expected {num_weights} weights a line, found {ins.shape[1] - 2}")
    if exists_as_anything(del_path):
        dele = read_int_table(del_path, min_columns=2, max_columns=2, comment=None)
    else:
        dele = np.zeros((0, 2), dtype=np.int64)
    for path, ids in ((ins_path, ins[:, :2]), (del_path, dele)):
        bad = (ids < 0).any(axis=1)
        if bad.any():
            raise format_error(path, _first_line_where(path, bad), "negative vertex id")
        big = (ids >= VERTEX_MAX).any(axis=1)
        if big.any():
            raise format_error(path, _first_line_where(path, big),
                               f"vertex id {int(ids[np.argmax(big)].max())} does not fit a 32-bit vertex id (ids < {VERTEX_MAX})")
    weights = ins[:, 2:]
    bad = ((weights < 1) | (weights > WEIGHT_MAX)).any(axis=1)
    if bad.any():
        raise format_error(ins_path, _first_line_where(ins_path, bad), f"weight outside [1, {WEIGHT_MAX}]")
    return ins[:, 0], ins[:, 1], np.ascontiguousarray(weights), dele[:, 0], dele[:, 1]


def write_batch(directory: str | Path, insert_src, insert_dst, insert_weights, delete_src, delete_dst) -> None:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    insert_weights = np.asarray(insert_weights, dtype=np.int64)
    if insert_weights.ndim == 1:
        insert_weights = insert_weights[:, None]
    ins = np.column_stack([np.asarray(insert_src, np.int64), np.asarray(insert_dst, np.int64), insert_weights]) \
        if len(insert_src) else np.zeros((0, 3), np.int64)
    dele = np.column_stack([np.asarray(delete_src, np.int64), np.asarray(delete_dst, np.int64)]) \
        if len(delete_src) else np.zeros((0, 2), np.int64)
    _write_table(directory / INSERT_FILE, ins)
    _write_table(directory / DELETE_FILE, dele)


def read_vertex_values(path: str | Path, *, num_vertices: int | None = None) -> np.ndarray:
    """A distance or tree file: one int64 per vertex."""
    path = Path(path)
    values = _read_column(path)
    if num_vertices is not None and values.size != num_vertices:
        raise format_error(path, None, f"{values.size} lines for {num_vertices} vertices")
    return values


def write_vertex_values(path: str | Path, values) -> None:
    _write_lines(Path(path), values)


def read_distances(path: str | Path, *, num_vertices: int | None = None) -> np.ndarray:
    values = read_vertex_values(path, num_vertices=num_vertices)
    bad = values < 0
    if bad.any():
        raise format_error(path, _first_line_where(Path(path), bad), "negative distance")
    return values


def read_tree(path: str | Path, *, num_vertices: int | None = None) -> np.ndarray:
    values = read_vertex_values(path, num_vertices=num_vertices)
    n = values.size
    bad = (values < -1) | (values >= n)
    if bad.any():
        raise format_error(path, _first_line_where(Path(path), bad), f"parent outside [-1, {n})")
    return values.astype(np.int32)


write_distances = write_vertex_values
write_tree = write_vertex_values
