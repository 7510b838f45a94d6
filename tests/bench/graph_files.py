"""One small undirected graph written in every format ``--graph-file`` reads (helpers for the
bring-your-own-graph tests): each file describes the same directed graph once read with the
options of ``FORMATS[name][1]``, so every format must give the same CSR, weights and batches."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import numpy as np

from bench.generators import both_directions, row_ptr_of
from engines.io import mosp

N = 150


def undirected_edges(seed: int = 11, n: int = N, m: int = 420) -> np.ndarray:
    """Distinct undirected pairs (u < v), 0-based, a connected path through all vertices first."""
    rng = np.random.default_rng(seed)
    order = np.arange(n)
    pairs = {(int(a), int(b)) for a, b in zip(order[:-1], order[1:])}
    while len(pairs) < m:
        u, v = (int(x) for x in rng.integers(0, n, 2))
        if u != v:
            pairs.add((min(u, v), max(u, v)))
    return np.array(sorted(pairs), dtype=np.int64)


def directed_csr(edges: np.ndarray, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    """Both directions, sorted by (src, dst): the CSR every format must read into."""
    src, dst = both_directions(edges[:, 0], edges[:, 1])
    return row_ptr_of(src, n), dst[np.lexsort((dst, src))]


def _write_edges(folder: Path, edges) -> Path:
    path = folder / "small.edges"
    path.write_text("".join(f"{u + 1} {v + 1}\n" for u, v in edges))
    return path


def _write_snap_once(folder: Path, edges) -> Path:
    path = folder / "small-undirected.txt"
    path.write_text("# Undirected graph: each edge once\n# FromNodeId\tToNodeId\n"
                    + "".join(f"{u}\t{v}\n" for u, v in edges))
    return path


def _write_snap_both(folder: Path, edges) -> Path:
    path = folder / "small-both.txt.gz"
    text = "# both directions\n" + "".join(f"{u}\t{v}\n{v}\t{u}\n" for u, v in edges)
    path.write_bytes(gzip.compress(text.encode()))
    return path


def _mtx_text(edges, n: int = N) -> str:
    return (f"%%MatrixMarket matrix coordinate pattern symmetric\n% lower triangle\n{n} {n} {len(edges)}\n"
            + "".join(f"{v + 1} {u + 1}\n" for u, v in edges))


def _write_mtx(folder: Path, edges) -> Path:
    path = folder / "small.mtx"
    path.write_text(_mtx_text(edges))
    return path


def _write_mtx_gz(folder: Path, edges) -> Path:
    path = folder / "small.mtx.gz"
    path.write_bytes(gzip.compress(_mtx_text(edges).encode()))
    return path


def _write_tarball(folder: Path, edges) -> Path:
    path = folder / "small.tar.gz"
    data = _mtx_text(edges).encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("small/small.mtx")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def dimacs_weight(u, v):
    return 1 + (7 * u + 3 * v) % 50


def _write_dimacs(folder: Path, edges, n: int = N) -> Path:
    path = folder / "small.gr"
    arcs = [(u, v) for u, v in edges] + [(v, u) for u, v in edges]
    path.write_text(f"c a small graph\np sp {n} {len(arcs)}\n"
                    + "".join(f"a {u + 1} {v + 1} {dimacs_weight(u, v)}\n" for u, v in arcs))
    return path


def mosp_weights(row_ptr, col_ind) -> np.ndarray:
    m = col_ind.size
    return np.stack([np.arange(m) % 9 + 1, np.arange(m) % 5 + 2], axis=1)


def _write_mosp(folder: Path, edges) -> Path:
    path = folder / "small-mosp"
    row_ptr, col_ind = directed_csr(edges)
    mosp.write_csr(path, row_ptr, col_ind, mosp_weights(row_ptr, col_ind))
    return path


# name -> (writer, extra --graph-file options, format recorded)
FORMATS = {
    "edge_list": (_write_edges, [], "edge_list"),
    "snap_undirected": (_write_snap_once, ["--symmetrize"], "snap"),
    "snap_both_gz": (_write_snap_both, [], "snap"),
    "matrix_market": (_write_mtx, [], "matrix_market"),
    "matrix_market_gz": (_write_mtx_gz, [], "matrix_market"),
    "suitesparse_tarball": (_write_tarball, [], "matrix_market"),
    "dimacs": (_write_dimacs, [], "dimacs"),
    "mosp": (_write_mosp, [], "mosp"),
}


def write_format(name: str, folder: Path, edges=None) -> tuple[Path, list[str], str]:
    writer, options, fmt = FORMATS[name]
    folder.mkdir(parents=True, exist_ok=True)
    return writer(folder, undirected_edges() if edges is None else edges), list(options), fmt


def connected_edge_list(folder: Path, name: str, n: int, m: int, seed: int) -> Path:
    """``folder/name``: a connected undirected graph of ``n`` vertices (a path through all, then
    random pairs up to ``m`` edges) as a 1-based edge list, one edge per line (the sweep's tests)."""
    rng = np.random.default_rng(seed)
    pairs = {(i, i + 1) for i in range(n - 1)}
    while len(pairs) < m:
        u, v = (int(x) for x in rng.integers(0, n, 2))
        if u != v:
            pairs.add((min(u, v), max(u, v)))
    path = folder / name
    path.write_text("".join(f"{u + 1} {v + 1}\n" for u, v in sorted(pairs)))
    return path
