"""Mapped records (issue 27): the small records a run hands between host and device, read and
written by kernels in pinned host memory instead of by copy nodes.

A small update's GPU work is a chain of short steps: the device apply's captured graph, whose last
step brings its record (the commit's counters) down, then the fused run's graph, which takes the
control block's initial record up, runs the staging and the persistent kernel, and brings the
block down. Each copy between kernels makes the GPU switch to a copy engine and back. Pinned host
memory is in the device's address space (unified addressing: a pointer from ``cudaHostAlloc`` is
valid in kernels), so a kernel can read or write it over the bus itself: a few hundred bytes take
a warp a microsecond or two. With ``ENGINES_MAPPED_RECORDS`` on (the default):

* the device apply's last step is ``apply_record_out``, one block storing the record into its
  pinned mirror (device_apply.cu), instead of a download;
* a captured fused update reads its initial record with ``fused_control_in`` (one block) instead
  of an upload, and the last block to finish the persistent kernel stores the control block into
  the pinned record the host reads (fused.cu ``record_out``) instead of a download.

Measured before it was built, on an H100 (CUDA events around 2,300 back-to-back replays of
stand-in graphs of the same shape: six small kernels ending in the record's download, then a
one-block kernel, a 256-byte upload, a 132-block cooperative kernel and the download): 32.2 us a
pair; with the engine's kernels reading and writing pinned memory and the apply's download moved
off the engine's stream, 19.6 us (here the apply's download is replaced by a kernel instead,
which keeps it inside the captured commit). The values read and written are the same bytes;
results never depend on it.

The switch is read with an update's other switches by the fused engine (fused.run_choice, before
the commit; a captured update only: the launches from Python copy as before) and when a graph's
event buffers grow by the device apply, as its other switches are; unset is on, 0 / off copies.
On by default since its GPU record (H100, interleaved whole update per batch with
bench/update_anatomy.py --ab-env ENGINES_MAPPED_RECORDS=0,1): the
4,039-vertex graph's 1,760-change batches 0.987x, luxembourg_osm's 100-change batches 0.986x
(operators engine 0.993x), roadNet-PA's 0.984x.
"""

from __future__ import annotations

from . import switches

MAPPED_RECORDS_ENV = "ENGINES_MAPPED_RECORDS"


def enabled() -> bool:
    """``ENGINES_MAPPED_RECORDS``: whether records go through pinned host memory by kernels (on
    unless 0 / off); a bad value is an error naming it."""
    return switches.flag(MAPPED_RECORDS_ENV, default=True)


__all__ = ["MAPPED_RECORDS_ENV", "enabled"]
