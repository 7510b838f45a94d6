"""Graph file readers and writers.

- :func:`read_matrix_market` (``.mtx``, ``.mtx.gz``, SuiteSparse ``.tar.gz``),
- :func:`read_snap` (SNAP ``.txt``/``.txt.gz``), :func:`read_edge_list` (plain ``i j`` lists such
  as ``../shared/data/graphs/*.edges``), :func:`read_dimacs` (``.gr``/``.gr.gz``),
- :mod:`engines.io.mosp` (MOSP text CSR, batches, distances, trees: read and write),
- :func:`read_graph` picks the reader by file name (a folder is a MOSP CSR folder), or takes the
  one named by ``format=`` (:data:`FORMATS`); :func:`read_graph_cached` adds the SHA-256-keyed
  ``.npz`` cache of :mod:`engines.io.cache`.

Every reader returns a :class:`ParsedGraph` in CSR order; malformed input raises
``engines.errors.FileFormatError`` naming the file and, where it can, the line; so does a file
that cannot be read (a bad or truncated gzip stream). Vertex ids must fit 32 bits in every
format; nothing is wrapped. A UTF-8 byte order mark at the start of a text file is skipped, and a
lone CR ends a line in every format but Matrix Market (which names such line ends).
"""

from __future__ import annotations

from pathlib import Path

from . import mosp
from ._text import READ_ERRORS, format_error, read_failure, exists_as_anything, require_regular_file
from ..errors import InvalidArgumentError
from .cache import cached_parse, default_cache_dir, file_sha256, files_sha256
from .dimacs import read_dimacs
from .edgelist import read_edge_list
from .matrix_market import read_matrix_market
from .parsed import ParsedGraph, canonical_edges, symmetrized
from .snap import read_snap

# Bump when a reader's output for the same bytes changes: cached parses of older versions are
# then never read. 2: empty edge lists and DIMACS files beyond 32 bits are refused (version 1
# read them as n = 0 and as wrapped ids). 3: every numeric field is parsed exactly (version 2 read
# "1e3" as 1 in integer Matrix Market files and "a 2 3 12c34" as weight 12 in DIMACS files).
# 4: pattern Matrix Market entries are exact too (version 3 read "2 3.7" and "2 3 4" as 2 -> 3).
# 5: a lone CR ends a comment row too (version 4 let "# note\r1 7.\r" hide the inexact "7.").
READER_VERSION = 5

# format name -> reader; every reader takes the path first.
FORMATS = {
    "matrix_market": read_matrix_market,
    "snap": read_snap,
    "dimacs": read_dimacs,
    "edge_list": read_edge_list,
    "mosp": mosp.read_csr_graph,
}
MOSP_GRAPH_FILES = (mosp.ROW_PTR_FILE, mosp.COL_IND_FILE, mosp.VALUES_FILE)

_SUFFIXES = (
    ((".mtx", ".mtx.gz", ".tar.gz", ".tgz"), "matrix_market"),
    ((".txt", ".txt.gz"), "snap"),
    ((".gr", ".gr.gz"), "dimacs"),
    ((".edges", ".edges.gz"), "edge_list"),
)


def _format_by_name(path: str | Path) -> str | None:
    name = Path(path).name.lower()
    return next((format_name for suffixes, format_name in _SUFFIXES if name.endswith(suffixes)), None)


def format_of(path: str | Path, format: str | None = None) -> str:
    """The format name of a graph file: ``format`` when given (checked), ``"mosp"`` for a folder
    (whatever its name), else by file name; FileFormatError for an unknown suffix."""
    if format is not None:
        if format not in FORMATS:
            raise InvalidArgumentError(f"unknown graph format {format!r} (known: {', '.join(FORMATS)})")
        return format
    if Path(path).is_dir():
        return "mosp"
    by_name = _format_by_name(path)
    if by_name is None:
        # a name that is not there (or is a broken link, a FIFO ...) is reported as such: its
        # suffix does not matter until there is a file to read
        require_regular_file(path)
        known = ", ".join(s for suffixes, _ in _SUFFIXES for s in suffixes)
        raise format_error(path, None, f"unknown graph file type (known: {known}, or a MOSP folder); "
                                       f"name the format with format= ({', '.join(FORMATS)})")
    return by_name


def check_present(path: str | Path, format: str) -> None:
    """FileFormatError naming what is missing: the file, or for a MOSP folder the folder or the
    CSR files it lacks (a folder is read as a MOSP folder even when its name ends in ``.mtx``)."""
    path = Path(path)
    if format != "mosp":
        require_regular_file(path)
        return
    if not path.is_dir():
        raise format_error(path, None, "no such folder" if not path.exists() else
                           "is a file, not a MOSP folder (a folder holding " + ", ".join(MOSP_GRAPH_FILES) + ")")
    missing = [f for f in MOSP_GRAPH_FILES if not exists_as_anything(path / f)]
    if missing:
        named = _format_by_name(path)
        hint = (f"; its name ends like a {named} file, but it is a folder, and a folder is read as a "
                "MOSP CSR folder") if named else ""
        raise format_error(path, None, f"not a MOSP graph folder: it lacks {', '.join(missing)}{hint}")
    for name in MOSP_GRAPH_FILES:  # before hashing: a FIFO there would block the digest forever
        require_regular_file(path / name)


def reader_for(path: str | Path, format: str | None = None):
    """``(format name, reader)`` for a file (see :func:`format_of`)."""
    name = format_of(path, format)
    return name, FORMATS[name]


def read_graph(path: str | Path, *, format: str | None = None, **options) -> ParsedGraph:
    """Read a graph file with the reader its name (or ``format``) calls for; ``options`` go to
    the reader (``symmetrize``, ``one_based`` for edge lists and SNAP, ``num_vertices``)."""
    _, reader = reader_for(path, format)
    return reader(Path(path), **options)


def input_sha256(path: str | Path, format: str | None = None) -> str:
    """The SHA-256 of a graph file, or of a MOSP folder's three CSR files. What is missing, and a
    file that cannot be read (no permission), is a FileFormatError naming it, as when reading."""
    format = format_of(path, format)
    check_present(path, format)
    try:
        if format == "mosp":
            return files_sha256(path, MOSP_GRAPH_FILES)
        return file_sha256(path)
    except READ_ERRORS as exc:
        raise format_error(getattr(exc, "filename", None) or path, None, read_failure(exc, path)) from None


def read_graph_cached(path: str | Path, *, cache_dir: str | Path | None = None,
                      sha256: str | None = None, format: str | None = None,
                      options: dict | None = None) -> tuple[ParsedGraph, str]:
    """Like :func:`read_graph`, through the parsed-graph cache; returns ``(graph, sha256)``."""
    reader_name, reader = reader_for(path, format)
    path = Path(path)
    check_present(path, reader_name)
    sha256 = sha256 or input_sha256(path, reader_name)
    return cached_parse(path, reader, reader_name=reader_name, reader_version=READER_VERSION,
                        cache_dir=cache_dir, sha256=sha256, options=options)


__all__ = [
    "ParsedGraph", "canonical_edges", "symmetrized", "read_matrix_market", "read_snap", "read_edge_list",
    "read_dimacs", "read_graph", "read_graph_cached", "reader_for", "format_of", "check_present", "input_sha256",
    "mosp", "default_cache_dir", "file_sha256", "FORMATS", "READER_VERSION",
]
