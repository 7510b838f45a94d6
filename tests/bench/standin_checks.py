"""The stand-in requirements of inputs.md §1.2 as reusable checks (normal and slow tests), and a
tiny stand-in gate for the tests that prepare one."""

from __future__ import annotations

import math

import numpy as np

from bench.gates import ROADNET_CA_DIAMETER, ROADNET_CA_VERTICES, Gate
from bench.generators import row_ptr_of
from bench.graphfacts import graph_facts
from bench.standins import UndirectedEdges, directed_csr_edges

#: A stand-in gate of 3,000 vertices, prepared in a tenth of a second (bench.prepare.prepare_gate,
#: once set in bench.gates.GATES under its name).
TINY_PARAMS = {"num_vertices": 3000, "num_undirected_edges": 4200, "seed": 4, "reach": 3.2, "long_keep": 0.3}
TINY = Gate("tiny", "road", ("tiny.mtx",), {"vertices": 3000, "directed_edges": 8400}, 5, "road_grid", TINY_PARAMS)


def csr(graph: UndirectedEdges):
    src, dst = directed_csr_edges(graph)
    return src, dst, row_ptr_of(src, graph.num_vertices)


def check_road_standin(graph: UndirectedEdges, *, vertices: int, directed_edges: int, reach: float) -> dict:
    n = graph.num_vertices
    src, dst, row_ptr = csr(graph)
    # simple graph: no self-loops, no duplicate pairs
    assert (graph.u != graph.v).all()
    keys = src.astype(np.int64) * n + dst
    assert np.unique(keys).size == keys.size
    assert abs(n - vertices) <= 0.01 * vertices
    assert abs(dst.size / n - directed_edges / vertices) <= 0.02 * directed_edges / vertices
    # only short, local edges
    length = np.hypot(graph.x[graph.u] - graph.x[graph.v], graph.y[graph.u] - graph.y[graph.v])
    assert length.max() <= reach + 1e-9
    facts = graph_facts(n, row_ptr, dst, source=0)
    assert facts["largest_component_share"] >= 0.95 and facts["source_in_largest_component"]
    # hop diameter within [1/2, 2] of roadNet-CA's 850 scaled with sqrt(n)
    expected = ROADNET_CA_DIAMETER * math.sqrt(n / ROADNET_CA_VERTICES)
    assert 0.5 * expected <= facts["hop_diameter_lower_bound"] <= 2 * expected, (facts, expected)
    check_locality(graph)
    return facts


def check_locality(graph: UndirectedEdges) -> None:
    """Neighbours have nearby ids: the median id gap of an edge is far below a random
    numbering's (about n / 3) and of the order of sqrt(n)."""
    n = graph.num_vertices
    gap = np.median(np.abs(graph.u.astype(np.int64) - graph.v))
    assert gap <= 2 * math.sqrt(n), gap
