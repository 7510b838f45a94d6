"""Fast whitespace-separated integer tables (pandas' C parser) with exact error locations.

The fast path never loops in Python. When it fails, or when the parsed values break a rule,
a line-by-line scan of the file (only on that error path) finds the first offending line so
the ``FileFormatError`` can name it. A file that cannot be read at all (a ``.gz`` name on bytes
that are not gzip, a truncated or damaged compressed stream, no permission) is a
``FileFormatError`` too, naming the file, the line reached and what went wrong.
"""

from __future__ import annotations

import gzip
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


def read_failure(exc: BaseException) -> str:
    """Why a file could not be read, in words (for the READ_ERRORS and decoding errors)."""
    if isinstance(exc, gzip.BadGzipFile):
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


def out_of_memory(path: Path | str, what: str = "the file") -> OutOfMemoryError:
    return OutOfMemoryError(f"{path}: not enough host memory to read {what}")


@contextmanager
def quiet_parse():
    """pandas warns ("invalid value encountered in cast") on some fields it then refuses; the
    refusal is reported with the line, the warning would only be noise on the user's terminal."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def open_text(path: Path):
    """Open a possibly gzip-compressed text file for line iteration."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, "r", encoding="utf-8", errors="replace")


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
        raise format_error(path, number + 1, read_failure(exc)) from None


def _is_int(token: str) -> bool:
    try:
        int(token)
    except ValueError:
        return False
    return True


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
        fallback = read_failure(exc) if isinstance(exc, READ_ERRORS) else str(exc)
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
            tokens = line.split()
            if not tokens:
                continue
            if not (min_columns <= len(tokens) <= max_columns):
                return format_error(
                    path, number, f"expected {min_columns if min_columns == max_columns else f'{min_columns} to {max_columns}'} "
                    f"integers, found {len(tokens)} fields: {line.strip()!r}")
            if columns is None:
                columns = len(tokens)
            elif len(tokens) != columns:
                return format_error(path, number, f"expected {columns} fields like the first data line, "
                                                  f"found {len(tokens)}: {line.strip()!r}")
            bad = next((t for t in tokens if not _is_int(t)), None)
            if bad is not None:
                return format_error(path, number, f"not an integer: {bad!r}")
            if line_check is not None:
                problem = line_check(tokens)
                if problem is not None:
                    return format_error(path, number, problem)
    except FileFormatError as exc:  # iter_lines: the file cannot be read past some line
        return exc
    except UnicodeDecodeError as exc:
        return format_error(path, None, read_failure(exc))
    return format_error(path, None, fallback)
