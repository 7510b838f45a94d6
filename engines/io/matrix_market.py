"""Matrix Market graphs: ``.mtx``, ``.mtx.gz`` and the SuiteSparse ``.tar.gz`` (``NAME/NAME.mtx``).

Semantics (inputs.md §1.1): coordinate format, square matrices only; entry (i, j) is the edge
i -> j (1-based in the file, 0-based here); ``symmetric``, ``skew-symmetric`` and ``hermitian``
files give both directions of every off-diagonal entry; self-loops are dropped; duplicate pairs
are removed (the first entry's value is kept); ``pattern`` files carry no weights
(``ParsedGraph.weights is None``), other fields return their values as a ``(m,)`` column
(float64, int64 or complex128, as stored). Parsing uses fast_matrix_market (multi-threaded C++),
falling back to SciPy's reader where fast_matrix_market is not installed.

Every entry is checked to be exactly ``ROW COLUMN`` (pattern) or ``ROW COLUMN VALUE`` (two
values for complex) before it is parsed: ``1e3``, ``7.9`` or ``12abc`` in an integer file, an
index such as ``3.7``, a missing value or a field after it is refused naming the line and the
text. A last line ending in blanks without a line end is read as if it had one.

Before any entry is read the header is checked: the banner, a square size line whose order fits
32-bit vertex ids, and an entry count the file can actually hold (a file claiming 10^11 entries
in four lines is refused, not allocated for). A file without a banner that looks like a plain
edge list gets an error that names the edge-list reader.
"""

from __future__ import annotations

import gc
import gzip
import io
import re
import tarfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..arguments import VERTEX_MAX, article
from ..errors import FileFormatError
from ._text import (INTEGER, READ_ERRORS, REAL, first_bad_line, format_error, is_integer_text, is_real_text,
                    out_of_memory, read_failure, require_regular_file, skip_bom)
from .parsed import ParsedGraph, canonical_edges

try:  # the fast reader is an optional dependency ("io" extra)
    import fast_matrix_market as _fmm
except ImportError:  # pragma: no cover - exercised only where the package is missing
    _fmm = None

_FMM_LINE = re.compile(r"^Line (\d+):\s*(.*)$", re.S)
# The shortest entry line: "1 1\n" (pattern) or "1 1 1\n" (with a value).
_MIN_ENTRY_BYTES = {"pattern": 4}
_MIN_VALUE_ENTRY_BYTES = 6
# deflate cannot expand data by more than about 1032:1, so a .gz file of c bytes holds at most
# 1032 c bytes of text: the bound used to judge a compressed file's entry count.
_MAX_DEFLATE_RATIO = 1032
_HEADER_LINE_LIMIT = 1 << 16  # banner and comment lines read before the size line, at most
_LINE_BYTES_LIMIT = 1 << 20  # one header line, at most


@dataclass(frozen=True)
class Header:
    field: str
    symmetry: str
    rows: int
    cols: int
    entries: int
    size_line: int  # 1-based line number of the size line
    text_start: int  # where the banner starts: after a byte order mark, if any (the parsers start there)
    # A value field's size line states more entries than the file holds at 6 bytes each: raised
    # after the entries are checked, since entries without their values explain it better.
    room_problem: FileFormatError | None = None


@dataclass(frozen=True)
class _Stream:
    handle: object  # binary file object positioned at the start of the .mtx text
    text_bytes: int  # the text's exact size, or an upper bound of it
    exact: bool


def _tar_member(archive: tarfile.TarFile, path: Path) -> tarfile.TarInfo:
    name = path.name[: -len(".tar.gz")] if path.name.endswith(".tar.gz") else path.name[: -len(".tgz")]
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
    """A :class:`_Stream` of the .mtx text, whatever the container."""
    if path.name.endswith(".tar.gz") or path.name.endswith(".tgz"):
        with tarfile.open(path, "r:gz") as archive:
            member = _tar_member(archive, path)
            handle = archive.extractfile(member)
            if handle is None:
                raise format_error(path, None, f"cannot extract {member.name}")
            with handle:
                yield _Stream(handle, int(member.size), True)
    elif path.name.endswith(".gz"):
        with gzip.open(path, "rb") as handle:
            yield _Stream(handle, path.stat().st_size * _MAX_DEFLATE_RATIO, False)
    else:
        with open(path, "rb") as handle:
            yield _Stream(handle, path.stat().st_size, True)


def _looks_like_edge_list(line: str) -> bool:
    tokens = line.split()
    return 2 <= len(tokens) <= 3 and all(t.lstrip("+-").isdigit() for t in tokens[:2])


def _readline(path: Path, handle, number: int) -> bytes:
    """One whole header line (a long comment too), refusing lines beyond _LINE_BYTES_LIMIT."""
    raw = handle.readline(_LINE_BYTES_LIMIT + 1)
    if len(raw) > _LINE_BYTES_LIMIT:
        raise format_error(path, number, f"a header line longer than {_LINE_BYTES_LIMIT:,} bytes: "
                                         "not a Matrix Market text file")
    return raw


def _read_header(path: Path, stream: _Stream) -> Header:
    """Banner, comments and size line, checked; leaves the stream after the size line."""
    handle = stream.handle
    text_start = skip_bom(handle)
    raw = _readline(path, handle, 1)
    first = raw.decode("ascii", errors="replace").strip()
    tokens = first.lower().split()
    if len(tokens) != 5 or tokens[0] != "%%matrixmarket" or tokens[1] != "matrix":
        if not raw:  # nothing after the byte order mark, if any
            raise format_error(path, None, "the file is empty (a Matrix Market file starts with its "
                                           "'%%MatrixMarket matrix ...' banner line)")
        if "\r" in first:  # one "line" holding several: the file's lines end in CR alone
            raise format_error(path, 1, "the lines end in a carriage return alone (classic Mac OS line "
                                        "ends), which Matrix Market readers do not take: convert them "
                                        "to LF (or CR LF)")
        hint = ""
        if _looks_like_edge_list(first):
            hint = ("; it looks like a plain edge list ('u v' a line): read it with "
                    "engines.io.read_edge_list, read_graph(path, format=\"edge_list\"), or "
                    "perf_ab.py --graph-file PATH --format edge_list")
        raise format_error(path, 1, f"not a Matrix Market header: {first[:80]!r}{hint}")
    layout, field, symmetry = tokens[2], tokens[3], tokens[4]
    if layout != "coordinate":
        raise format_error(path, 1, f"only coordinate matrices describe graphs, found {layout!r}")
    if field not in ("real", "integer", "complex", "pattern", "double"):
        raise format_error(path, 1, f"unknown field {field!r}")
    if symmetry not in ("general", "symmetric", "skew-symmetric", "hermitian"):
        raise format_error(path, 1, f"unknown symmetry {symmetry!r}")
    number, consumed = 1, text_start + len(raw)
    while True:
        number += 1
        raw = _readline(path, handle, number)
        consumed += len(raw)
        if not raw:
            raise format_error(path, number, "the file ends before the size line 'ROWS COLUMNS ENTRIES'")
        text = raw.decode("ascii", errors="replace").strip()
        if text and not text.startswith("%"):
            break
        if number > _HEADER_LINE_LIMIT:
            raise format_error(path, number, f"no size line in the first {_HEADER_LINE_LIMIT:,} lines")
    parts = text.split()
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() for p in parts):
        raise format_error(path, number, f"bad size line {text[:80]!r} (want 'ROWS COLUMNS ENTRIES', "
                                         "non-negative integers)")
    rows, cols, entries = (int(p) for p in parts)
    if rows != cols:
        raise format_error(path, number, f"a graph needs a square matrix, found {rows} x {cols}")
    if rows > VERTEX_MAX:
        raise format_error(path, number, f"{rows:,} vertices do not fit 32-bit vertex ids "
                                         f"(at most {VERTEX_MAX:,})")
    per_entry = _MIN_ENTRY_BYTES.get(field, _MIN_VALUE_ENTRY_BYTES)
    room = max(stream.text_bytes - consumed, 0)
    if entries * per_entry > room + 1:  # + 1: the last line may lack its newline
        most = (room + 1) // per_entry
        holds = (f"holds {room:,} bytes after the header" if stream.exact else
                 f"is {path.stat().st_size:,} bytes compressed, so at most {room:,} bytes of text")
        problem = format_error(path, number, f"the size line states {entries:,} entries, but the file {holds}: "
                                             f"room for at most {most:,}; it is truncated or its size line is wrong")
        if field == "pattern" or entries * _MIN_ENTRY_BYTES["pattern"] > room + 1:
            raise problem
        return Header(field, symmetry, rows, cols, entries, number, text_start, problem)
    return Header(field, symmetry, rows, cols, entries, number, text_start)


# The fields of one entry after ROW COLUMN, per field; fast_matrix_market reads a number by its
# longest valid prefix ("7.9" as 7 in an integer matrix, "12abc" as 12, the index "3.7" as 3 in a
# pattern matrix) and ignores what follows it, so every entry line is matched against its exact
# form first (a NUL byte after an index also crashed it: SIGSEGV).
_VALUE_FIELDS = {"pattern": (), "integer": (INTEGER,), "real": (REAL,), "double": (REAL,), "complex": (REAL, REAL)}
_VALUE_NAMES = {"pattern": (), "integer": ("VALUE",), "real": ("VALUE",), "double": ("VALUE",),
                "complex": ("REAL", "IMAGINARY")}


def _entry_body(field: str) -> bytes:
    return rb"[ \t]+".join((INTEGER, INTEGER, *_VALUE_FIELDS[field]))


def _entry_problem(field: str, text: str) -> str:
    """What is wrong with one entry line that does not have its exact form, in words."""
    names = ("ROW", "COLUMN", *_VALUE_NAMES[field])
    form = f"{article(field)} {field} entry is '{' '.join(names)}'"
    tokens = text.split()
    if text.startswith("%"):
        return f"a comment among the entries ({text[:80]!r}); comments belong before the size line"
    for name, token in zip(("row", "column"), tokens):
        if not is_integer_text(token):
            return f"the {name} index {token!r} is not an integer in {text[:80]!r}"
    if len(tokens) < len(names):
        missing = {1: "no column index", 2: "no value"}.get(len(tokens), f"no {names[len(tokens)].lower()} part")
        return f"the entry {text[:80]!r} has {missing} ({form})"
    exact, kind = (is_integer_text, "an integer") if field == "integer" else (is_real_text, "a real number")
    for token in tokens[2:len(names)]:
        if not exact(token):
            return (f"the value {token!r} is not {kind} (the header declares {article(field)} {field} matrix), "
                    f"in {text[:80]!r}")
    if len(tokens) > len(names):
        last = "column index" if field == "pattern" else "value"
        return f"{text[:80]!r} has {len(tokens)} fields, but {form}: nothing may follow the {last}"
    return f"bad entry {text[:80]!r} ({form})"


class _LastByte:
    """A binary stream that remembers the last byte read from it."""

    def __init__(self, handle):
        self.handle, self.last = handle, b""

    def read(self, size: int = -1) -> bytes:
        block = self.handle.read(size)
        if block:
            self.last = block[-1:]
        return block


def _check_entries(path: Path, handle, header: Header) -> bool:
    """Every entry line in its exact form (the stream is after the size line, and is read to its
    end). True when the text ends in a blank or a CR without a line end: fast_matrix_market (and
    SciPy's reader, built on it) crashes with SIGSEGV on such a last line (1.7.6: "1 2 3 " at the
    end of the file), so the caller gives it the line end."""
    stream = _LastByte(handle)
    bad = first_bad_line(stream, _entry_body(header.field), first_line=header.size_line + 1)
    if bad is not None:
        number, text = bad
        raise format_error(path, number, _entry_problem(header.field, text))
    return stream.last in (b" ", b"\t", b"\r")


def _fmm_read(handle):
    """fast_matrix_market's ``read_coo`` on an open stream: ``(result, None)`` or ``(None, exc)``.

    The reader's C++ cursor seeks the stream when it is destroyed, so it must never outlive the
    handle. A failure inside the reader (a MemoryError from a huge entry count, a parse error)
    keeps the cursor alive in the traceback's frames; were the handle closed first, destroying
    the cursor later aborts the interpreter ("seek of closed file", SIGABRT). So the traceback
    is dropped and the cursor collected here, while the caller's handle is still open.
    """
    try:
        return _fmm.read_coo(handle, generalize_symmetry=True), None
    except BaseException as exc:  # noqa: BLE001 - every failure is handed back, none swallowed
        failure = exc
    failure.__traceback__ = None
    failure.__context__ = None
    gc.collect()
    return None, failure


def _scipy_read(handle):
    """SciPy's reader where fast_matrix_market is missing, handing failures back like
    :func:`_fmm_read` so that both go through :func:`_translate` (the same messages)."""
    import scipy.io

    try:
        matrix = scipy.io.mmread(io.BytesIO(handle.read())).tocoo()
    except (MemoryError, ValueError, IndexError, OverflowError) as exc:
        return None, exc
    except TypeError as exc:  # SciPy's word for some malformed entries
        return None, ValueError(str(exc))
    return ((matrix.data, (matrix.row, matrix.col)), matrix.shape), None


_OUT_OF_BOUNDS = {"Row index out of bounds": "row", "Column index out of bounds": "column"}


def _in_words(problem: str, header: Header) -> str:
    """The fast reader's words for a bad entry, with the range an index out of bounds must be in."""
    name = _OUT_OF_BOUNDS.get(problem.strip().rstrip("."))
    if name is None:
        return problem
    bound = header.rows if name == "row" else header.cols
    return (f"the {name} index is outside [1, {bound}] (the size line states a "
            f"{header.rows} x {header.cols} matrix)")


def _translate(path: Path, header: Header, failure: BaseException) -> BaseException:
    """The error to raise for a failure of the fast reader or SciPy's ("Line N: ..." -> line N)."""
    if isinstance(failure, MemoryError):
        return out_of_memory(path, f"its {header.entries:,} entries")
    if isinstance(failure, FileFormatError):
        return failure
    if isinstance(failure, READ_ERRORS):
        return format_error(path, None, read_failure(failure, path))
    if isinstance(failure, (ValueError, RuntimeError, OverflowError, IndexError)):
        message = str(failure)
        match = _FMM_LINE.match(message)
        if match:
            return format_error(path, int(match.group(1)), _in_words(match.group(2), header))
        return format_error(path, None, message)
    return failure  # KeyboardInterrupt, SystemExit, or a bug: passed on as it is


def _read_coo(path: Path):
    failure = None
    with _open_binary(path) as stream:
        header = _read_header(path, stream)
        open_end = _check_entries(path, stream.handle, header)
        if header.room_problem is not None:
            raise header.room_problem
        stream.handle.seek(header.text_start)
        # the whole text in memory only for such a rare file: the line end the reader needs
        source = io.BytesIO(stream.handle.read() + b"\n") if open_end else stream.handle
        result, failure = (_fmm_read if _fmm is not None else _scipy_read)(source)
    if failure is not None:
        raise _translate(path, header, failure)
    (data, (rows, cols)), shape = result
    return header, np.asarray(data), np.asarray(rows), np.asarray(cols), tuple(shape)


def read_matrix_market(path: str | Path) -> ParsedGraph:
    path = Path(path)
    require_regular_file(path)
    try:
        header, data, rows, cols, shape = _read_coo(path)
    except FileFormatError:
        raise
    except (*READ_ERRORS, tarfile.TarError) as exc:
        if isinstance(exc, tarfile.TarError):
            raise format_error(path, None, f"not a readable gzip-compressed tar archive ({exc})") from None
        raise format_error(path, None, read_failure(exc, path)) from None
    n = int(shape[0])
    weights = None if header.field == "pattern" else data
    return canonical_edges(rows, cols, n, weights)
