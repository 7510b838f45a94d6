"""ssspab engines: the graph model, batches, and single-source shortest paths (host and CUDA)."""

# The names below are loaded on first use (PEP 562), not at import: `python -m engines.cli` imports
# this package before the command's first line runs, and that line must install the Ctrl-C handler
# (engines/interrupt.py) before NumPy and Numba take their second to load.
import importlib

_LAZY = {
    "Graph": ".graph", "GraphSnapshot": ".graph", "InEdges": ".graph",
    "Batch": ".batch", "ApplySummary": ".batch", "ApplyDelta": ".batch",
    "sssp": None, "errors": None,  # submodules
}

__all__ = ["Graph", "GraphSnapshot", "InEdges", "Batch", "ApplySummary", "ApplyDelta", "sssp", "errors"]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = _LAZY[name]
    value = importlib.import_module(f".{name}" if module is None else module, __name__)
    if module is not None:
        value = getattr(value, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
