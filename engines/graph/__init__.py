"""The graph and its storage, in one package: the host CSR state and its applier, the device copy
and its applier.

- ``graph``: :class:`Graph`, the directed CSR graph with K weight columns; its snapshots and commits.
  Host- or device-resident (the module docstring says how each applies a batch).
- ``host_apply``: the host applier (NumPy and Numba), and the scalars of algorithm.md §3.5.
- ``device_graph``: the device-resident arrays of a graph (two buffer sets, snapshots).
- ``device_apply`` (with ``device_apply.cu``): the device applier, enqueued without waiting.

The two appliers produce the same state byte for byte (``graph``'s docstring gives the in-CSR
order both follow). The device modules need CuPy and are imported only when a graph goes to a
device; importing this package never loads CuPy.
"""

from .graph import OFFSET32_MAX, Commit, Graph, GraphSnapshot, InEdges, check_num_vertices

__all__ = ["OFFSET32_MAX", "Commit", "Graph", "GraphSnapshot", "InEdges", "check_num_vertices"]
