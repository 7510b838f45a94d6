"""Edge weights, the source and the initial trees of a gate (inputs.md §2).

K = 3 objectives; every directed edge draws its own K weights uniform in [1, 100] (the two
directions of an undirected edge draw independently) from ``numpy.random.default_rng(12345)``,
in the graph's CSR edge order: ``rng.integers(1, 101, size=(m, 3))``. The source is vertex 0;
the initial tree of objective k is ``engines.sssp.compute(graph, 0, objective=k)`` on the host
(the canonical lowest-id tree).
"""

from __future__ import annotations

import numpy as np

NUM_OBJECTIVES = 3
WEIGHT_SEED = 12345
WEIGHT_LOW = 1
WEIGHT_HIGH = 100
SOURCE = 0

WEIGHT_PARAMS = {"seed": WEIGHT_SEED, "num_objectives": NUM_OBJECTIVES, "low": WEIGHT_LOW, "high": WEIGHT_HIGH}


def describe_weights(params: dict = WEIGHT_PARAMS) -> str:
    """The drawn weights in words, from their parameters: "K = 3 columns uniform in [1, 100], seed 12345"."""
    return (f"K = {params['num_objectives']} columns uniform in [{params['low']}, {params['high']}], "
            f"seed {params['seed']}")


def draw_weights(num_edges: int, *, num_objectives: int = NUM_OBJECTIVES, seed: int = WEIGHT_SEED) -> np.ndarray:
    """``(m, K)`` int32 weights, uniform in [1, 100], in edge order."""
    rng = np.random.default_rng(seed)
    return rng.integers(WEIGHT_LOW, WEIGHT_HIGH + 1, size=(int(num_edges), num_objectives)).astype(np.int32)


def build_graph(row_ptr: np.ndarray, col_ind: np.ndarray, weights: np.ndarray | None = None):
    """An ``engines.Graph`` with the gate weights (drawn here unless given)."""
    from engines import Graph

    if weights is None:
        weights = draw_weights(col_ind.size)
    return Graph.from_csr(row_ptr, col_ind, weights)


def initial_trees_backend() -> str:
    """Where :func:`initial_trees` computes: "cuda" where a GPU is usable, else "host"."""
    from engines.sssp import cuda

    return "cuda" if cuda.is_available() else "host"


def initial_trees(graph, *, source: int = SOURCE, backend: str = "auto") -> list[tuple[np.ndarray, np.ndarray]]:
    """``(distances int64, parents int32)`` per objective, by compute(): on the GPU where one is
    usable (the engines are byte-identical, and the host reference takes minutes on road_usa),
    else the host reference."""
    from engines.sssp import Options, compute

    trees = []
    for k in range(graph.num_weights):
        result = compute(graph, source, backend=backend, options=Options(objective=k))
        distances, parents = result.to_numpy()
        trees.append((np.asarray(distances, dtype=np.int64), np.asarray(parents, dtype=np.int32)))
    return trees
