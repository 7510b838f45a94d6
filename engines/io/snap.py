"""SNAP edge lists (``.txt``/``.txt.gz``): ``# ...`` comment lines, then ``FromNodeId ToNodeId``
pairs, 0-based, directed as listed (SNAP's road networks list both directions of every road).

The vertex count is the largest id + 1, matching the SuiteSparse copies of the SNAP graphs
(roadNet-CA: 1,971,281). Self-loops are dropped and duplicate pairs removed.

SNAP's undirected networks (ego-Facebook, the collaboration and road lists of some mirrors) list
each edge once: read them with ``symmetrize=True``, which stores both directions. Read as they
are, they load as directed graphs where most vertices may be unreachable from the source.
"""

from __future__ import annotations

from pathlib import Path

from .edgelist import read_edge_list
from .parsed import ParsedGraph


def read_snap(path: str | Path, *, num_vertices: int | None = None, symmetrize: bool = False,
              one_based: bool = False) -> ParsedGraph:
    return read_edge_list(path, one_based=one_based, symmetrize=symmetrize, comment="#",
                          num_vertices=num_vertices)
