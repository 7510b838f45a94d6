"""Single-source shortest paths on a dynamic graph: compute() from scratch and update() after a batch.

Backends: ``"host"`` (the NumPy reference, the oracle of the CUDA engines) and ``"cuda"`` (the fused
persistent cooperative kernel, or the operators engine where cooperative launch is missing). All
return byte-identical trees (algorithm.md).
"""

from .api import compute, update
from .packing import INFINITE_DISTANCE
from .options import Options
from .result import Result, Stats

__all__ = ["compute", "update", "Result", "Options", "Stats", "INFINITE_DISTANCE"]
