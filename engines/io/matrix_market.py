"""Matrix Market graphs: ``.mtx``, ``.mtx.gz`` and the SuiteSparse ``.tar.gz`` (``NAME/NAME.mtx``).

Semantics (inputs.md §1.1): coordinate format, square matrices only; entry (i, j) is the edge
i -> j (1-based in the file, 0-based here); ``symmetric``, ``skew-symmetric`` and ``hermitian``
files give both directions of every off-diagonal entry; self-loops are dropped; duplicate pairs
are removed (the first entry's value is kept); ``pattern`` files carry no weights
(``ParsedGraph.weights is None``), other fields return their values as a ``(m,)`` column
(float64, int64 or complex128, as stored). Parsing uses fast_matrix_market (multi-threaded C++),
falling back to SciPy's reader where fast_matrix_market is not installed.
"""

from __future__ import annotations

import gzip
import io
import re
import tarfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ._text import format_error
from .parsed import ParsedGraph, canonical_edges

try:  # the fast reader is an optional dependency ("io" extra)
    import fast_matrix_market as _fmm
except ImportError:  # pragma: no cover - exercised only where the package is missing
    _fmm = None

_FMM_LINE = re.compile(r"^Line (\d+):\s*(.*)$", re.S)


def _tar_member(archive: tarfile.TarFile, path: Path) -> tarfile.TarInfo:
    name = path.name[: -len(".tar.gz")]
    members = [m for m in archive.getmembers() if m.isfile() and m.name.endswith(".mtx")]
    preferred = [m for m in members if m.name in (f"{name}/{name}.mtx", f"{name}.mtx")]
    if preferred:
        return preferred[0]
    if len(members) == 1:
        return members[0]
    raise format_error(path, None, f"archive holds no {name}/{name}.mtx "
                                   f"(matrix members: {[m.name for m in members][:5]})")


@contextmanager
def _open_binary(path: Path):
    """A binary stream of the .mtx text, whatever the container."""
    if path.name.endswith(".tar.gz") or path.name.endswith(".tgz"):
        with tarfile.open(path, "r:gz") as archive:
            member = _tar_member(archive, path)
            handle = archive.extractfile(member)
            if handle is None:
                raise format_error(path, None, f"cannot extract {member.name}")
            with handle:
                yield handle
    elif path.name.endswith(".gz"):
        with gzip.open(path, "rb") as handle:
            yield handle
    else:
        with open(path, "rb") as handle:
            yield handle


def _header(path: Path) -> tuple[str, str, str]:
    with _open_binary(path) as handle:
        first = handle.readline(4096).decode("ascii", errors="replace").strip()
    tokens = first.lower().split()
    if len(tokens) != 5 or tokens[0] != "%%matrixmarket" or tokens[1] != "matrix":
        raise format_error(path, 1, f"not a Matrix Market header: {first[:80]!r}")
    layout, field, symmetry = tokens[2], tokens[3], tokens[4]
    if layout != "coordinate":
        raise format_error(path, 1, f"only coordinate matrices describe graphs, found {layout!r}")
    if field not in ("real", "integer", "complex", "pattern", "double"):
        raise format_error(path, 1, f"unknown field {field!r}")
    if symmetry not in ("general", "symmetric", "skew-symmetric", "hermitian"):
        raise format_error(path, 1, f"unknown symmetry {symmetry!r}")
    return layout, field, symmetry


def _read_coo(path: Path):
    with _open_binary(path) as handle:
        if _fmm is not None:
            try:
                (data, (rows, cols)), shape = _fmm.read_coo(handle, generalize_symmetry=True)
            except (ValueError, RuntimeError, OverflowError) as exc:
                message = str(exc)
                match = _FMM_LINE.match(message)
                if match:
                    raise format_error(path, int(match.group(1)), match.group(2)) from None
                raise format_error(path, None, message) from None
            return np.asarray(data), np.asarray(rows), np.asarray(cols), tuple(shape)
        import scipy.io

        try:
            matrix = scipy.io.mmread(io.BytesIO(handle.read())).tocoo()
        except (ValueError, IndexError, TypeError) as exc:
            raise format_error(path, None, str(exc)) from None
        rows, cols, data = matrix.row, matrix.col, matrix.data
        return np.asarray(data), np.asarray(rows), np.asarray(cols), tuple(matrix.shape)


def read_matrix_market(path: str | Path) -> ParsedGraph:
    path = Path(path)
    if not path.is_file():
        raise format_error(path, None, "no such file")
    try:
        _, field, _ = _header(path)
        data, rows, cols, shape = _read_coo(path)
    except (OSError, EOFError, tarfile.TarError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        from ..errors import FileFormatError

        if isinstance(exc, FileFormatError):
            raise
        raise format_error(path, None, f"cannot read the file: {exc}") from None
    if shape[0] != shape[1]:
        raise format_error(path, 2, f"a graph needs a square matrix, found {shape[0]} x {shape[1]}")
    n = int(shape[0])
    if n > np.iinfo(np.int32).max:
        raise format_error(path, 2, f"{n} vertices do not fit 32-bit vertex ids")
    weights = None if field == "pattern" else data
    return canonical_edges(rows, cols, n, weights)
