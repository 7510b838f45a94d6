"""A 64-bit digest of a result's arrays, computed where the arrays live.

The per-round check (docs/protocol.md §2.4) compares each round's tree with the guard's without copying
the arrays to the host: on CUDA an elementwise mix plus a sum reduction on the device (only the
8-byte total crosses), on the host the same formula with NumPy. The formula is one definition,
so a host digest equals a device digest of the same bytes. Each element is mixed with its index
(a splitmix64 finalizer) before the wrapping sum, so swapped or shifted entries change the value.
"""

from __future__ import annotations

import numpy as np

_K_DIST = 0x9E3779B97F4A7C15
_K_PARENT = 0xC2B2AE3D27D4EB4F
_K_INDEX = 0x165667B19E3779F9
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB

_CUDA_MIX = f"""
    unsigned long long x = (unsigned long long)d * {_K_DIST}ULL
        + (unsigned long long)(unsigned int)p * {_K_PARENT}ULL
        + (unsigned long long)i * {_K_INDEX}ULL;
    x ^= x >> 30; x *= {_M1}ULL;
    x ^= x >> 27; x *= {_M2}ULL;
    x ^= x >> 31;
    h = x;
"""
_cuda_kernel = None


def _numpy_digest(distances: np.ndarray, parents: np.ndarray) -> int:
    u64 = np.uint64
    d = np.asarray(distances).astype(np.int64, copy=False).view(u64)
    p = np.asarray(parents).astype(np.int32, copy=False).view(np.uint32).astype(u64)
    i = np.arange(d.shape[0], dtype=u64)
    with np.errstate(over="ignore"):
        x = d * u64(_K_DIST) + p * u64(_K_PARENT) + i * u64(_K_INDEX)
        x ^= x >> u64(30)
        x *= u64(_M1)
        x ^= x >> u64(27)
        x *= u64(_M2)
        x ^= x >> u64(31)
        return int(np.sum(x, dtype=u64))


def _cupy_digest(distances, parents) -> int:
    import cupy  # noqa: PLC0415 (only for CUDA results)

    global _cuda_kernel
    if _cuda_kernel is None:
        _cuda_kernel = cupy.ElementwiseKernel(
            "int64 d, int32 p", "uint64 h", _CUDA_MIX, "ssspab_result_digest_mix"
        )
    mixed = _cuda_kernel(distances, parents)
    return int(mixed.sum(dtype=cupy.uint64).get())


def result_digest(distances, parents) -> int:
    """Digest of a (distances, parents) pair, NumPy or CuPy arrays."""
    if distances.shape != parents.shape:
        raise ValueError(f"distances {distances.shape} and parents {parents.shape} differ in shape")
    if type(distances).__module__.startswith("cupy"):
        return _cupy_digest(distances, parents)
    return _numpy_digest(distances, parents)


__all__ = ["result_digest"]
