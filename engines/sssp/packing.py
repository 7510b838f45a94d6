"""INF, the bound, the packing decision and the packed word: one place for every engine.

algorithm.md §3.1, §3.5 and §4. The CUDA sources receive these values as kernel arguments, so the
rule exists only here.
"""

from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np

from ..arguments import WEIGHT_MAX  # the largest weight a graph or batch may carry
from ..errors import InvalidArgumentError

#: ``2^61 - 1`` (MOSP's DISTANCE_INF). Engines write exactly this for unreachable vertices.
INFINITE_DISTANCE = (1 << 61) - 1
#: A distance ``>= INF_HALF`` means unreachable (integer division, algorithm.md §2).
INF_HALF = INFINITE_DISTANCE // 2
#: The largest finite output distance, ``2^60 - 2``.
OUTPUT_MAX = INF_HALF - 1
#: The INF word: all 64 bits set.
INF_WORD = (1 << 64) - 1


def parent_bits(n: int) -> int:
    """The smallest ``b >= 1`` with ``2^b - 1 >= n`` (the id ``2^b - 1`` means "no parent")."""
    b = 1
    while (1 << b) - 1 < n:
        b += 1
    return b


def max_distance(b: int) -> int:
    """The largest distance a word with ``b`` parent bits holds: ``2^(64 - b) - 2``."""
    return (INF_WORD >> b) - 1


def path_bound(max_weight: int, n: int) -> int:
    """``bound = W * max(n - 1, 1)``: every finite shortest distance is at most this
    (algorithm.md §4.2)."""
    return int(max_weight) * max(int(n) - 1, 1)


def check_size(max_weight: int, n: int, what: str = "graph") -> None:
    """The size check of algorithm.md §3.1: ``W <= output_max // max(n - 1, 1)``, else
    InvalidArgumentError."""
    limit = OUTPUT_MAX // max(int(n) - 1, 1)
    if int(max_weight) > limit:
        raise InvalidArgumentError(
            f"{what} too large for 61-bit distances: max weight {int(max_weight)} exceeds "
            f"{limit} = (2^60 - 2) // max(n - 1, 1) with n = {int(n)}"
        )


@dataclass(frozen=True)
class Packing:
    """The packing decision of D1 for one run: ``bits`` is 0 in distance-only mode."""

    packed: bool
    bits: int
    bound: int

    @property
    def no_parent(self) -> int:
        return (1 << self.bits) - 1 if self.packed else 0

    @property
    def parent_mask(self) -> int:
        return self.no_parent


def decide_packing(max_weight: int, n: int) -> Packing:
    """D1: packed iff ``bound <= max_distance(b)`` with ``b = parent_bits(n)``."""
    bound = path_bound(max_weight, n)
    b = parent_bits(n)
    if bound <= max_distance(b):
        return Packing(packed=True, bits=b, bound=bound)
    return Packing(packed=False, bits=0, bound=bound)


def default_delta(n_old: int, m_old: int, weight_sum: int) -> int:
    """The default bucket width of algorithm.md §3.5, in IEEE double, in the spec's order of
    operations."""
    if n_old <= 0:
        return 1
    m1 = max(int(m_old), 1)
    avg_w = float(int(weight_sum)) / float(m1)
    avg_deg = float(m1) / float(n_old)
    # math.trunc of a finite double is int(np.trunc(...)) without a NumPy call
    return max(1, math.trunc((32.0 * avg_w) / avg_deg))


def pack(distances: np.ndarray, parents: np.ndarray, packing: Packing) -> np.ndarray:
    """Pack (distance, parent) pairs into uint64 words (vectorized; unreachable -> INF word)."""
    d = np.asarray(distances, dtype=np.int64)
    p = np.asarray(parents).astype(np.int64)
    words = np.full(d.shape, INF_WORD, dtype=np.uint64)
    finite = d < INF_HALF
    if packing.packed:
        field = np.where(p < 0, packing.no_parent, p).astype(np.uint64)
        words[finite] = (d[finite].astype(np.uint64) << np.uint64(packing.bits)) | field[finite]
    else:
        words[finite] = d[finite].astype(np.uint64)
    return words


def unpack(words: np.ndarray, packing: Packing, vertex_dtype=np.int32):
    """Inverse of :func:`pack` in packed mode: (distances int64, parents vertex_dtype)."""
    w = np.asarray(words, dtype=np.uint64)
    inf = w == np.uint64(INF_WORD)
    b = np.uint64(packing.bits)
    d = (w >> b).astype(np.int64)
    field = (w & np.uint64(packing.no_parent)).astype(np.int64)
    p = np.where(field == packing.no_parent, -1, field)
    d[inf] = INFINITE_DISTANCE
    p[inf] = -1
    return d, p.astype(vertex_dtype)


__all__ = [
    "INFINITE_DISTANCE",
    "INF_HALF",
    "OUTPUT_MAX",
    "INF_WORD",
    "WEIGHT_MAX",
    "Packing",
    "parent_bits",
    "max_distance",
    "path_bound",
    "check_size",
    "decide_packing",
    "default_delta",
    "pack",
    "unpack",
]
