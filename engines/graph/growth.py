"""The host-memory check before a batch grows the graph (algorithm.md §3.3 step 2; algorithm.md §8:
a failed host allocation is ``OutOfMemoryError`` and changes nothing).

An insertion at a vertex id near 2^31 - 1 grows the graph to about 2^31 vertices, and the host
arrays of the new size (both CSRs' offsets, every host result's distances and parents, the host
engine's workspace) run to tens of GB. With memory overcommit (Linux's default) NumPy's allocation
may "succeed" and the kernel's OOM killer ends the process once the pages are touched: no error,
a dead process. So before anything changes, a commit that grows the graph compares the bytes its
new-size host arrays take with what the machine can give, and refuses with ``OutOfMemoryError``.

Only growth pays: a batch that does not grow the graph never gets here, and a growth whose arrays
stay under :data:`CHECK_FLOOR` is not checked (``psutil.virtual_memory()`` costs tens of µs).
"""

from __future__ import annotations

from ..errors import OutOfMemoryError

#: Growths whose new-size host arrays take less than this are not checked.
CHECK_FLOOR = 256 << 20


def available_host_bytes() -> int | None:
    """The memory the machine can give now (``psutil.virtual_memory().available``); None when
    psutil is missing or cannot tell (the check is then skipped)."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        return int(psutil.virtual_memory().available)
    except Exception:  # an exotic platform psutil cannot read: no check rather than a failure
        return None


def human_bytes(count: int) -> str:
    """``count`` bytes in decimal units, one decimal: '34.4 GB'; plain bytes below 1 kB."""
    if count < 1000:
        return f"{int(count)} B"
    value = float(count)
    for unit in ("kB", "MB", "GB", "TB", "PB"):
        value /= 1000.0
        if value < 999.95 or unit == "PB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def check_host_growth(n_old: int, n_after: int, bytes_per_vertex: int, unchanged: str) -> None:
    """Raise ``OutOfMemoryError`` when growing from ``n_old`` to ``n_after`` vertices needs more host
    memory than is available: ``bytes_per_vertex`` × ``n_after`` (the arrays are allocated whole at
    the new size while the old ones are still held). ``unchanged``: what the message says stayed as
    it was. Nothing to do without growth or under :data:`CHECK_FLOOR`."""
    if n_after <= n_old or bytes_per_vertex <= 0:
        return
    needed = int(bytes_per_vertex) * (int(n_after) + 1)
    if needed < CHECK_FLOOR:
        return
    available = available_host_bytes()
    if available is None or needed <= available:
        return
    raise OutOfMemoryError(
        f"inserting vertex id {n_after - 1} would grow the graph from {n_old} to {n_after} vertices, "
        f"which needs about {human_bytes(needed)} of host memory ({bytes_per_vertex} bytes per vertex); "
        f"only {human_bytes(available)} is available. Nothing was changed: {unchanged}"
    )


__all__ = ["CHECK_FLOOR", "available_host_bytes", "check_host_growth", "human_bytes"]
