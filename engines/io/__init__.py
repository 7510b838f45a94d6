"""Graph file readers and writers.

- :func:`read_matrix_market` (``.mtx``, ``.mtx.gz``, SuiteSparse ``.tar.gz``),
- :func:`read_snap` (SNAP ``.txt``/``.txt.gz``), :func:`read_edge_list` (plain ``i j`` lists such
  as ``../shared/data/graphs/*.edges``), :func:`read_dimacs` (``.gr``/``.gr.gz``),
- :mod:`engines.io.mosp` (MOSP text CSR, batches, distances, trees: read and write),
- :func:`read_graph` picks the reader by file name; :func:`read_graph_cached` adds the
  SHA-256-keyed ``.npz`` cache of :mod:`engines.io.cache`.

Every reader returns a :class:`ParsedGraph` in CSR order; malformed input raises
``engines.errors.FileFormatError`` naming the file and, where it can, the line.
"""

from __future__ import annotations

from pathlib import Path

from . import mosp
from ._text import format_error
from .cache import cached_parse, default_cache_dir, file_sha256
from .dimacs import read_dimacs
from .edgelist import read_edge_list
from .matrix_market import read_matrix_market
from .parsed import ParsedGraph, canonical_edges
from .snap import read_snap

# Bump when a reader's output for the same bytes changes: cached parses of older versions are
# then never read.
READER_VERSION = 1

_SUFFIXES = (
    ((".mtx", ".mtx.gz", ".tar.gz", ".tgz"), "matrix_market", read_matrix_market),
    ((".txt", ".txt.gz"), "snap", read_snap),
    ((".gr", ".gr.gz"), "dimacs", read_dimacs),
    ((".edges", ".edges.gz"), "edge_list", read_edge_list),
)


def reader_for(path: str | Path):
    """``(reader name, reader)`` for a file name; FileFormatError for an unknown suffix."""
    name = Path(path).name.lower()
    for suffixes, reader_name, reader in _SUFFIXES:
        if name.endswith(suffixes):
            return reader_name, reader
    known = ", ".join(s for suffixes, _, _ in _SUFFIXES for s in suffixes)
    raise format_error(path, None, f"unknown graph file type (known: {known})")


def read_graph(path: str | Path) -> ParsedGraph:
    _, reader = reader_for(path)
    return reader(Path(path))


def read_graph_cached(path: str | Path, *, cache_dir: str | Path | None = None,
                      sha256: str | None = None) -> tuple[ParsedGraph, str]:
    """Like :func:`read_graph`, through the parsed-graph cache; returns ``(graph, sha256)``."""
    reader_name, reader = reader_for(path)
    if not Path(path).is_file():
        raise format_error(path, None, "no such file")
    return cached_parse(path, reader, reader_name=reader_name, reader_version=READER_VERSION,
                        cache_dir=cache_dir, sha256=sha256)


__all__ = [
    "ParsedGraph", "canonical_edges", "read_matrix_market", "read_snap", "read_edge_list",
    "read_dimacs", "read_graph", "read_graph_cached", "reader_for", "mosp", "default_cache_dir",
    "file_sha256", "READER_VERSION",
]
