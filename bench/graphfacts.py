"""Structural facts of a directed graph: the numbers a stand-in is checked against and the
prepare table prints (inputs.md §1.2). All through SciPy's compiled graph routines."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components, shortest_path


def adjacency(num_vertices: int, row_ptr: np.ndarray, col_ind: np.ndarray) -> sp.csr_matrix:
    """The 0/1 CSR matrix of the directed graph (duplicates summed, harmless for reachability)."""
    data = np.ones(col_ind.size, dtype=np.int8)
    return sp.csr_matrix((data, np.asarray(col_ind), np.asarray(row_ptr, dtype=np.int64)),
                         shape=(num_vertices, num_vertices))


def reachable_from(matrix: sp.csr_matrix, source: int) -> np.ndarray:
    """Boolean mask of the vertices reachable from ``source`` along edge directions."""
    mask = np.zeros(matrix.shape[0], dtype=bool)
    if matrix.shape[0]:
        mask[breadth_first_order(matrix, source, directed=True, return_predecessors=False)] = True
    return mask


def hop_distances(matrix: sp.csr_matrix, source: int, *, directed: bool) -> np.ndarray:
    """Hop counts from ``source`` (float64, inf where unreachable)."""
    return shortest_path(matrix, method="D", directed=directed, unweighted=True, indices=source)


def graph_facts(num_vertices: int, row_ptr: np.ndarray, col_ind: np.ndarray, *, source: int = 0) -> dict:
    """n, m, average degree (m / n), self-loops, the largest weakly connected component's share
    and whether it holds the source, the source's directed hop eccentricity and reach, and a
    double-sweep lower bound of the undirected hop diameter."""
    n = int(num_vertices)
    m = int(col_ind.size)
    if n == 0:  # nothing to measure (a user's empty file): zeros, not an argmax of nothing
        return {"vertices": 0, "directed_edges": m, "average_degree": 0.0, "largest_component_vertices": 0,
                "largest_component_share": 0.0, "source_in_largest_component": False,
                "source_reachable_vertices": 0, "source_hop_eccentricity": 0, "hop_diameter_lower_bound": 0}
    if not 0 <= source < n:
        raise ValueError(f"source {source} is not a vertex of the graph (n = {n})")
    matrix = adjacency(n, row_ptr, col_ind)
    _, labels = connected_components(matrix, directed=True, connection="weak")
    sizes = np.bincount(labels)
    giant = int(sizes.argmax())
    hops = hop_distances(matrix, source, directed=True)
    finite = np.isfinite(hops)
    undirected = hop_distances(matrix, source, directed=False)
    reach_u = np.isfinite(undirected)
    far = int(np.argmax(np.where(reach_u, undirected, -1)))
    sweep = hop_distances(matrix, far, directed=False)
    return {
        "vertices": n,
        "directed_edges": m,
        "average_degree": m / n if n else 0.0,
        "largest_component_vertices": int(sizes[giant]),
        "largest_component_share": float(sizes[giant] / n) if n else 0.0,
        "source_in_largest_component": bool(labels[source] == giant),
        "source_reachable_vertices": int(finite.sum()),
        "source_hop_eccentricity": int(hops[finite].max()),
        "hop_diameter_lower_bound": int(sweep[np.isfinite(sweep)].max()),
    }
