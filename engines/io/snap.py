"""SNAP edge lists (``.txt``/``.txt.gz``): ``# ...`` comment lines, then ``FromNodeId ToNodeId``
pairs, 0-based, directed as listed (SNAP's road networks list both directions of every road).

The vertex count is the largest id + 1, matching the SuiteSparse copies of the SNAP graphs
(roadNet-CA: 1,971,281). Self-loops are dropped and duplicate pairs removed.
"""

from __future__ import annotations

from pathlib import Path

from .edgelist import read_edge_list
from .parsed import ParsedGraph


def read_snap(path: str | Path, *, num_vertices: int | None = None) -> ParsedGraph:
    return read_edge_list(path, one_based=False, symmetrize=False, comment="#", num_vertices=num_vertices)
