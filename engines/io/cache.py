"""Parsed-graph cache: ``.npz`` files keyed by the source file's SHA-256 and the reader version.

The cache folder is ``$SSSPAB_CACHE_DIR`` or ``<repo>/.cache`` (git-ignored). A changed file
(new digest) or a changed reader (new version) never reads a stale entry; a damaged entry (one
that does not load, or whose arrays are no consistent graph) is rebuilt. Writes go through a
temporary file and an atomic rename, so an interrupted run leaves no half-written entry behind.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import os_error_text
from .parsed import ParsedGraph

REPO_ROOT = Path(__file__).resolve().parents[2]
_CHUNK = 1 << 22


def default_cache_dir(cache_dir: str | Path | None = None) -> Path:
    """The explicit folder, else ``$SSSPAB_CACHE_DIR``, else ``<repo>/.cache``."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("SSSPAB_CACHE_DIR")
    return Path(env) if env else REPO_ROOT / ".cache"


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def files_sha256(folder: str | Path, names) -> str:
    """One digest of several files of a folder: SHA-256 over each name and its file's SHA-256
    (a MOSP graph folder is its three CSR files)."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(f"{name}\0{file_sha256(Path(folder) / name)}\n".encode())
    return digest.hexdigest()


def options_tag(options: dict | None) -> str:
    """A short, stable tag of reader options for cache entry names ("" without options)."""
    if not options:
        return ""
    text = ",".join(f"{k}={options[k]!r}" for k in sorted(options))
    return "-" + hashlib.sha256(text.encode()).hexdigest()[:12]


def save_arrays(path: Path, **arrays) -> None:
    """Atomically write an uncompressed ``.npz`` (uncompressed: loading must take seconds)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, **arrays)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a cache entry is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load_arrays(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of a cache entry, or None when it is missing or damaged."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError):
        return None


def graph_to_arrays(graph: ParsedGraph) -> dict[str, np.ndarray]:
    arrays = {"num_vertices": np.int64(graph.num_vertices), "src": graph.src, "dst": graph.dst}
    if graph.weights is not None:
        arrays["weights"] = graph.weights
    return arrays


def _is_graph(arrays: dict[str, np.ndarray]) -> bool:
    """The arrays make the graph a reader returns: an integer vertex count, int32 ids of equal
    length inside it, weights (if any) one row an edge. A cache entry that loads but is no such
    graph (tampered with, or written by other code under the same name) is damaged."""
    n, src, dst, weights = (arrays.get(k) for k in ("num_vertices", "src", "dst", "weights"))
    if n is None or src is None or dst is None or n.shape != () or n.dtype.kind not in "iu":
        return False
    if src.dtype != np.int32 or dst.dtype != np.int32 or src.ndim != 1 or src.shape != dst.shape:
        return False
    if weights is not None and (weights.ndim not in (1, 2) or weights.shape[0] != src.size):
        return False
    return src.size == 0 or (min(src.min(), dst.min()) >= 0 and max(src.max(), dst.max()) < int(n))


def graph_from_arrays(arrays: dict[str, np.ndarray]) -> ParsedGraph | None:
    """The graph of a cache entry's arrays, or None when they are no consistent graph."""
    if not _is_graph(arrays):
        return None
    return ParsedGraph(int(arrays["num_vertices"]), arrays["src"], arrays["dst"], arrays.get("weights"))


def cached_parse(
    path: str | Path,
    reader: Callable[[Path], ParsedGraph],
    *,
    reader_name: str,
    reader_version: int,
    cache_dir: str | Path | None = None,
    sha256: str | None = None,
    options: dict | None = None,
) -> tuple[ParsedGraph, str]:
    """Parse ``path`` with ``reader(path, **options)`` unless a cache entry for (its SHA-256,
    reader, version, options) exists. Returns the graph and the file's SHA-256. An entry that
    cannot be written (read-only folder, full disk) is a warning: the graph was read fine."""
    path = Path(path)
    sha256 = sha256 or file_sha256(path)
    tag = options_tag(options)
    entry = default_cache_dir(cache_dir) / "parsed" / f"{reader_name}-v{reader_version}-{sha256}{tag}.npz"
    arrays = load_arrays(entry)
    cached = None if arrays is None else graph_from_arrays(arrays)
    if cached is not None:
        return cached, sha256
    graph = reader(path, **(options or {}))
    try:
        save_arrays(entry, **graph_to_arrays(graph))
    except OSError as exc:
        # stacklevel 3: the caller of read_graph_cached, the only caller of this function
        warnings.warn(f"cannot write the parsed-graph cache entry {entry} ({os_error_text(exc)}); "
                      f"{path} was read without caching", stacklevel=3)
    return graph, sha256
