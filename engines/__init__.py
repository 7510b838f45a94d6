"""ssspab engines: the graph model, batches, and single-source shortest paths (host and CUDA)."""

from . import errors
from .batch import ApplyDelta, ApplySummary, Batch
from .graph import Graph, GraphSnapshot, InEdges
from . import sssp

__all__ = ["Graph", "GraphSnapshot", "InEdges", "Batch", "ApplySummary", "ApplyDelta", "sssp", "errors"]
