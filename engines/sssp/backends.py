"""Backend names, availability and array placement: the only place the API touches CuPy.

CuPy is imported lazily through ``engines.sssp.cuda`` so that the package imports (and the host
backend runs) on machines without CuPy or a GPU.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..errors import InvalidArgumentError, NotSupportedError
from .packing import INFINITE_DISTANCE

BACKENDS = ("host", "cuda", "auto")


_cuda = None  # engines.sssp.cuda once imported (asked several times per update)


def cuda_module():
    """``engines.sssp.cuda``, imported on first use: the host-only import path stays without it.
    Kept once imported, because an import statement costs about a microsecond even for a loaded
    module and the dispatch asks for it several times per update."""
    global _cuda
    if _cuda is None:
        from . import cuda

        _cuda = cuda
    return _cuda


def cuda_available() -> bool:
    try:
        return bool(cuda_module().is_available())
    except Exception:  # a broken CUDA install means "not available", never a crash at dispatch
        return False


def resolve_backend(backend: str) -> str:
    """"host", "cuda" or "auto" -> "host" / "cuda"; NotSupportedError for CUDA without a GPU."""
    if not isinstance(backend, str) or backend not in BACKENDS:  # `in` compares an array elementwise
        raise InvalidArgumentError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if backend == "auto":
        return "cuda" if cuda_available() else "host"
    if backend == "cuda" and not cuda_available():
        raise NotSupportedError(
            'backend="cuda" needs CuPy and a CUDA GPU, and none is usable here; use backend="host"'
        )
    return backend


def resolve_device(backend: str, current):
    """The CUDA device id of a result on ``backend`` (None on the host)."""
    if backend == "host":
        return None
    backend = resolve_backend(backend)
    return current if current is not None else cuda_module().current_device()


@contextlib.contextmanager
def engine_stream(device: int):
    """Make ``device`` and the engines' stream on it current, so that work queued inside (a copy,
    a fill) is ordered before the next engine run on that device."""
    import cupy

    with cupy.cuda.Device(device), cuda_module().stream(device):
        yield


def on_engine_stream(arr):
    """:func:`engine_stream` on the device that holds the CuPy array ``arr``."""
    return engine_stream(arr.device.id)


def is_device_array(arr) -> bool:
    return not isinstance(arr, np.ndarray) and hasattr(arr, "__cuda_array_interface__")


def move_arrays(d, p, backend: str, device):
    """Independent copies of (d, p) on ``backend`` (device-to-device, host-to-device or back)."""
    if backend == "host":
        if isinstance(d, np.ndarray):
            return d.copy(), p.copy()
        return d.get(), p.get()
    import cupy

    with engine_stream(device):
        return cupy.array(d, copy=True), cupy.array(p, copy=True)


def grow_arrays(d, p, n: int):
    """Extend a tree to n vertices with (INF, -1) (docs/algorithm.md §3.3: new vertices start
    unreachable)."""
    old = d.shape[0]
    if old >= n:
        return d, p
    if isinstance(d, np.ndarray):
        nd = np.full(n, INFINITE_DISTANCE, dtype=np.int64)
        npar = np.full(n, -1, dtype=p.dtype)
        nd[:old], npar[:old] = d, p
        return nd, npar
    import cupy

    with on_engine_stream(d):
        nd = cupy.full(n, INFINITE_DISTANCE, dtype=cupy.int64)
        npar = cupy.full(n, -1, dtype=p.dtype)
        nd[:old], npar[:old] = d, p
    return nd, npar


__all__ = ["BACKENDS", "resolve_backend", "resolve_device", "cuda_available", "cuda_module", "move_arrays",
           "grow_arrays", "is_device_array", "engine_stream", "on_engine_stream"]
