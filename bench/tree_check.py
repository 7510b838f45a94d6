"""The initial trees of a user's graph checked before anything is measured on them.

A graph nobody on the project has seen gets two references for every objective, below the size
limit the runner uses for its own initial-tree check (``protocol.runner.INITIAL_TREE_CHECK_LIMIT``):

- the host reference: where the trees were computed on a GPU, ``compute(backend="host")`` must
  give the same distances and parents byte for byte (on the host they are its own output);
- SciPy's Dijkstra, an independent implementation: the same distances (unreachable = infinite).
  Parents are not compared with SciPy: its ties fall differently from the canonical lowest-id tree.

A difference raises :class:`TreeCheckError` naming the objective and the first differing vertex.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from engines.sssp import INFINITE_DISTANCE, Options, compute

from .weights import initial_trees_backend

# float64 holds every integer distance below 2^53 exactly; beyond it SciPy's sums round.
_EXACT_LIMIT = 2**53


class TreeCheckError(Exception):
    """An initial tree differs from a reference: a wrong answer, not a bad input."""


def check_limit() -> int:
    from protocol.runner import INITIAL_TREE_CHECK_LIMIT

    return INITIAL_TREE_CHECK_LIMIT


def _first_difference(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.flatnonzero(a != b)[0])


def scipy_distances(graph, objective: int, source: int) -> np.ndarray:
    """Dijkstra distances (float64, inf where unreachable) over the lightest of parallel edges."""
    n = graph.num_vertices
    src = np.asarray(graph.edge_sources(), dtype=np.int64)
    dst = np.asarray(graph.col_ind, dtype=np.int64)
    w = np.asarray(graph.weight_column(objective), dtype=np.float64)
    order = np.lexsort((w, dst, src))  # per (src, dst) pair, the lightest first
    src, dst, w = src[order], dst[order], w[order]
    first = np.ones(src.size, dtype=bool)
    first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    matrix = sp.csr_matrix((w[first], (src[first], dst[first])), shape=(n, n))
    return dijkstra(matrix, directed=True, indices=source)


def check_initial_trees(graph, trees, source: int) -> dict:
    """Check ``trees`` (``[(distances, parents)]`` per objective) of ``graph``; the facts of the
    check for the records, or :class:`TreeCheckError`."""
    n = graph.num_vertices
    limit = check_limit()
    if n > limit:
        return {"checked": False, "reason": f"{n:,} vertices, above the check limit {limit:,}"}
    on_device = initial_trees_backend() != "host"
    references = (["host compute()"] if on_device else []) + ["scipy dijkstra (distances)"]
    for k, (distances, parents) in enumerate(trees):
        distances = np.asarray(distances, dtype=np.int64)
        if on_device:
            host_d, host_p = compute(graph, source, backend="host", options=Options(objective=k)).to_numpy()
            for name, mine, ref in (("distance", distances, host_d), ("parent", np.asarray(parents), host_p)):
                if not np.array_equal(mine, np.asarray(ref)):
                    v = _first_difference(mine, np.asarray(ref))
                    raise TreeCheckError(f"objective {k}: the initial tree's {name} of vertex {v} is {mine[v]}, "
                                         f"the host reference says {ref[v]}")
        theirs = scipy_distances(graph, k, source)
        mine = np.where(distances == INFINITE_DISTANCE, np.inf, distances.astype(np.float64))
        finite = np.isfinite(theirs)
        if finite.any() and theirs[finite].max() >= _EXACT_LIMIT:
            same = np.isclose(mine, theirs, rtol=1e-12, atol=0) | (np.isinf(mine) & np.isinf(theirs))
        else:
            same = mine == theirs
        if not same.all():
            v = int(np.flatnonzero(~same)[0])
            raise TreeCheckError(f"objective {k}: the initial distance of vertex {v} is {distances[v]}, "
                                 f"SciPy's Dijkstra says {theirs[v]}")
    return {"checked": True, "references": references, "objectives": len(trees), "result": "equal"}


__all__ = ["TreeCheckError", "check_initial_trees", "scipy_distances"]
