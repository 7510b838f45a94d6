"""Fast whitespace-separated integer tables (pandas' C parser) with exact error locations.

The fast path never loops in Python. When it fails, or when the parsed values break a rule,
a line-by-line scan of the file (only on that error path) finds the first offending line so
the ``FileFormatError`` can name it. A file that cannot be read at all (a ``.gz`` name on bytes
that are not gzip, a truncated or damaged compressed stream, no permission) is a
``FileFormatError`` too, naming the file, the line reached and what went wrong.
"""

from __future__ import annotations

import errno
import gzip
import os
import re
import stat
import warnings
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pandas as pd

from ..errors import FileFormatError, OutOfMemoryError

# What reading a (possibly compressed) file can raise besides parse errors: gzip.BadGzipFile and
# permission problems are OSErrors, a truncated stream is an EOFError, damaged data a zlib.error.
READ_ERRORS = (OSError, EOFError, zlib.error)


def format_error(path: Path | str, line: int | None, problem: str) -> FileFormatError:
    where = f"{path}, line {line}" if line is not None else f"{path}"
    return FileFormatError(f"{where}: {problem}")


def read_failure(exc: BaseException, path: Path | str | None = None) -> str:
    """Why a file could not be read, in words (for the READ_ERRORS and decoding errors).
    ``path``, where given, tells a gzip file with bytes after its compressed data (gzip reads them
    as a next member, and finds no gzip header there) from a file that is no gzip file at all."""
    if isinstance(exc, gzip.BadGzipFile):
        if not str(exc).startswith("Not a gzipped file"):  # a member's own check: CRC, length, method
            return f"damaged gzip data ({exc})"
        # no gzip magic where a member should start: at the file's start, or after a whole member
        if path is not None and _starts_as_gzip(path):
            return (f"bytes after the end of the gzip data are not gzip data (the file was appended "
                    f"to after compressing, or is damaged) ({exc})")
        return f"not a gzip file, although its name ends in .gz ({exc})"
    if isinstance(exc, EOFError):
        return "truncated: the compressed data ends before its end-of-stream marker"
    if isinstance(exc, zlib.error):
        return f"damaged compressed data ({exc})"
    if isinstance(exc, IsADirectoryError):
        return "is a folder, not a file"
    if isinstance(exc, OSError):
        return f"cannot read the file: {exc.strerror or exc}"
    return f"cannot read the file: {exc}"


def _starts_as_gzip(path: Path | str) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(2) == b"\x1f\x8b"
    except OSError:
        return False


_FILE_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def regular_file_problem(path: Path | str) -> str | None:
    """Why ``path`` is not a regular file to read (None when it is one). Checked with ``os.stat``
    before anything opens it: opening a FIFO would wait for a writer forever, and ``/dev/zero``
    would be read without end; a symbolic link loop is not "no such file"."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            return f"a broken symbolic link (to {os.readlink(path)!r}, which does not exist)"
        return "no such file"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop (too many levels of symbolic links), not a regular file"
        return f"cannot read the file: {exc.strerror or exc}"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _FILE_KINDS if test(mode)), "a special file")
    return f"not a regular file ({kind})"


def require_regular_file(path: Path | str) -> None:
    problem = regular_file_problem(path)
    if problem is not None:
        raise format_error(path, None, problem)


def exists_as_anything(path: Path | str) -> bool:
    """A name is there, whatever it is (a broken link too): an optional input that is present but
    not a regular file must be reported, never taken as absent."""
    return os.path.lexists(path)


def out_of_memory(path: Path | str, what: str = "the file") -> OutOfMemoryError:
    return OutOfMemoryError(f"{path}: not enough host memory to read {what}")


@contextmanager
def quiet_parse():
    """pandas warns ("invalid value encountered in cast") on some fields it then refuses; the
    refusal is reported with the line, the warning would only be noise on the user's terminal."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def open_binary(path: Path):
    """Open a possibly gzip-compressed file for reading bytes."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


# A UTF-8 byte order mark, as editors on Windows write at the start of a text file. pandas skips
# it, so every reader and scan skips it too (one rule for every text format): it is no field.
UTF8_BOM = b"\xef\xbb\xbf"


def skip_bom(handle) -> int:
    """Move a binary stream at its start past a UTF-8 byte order mark; the bytes skipped."""
    start = handle.peek(len(UTF8_BOM)) if hasattr(handle, "peek") else None
    if start is None:  # a stream that cannot peek: read, and go back where there is no mark
        start = handle.read(len(UTF8_BOM))
        if start == UTF8_BOM:
            return len(UTF8_BOM)
        handle.seek(0)
        return 0
    if start[:len(UTF8_BOM)] == UTF8_BOM:
        handle.read(len(UTF8_BOM))
        return len(UTF8_BOM)
    return 0


def open_text(path: Path):
    """Open a possibly gzip-compressed text file for line iteration (a byte order mark skipped)."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8-sig", errors="replace")
    return open(path, "r", encoding="utf-8-sig", errors="replace")


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(1-based line number, line)`` pairs; a read failure is a ``FileFormatError`` naming the
    line that could not be read."""
    number = 0
    try:
        with open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                yield number, line
    except FileFormatError:
        raise
    except READ_ERRORS as exc:
        raise format_error(path, number + 1, read_failure(exc, path)) from None


# The exact spelling of a number in a text file. Python's int() and float() also take "1_000",
# and pandas' int64 columns take "1e3" and "7." (parsed as floats, then cast): neither is allowed.
INTEGER = rb"[+-]?[0-9]+"
REAL = rb"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))"
COMMENT_TAIL = rb"[^\r\n]*"  # the rest of a comment row: up to its line end, a lone CR too
_INTEGER_TEXT = re.compile(INTEGER.decode())
_REAL_TEXT = re.compile(REAL.decode())
_SCAN_CHUNK = 1 << 24  # bytes read at a time by first_bad_line
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def is_integer_text(token: str) -> bool:
    return _INTEGER_TEXT.fullmatch(token) is not None


def is_real_text(token: str) -> bool:
    return _REAL_TEXT.fullmatch(token) is not None


# pandas' C parser splits fields at blanks and tabs only, and its integer fields may carry C
# white space (\v, \f) around the digits; str.split() also splits at \v, \f, \x1c-\x1f and \xa0,
# so a scan with it passed over the very line pandas refused ("1\f2", a line of "\f").
_FIELD_SEPARATOR = re.compile(r"[ \t]+")
_C_SPACE = " \t\n\v\f\r"
_BLANKS = " \t\r\n"  # around a line's fields


def _fields(line: str) -> list[str]:
    text = line.strip(_BLANKS)
    return _FIELD_SEPARATOR.split(text) if text else []


def _is_int(token: str) -> bool:
    return is_integer_text(token.strip(_C_SPACE))


def _bad_line_pattern(body: bytes) -> re.Pattern:
    # A line (up to LF) that is not rows separated by lone CRs, each blank or ``body`` with
    # surrounding blanks, then an optional CR: pandas and Python read a lone CR as a line end
    # too, so "1 2\r# note\r3 4" is three rows. (A comment tail in ``body`` stops at a CR.)
    row = rb"[ \t]*(?:" + body + rb")?[ \t]*"
    return re.compile(rb"^(?!" + row + rb"(?:\r" + row + rb")*\r?$).*$", re.M)


def first_bad_line(handle, body: bytes, *, first_line: int = 1,
                   suspicious: bytes | None = None) -> tuple[int, str] | None:
    """``(line number, text)`` of the first line of a binary stream that is neither blank nor a
    full match of the regular expression ``body``, or None.

    The stream is read in chunks cut at line ends and matched by ``re`` (C speed, no Python loop
    per line). ``suspicious``: bytes without which a chunk is known to be fine (the caller's fast
    parser is exact there), so such chunks are not matched at all.
    """
    pattern = _bad_line_pattern(body)
    carry, line = b"", first_line
    while True:
        block = handle.read(_SCAN_CHUNK)
        data = carry + block
        end = data.rfind(b"\n") if block else len(data)
        if end < 0:  # no line end yet: read on
            carry = data
            continue
        if suspicious is None or any(data.find(bytes([b]), 0, end) >= 0 for b in suspicious):
            match = pattern.search(data, 0, end)
            if match is not None:
                number = line + data.count(b"\n", 0, match.start())
                return number, match.group().decode("utf-8", errors="replace").strip()
        if not block:
            return None
        line += data.count(b"\n", 0, end + 1)
        carry = data[end + 1:]


def _skip_lines(handle, count: int) -> None:
    for _ in range(count):
        if not handle.readline():
            return


def first_inexact_line(path: Path, body: bytes, *, skip_lines: int = 0,
                       suspicious: bytes | None = None) -> tuple[int, str] | None:
    """:func:`first_bad_line` over a (possibly gzip-compressed) file after its first
    ``skip_lines`` lines; a read failure is a FileFormatError naming the file."""
    try:
        with open_binary(path) as handle:
            skip_bom(handle)
            _skip_lines(handle, skip_lines)
            return first_bad_line(handle, body, first_line=skip_lines + 1, suspicious=suspicious)
    except READ_ERRORS as exc:
        raise format_error(path, None, read_failure(exc, path)) from None


def integer_row(comment: str | None) -> bytes:
    """A table line: whitespace-separated integers, then an optional ``comment``-led tail."""
    row = rb"(?:" + INTEGER + rb"(?:[ \t]+" + INTEGER + rb")*)?"
    if comment is None:
        return row
    return row + rb"[ \t]*(?:" + re.escape(comment.encode()) + COMMENT_TAIL + rb")?"


def read_int_table(
    path: Path,
    *,
    min_columns: int,
    max_columns: int | None = None,
    comment: str | None = None,
    skip_lines: int = 0,
    line_check: Callable[[list[str]], str | None] | None = None,
) -> np.ndarray:
    """Read an integer table: rows of ``min_columns`` to ``max_columns`` whitespace-separated
    integers; blank lines and ``comment``-led text are ignored. Returns int64 ``(rows, columns)``.

    All rows must have the same number of columns (the first data row decides). ``line_check``
    (tokens -> problem or None) states the rules the scan reports on when the caller's
    vectorized checks fail; see :func:`locate_bad_line`.
    """
    max_columns = min_columns if max_columns is None else max_columns
    require_regular_file(path)
    try:
        with quiet_parse():
            frame = pd.read_csv(
                path,
                sep=r"\s+",
                header=None,
                comment=comment,
                skiprows=skip_lines,
                dtype=np.int64,
                engine="c",
                skip_blank_lines=True,
                compression="infer",
            )
        table = frame.to_numpy(dtype=np.int64, copy=False)
    except pd.errors.EmptyDataError:
        return np.zeros((0, min_columns), dtype=np.int64)
    except MemoryError:
        raise out_of_memory(path) from None
    except FileFormatError:
        raise
    except (ValueError, OverflowError, pd.errors.ParserError, UnicodeDecodeError, *READ_ERRORS) as exc:
        fallback = read_failure(exc, path) if isinstance(exc, READ_ERRORS) else str(exc)
        raise locate_bad_line(
            path, min_columns=min_columns, max_columns=max_columns, comment=comment,
            skip_lines=skip_lines, line_check=line_check, fallback=fallback,
        ) from None
    if not (min_columns <= table.shape[1] <= max_columns):
        raise locate_bad_line(
            path, min_columns=min_columns, max_columns=max_columns, comment=comment,
            skip_lines=skip_lines, line_check=line_check,
            fallback=f"expected {min_columns}..{max_columns} columns, found {table.shape[1]}",
        )
    # pandas takes "1e3" and "7." in an int64 column (as floats, then cast): only a line holding
    # '.', 'e' or 'E' can be such a field, so only chunks holding them are matched.
    if first_inexact_line(path, integer_row(comment), skip_lines=skip_lines, suspicious=b".eE") is not None:
        raise locate_bad_line(
            path, min_columns=min_columns, max_columns=max_columns, comment=comment,
            skip_lines=skip_lines, line_check=line_check, fallback="a field that is not an integer",
        )
    return table


def locate_bad_line(
    path: Path,
    *,
    min_columns: int,
    max_columns: int,
    comment: str | None,
    skip_lines: int = 0,
    line_check: Callable[[list[str]], str | None] | None = None,
    fallback: str,
) -> FileFormatError:
    """Scan the file for the first line that breaks the table rules; the error to raise."""
    columns: int | None = None
    try:
        for number, line in iter_lines(path):
            if number <= skip_lines:
                continue
            if comment is not None and comment in line:
                line = line[: line.index(comment)]
            tokens = _fields(line)
            if not tokens:
                continue
            if not (min_columns <= len(tokens) <= max_columns):
                return format_error(
                    path, number, f"expected {min_columns if min_columns == max_columns else f'{min_columns} to {max_columns}'} "
                    f"integers, found {len(tokens)} fields: {line.strip(_BLANKS)!r}")
            if columns is None:
                columns = len(tokens)
            elif len(tokens) != columns:
                return format_error(path, number, f"expected {columns} fields like the first data line, "
                                                  f"found {len(tokens)}: {line.strip(_BLANKS)!r}")
            bad = next((t for t in tokens if not _is_int(t)), None)
            if bad is not None:
                return format_error(path, number, f"not an integer: {bad!r}")
            if line_check is not None:
                problem = line_check(tokens)
                if problem is not None:
                    return format_error(path, number, problem)
            # after the caller's rules, which name such a value in their own terms (a vertex id)
            huge = next((t for t in tokens if not _INT64_MIN <= int(t) <= _INT64_MAX), None)
            if huge is not None:
                return format_error(path, number, f"the integer {huge} does not fit 64 bits "
                                                  f"(the table holds int64 values in [{_INT64_MIN}, {_INT64_MAX}])")
    except FileFormatError as exc:  # iter_lines: the file cannot be read past some line
        return exc
    except UnicodeDecodeError as exc:
        return format_error(path, None, read_failure(exc, path))
    return format_error(path, None, fallback)
