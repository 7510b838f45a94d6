"""Launcher of the one-block key sort (``key_sort.cu``): how a small commit orders its event keys.

The device apply (device_apply.py) groups a batch's events by row with one sort of 64-bit keys per
side. ``"library"`` sorts both sides' keys with one CuPy sort (CUB's radix sort over all 64 bits:
for more keys than one tile, a histogram, a scan and eight one-sweep passes); ``"block"`` packs each key into
``end_bit`` = bits of a row + bits of an event (at most 31) and sorts both sides at once, one block
of ``THREADS`` threads per side, with cub::BlockRadixSort in shared memory, when a side fits a tile
(``plan``). Both give the same bytes (key_sort.cu says why); a commit that no tile fits, or whose
rows and events need more than 31 bits, uses the library's sort whatever the choice.

Measured with ncu on an H100 (bench/update_anatomy.py --random-graph 4039,176000 --batch-size
1760, the fused engine, graph launch; kernel times at ncu's base clocks): the library's sort of
2 x 1,760 keys (the reserved capacity) took about 81 µs of the commit's 198 µs of kernel time
(eight one-sweep passes of 8.8 µs, a histogram, a scan) at 16c4475, the largest single item of a
small update's apply; the 2,048-key tile here takes 9.7 µs (5fcbe7a). Whole update() per batch,
1,000 batches interleaved (update_anatomy.py --ab-env ENGINES_APPLY_KEY_SORT=library,block, H100
at 5fcbe7a): 0.855x on that graph (medians 0.367 -> 0.317 ms), 0.977x on luxembourg_osm's
100-change batches (0.395 -> 0.386 ms); hence the default.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..sssp.cuda import runtime, switches

ENGINE = "apply_key_sort"
SOURCE = str(Path(__file__).resolve().with_name("key_sort.cu"))
#: Threads of a tile's block (key_sort.cu keysort::THREADS).
THREADS = 512
#: (keys a side, kernel), smallest first (key_sort.cu).
TILES = ((2048, "key_sort_2k"), (4096, "key_sort_4k"), (8192, "key_sort_8k"))
KERNELS = tuple(kernel for _, kernel in TILES)
#: The packed keys' width: 32-bit keys whose sorted bits leave the top one free, so the padding
#: key (every bit set) orders after every real key.
MAX_END_BIT = 31
#: The sorts a commit can use (module docstring), and the one it uses unless told.
KEY_SORTS = ("library", "block")
DEFAULT_KEY_SORT = "block"
#: ``ENGINES_APPLY_KEY_SORT=library|block`` chooses, read when a graph's event buffers grow (its
#: first commit, then a larger batch), like the device apply's other switches.
KEY_SORT_ENV = "ENGINES_APPLY_KEY_SORT"


def chosen() -> str:
    """``ENGINES_APPLY_KEY_SORT`` or, unset, ``DEFAULT_KEY_SORT``; a bad value is an error naming it."""
    return switches.choice(KEY_SORT_ENV, KEY_SORTS, DEFAULT_KEY_SORT)


@dataclass(frozen=True)
class BlockSort:
    """A one-block sort of ``count`` keys a side: the tile's kernel and the packed keys' bits."""

    kernel: str
    count: int
    event_bits: int
    end_bit: int


def plan(count: int, num_rows: int) -> BlockSort | None:
    """The block sort of ``count`` keys a side whose rows are below ``num_rows``, or None where the
    library's sort must do (no keys, more than the largest tile, more than MAX_END_BIT bits).

    The event part takes the bit length of ``count`` itself, one bit more than the events below it
    need when ``count`` is a power of two: a real packed key then never has every sorted bit set,
    which is the padding's pattern (key_sort.cu)."""
    count, num_rows = int(count), int(num_rows)
    if count <= 0:
        return None
    event_bits = count.bit_length()
    end_bit = event_bits + max(num_rows - 1, 0).bit_length()
    if end_bit > MAX_END_BIT:
        return None
    for tile, kernel in TILES:
        if count <= tile:
            return BlockSort(kernel, count, event_bits, end_bit)
    return None


def load_module(device: int) -> runtime.CompiledModule:
    return runtime.get_module(ENGINE, int(device), SOURCE, KERNELS, cooperative=False)


def function(device: int, sort: BlockSort):
    """The tile's kernel on ``device`` (one instantiation serves every graph: the keys' type does
    not depend on the vertex or offset type)."""
    return load_module(device).functions(np.int32, np.int32)[sort.kernel]


def launch(fn, keys, sort: BlockSort, stream) -> None:
    """Sort ``keys`` (uint64, 2 x ``sort.count``: the out side's, then the in side's) in place on
    ``stream``: one block per side."""
    fn((2,), (THREADS,), (keys, np.int64(sort.count), np.int32(sort.event_bits), np.int32(sort.end_bit)),
       stream=stream)


__all__ = ["BlockSort", "DEFAULT_KEY_SORT", "KEY_SORTS", "KEY_SORT_ENV", "MAX_END_BIT", "THREADS", "TILES",
           "chosen", "function", "launch", "load_module", "plan"]
