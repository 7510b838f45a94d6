"""The L2 flush before each round (docs/protocol.md §2.5, issue 32 item 2): ``--l2-flush``.

Without it, a round starts with whatever the previous round (often the other side's, in a pair)
left in the GPU's L2 cache: the restore's device copies and the other side's graph reads, and
with ABBA order each side follows itself in half its rounds. With ``--l2-flush`` every round of a
CUDA side starts after this process wrote a device buffer twice the L2's size (the size from the
device properties, ``l2CacheSize``), and waited for the write, so each side's first reads miss
alike. It runs between the restore and the round's timers (``cell.CellRun._round``), never
inside the engine or update region. A host side's round needs none: the flush is a no-op there,
and its record says so.

Each round records what was done (column ``l2_flush``: ``flushed N bytes`` or
``no-op: host side``; null with the option off).
"""

from __future__ import annotations

#: The record of a host side's round with --l2-flush: nothing to flush.
HOST_NOOP = "no-op: host side"
#: The buffer written is this many times the L2's size (a write-allocate cache keeps part of a
#: buffer of its own size; twice as much evicts every line of the sides' data).
FLUSH_FACTOR = 2

_buffer = None  # the flush buffer of this process, allocated at the first flush (cupy.ndarray)


def flush_bytes(l2_bytes: int) -> int:
    """Bytes written per flush for an L2 of ``l2_bytes`` (at least 1 MiB when the size is unknown)."""
    return max(FLUSH_FACTOR * int(l2_bytes), 1 << 20)


def is_device_side(side) -> bool:
    """Whether a round of ``side`` runs on the GPU (and so uses its L2)."""
    return bool(side.needs_cuda)


def l2_size() -> int:
    """The current device's L2 size in bytes (CUDA device properties)."""
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    return int(props["l2CacheSize"])


def device_flush() -> int:
    """Write the flush buffer once on the device and wait for it; the bytes written."""
    global _buffer
    import cupy

    if _buffer is None:
        _buffer = cupy.empty(flush_bytes(l2_size()), dtype=cupy.uint8)
    _buffer.fill(1)  # a kernel writing every byte through the L2
    cupy.cuda.Device().synchronize()  # finished before the round's timers start
    return int(_buffer.nbytes)


def flush_before_round(side) -> str:
    """Flush before a round of ``side``; what the round's record says was done."""
    if not is_device_side(side):
        return HOST_NOOP
    return f"flushed {device_flush()} bytes"


__all__ = ["HOST_NOOP", "FLUSH_FACTOR", "flush_bytes", "is_device_side", "l2_size", "device_flush",
           "flush_before_round"]
