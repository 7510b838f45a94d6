"""What the slowest batches of a stream are made of (issue 27's p99): for each engine, the batches
at or above the p99 time against all timed batches, by the work each update reported (push
iterations, epochs, invalidated and affected vertices, from ``sssp.update``'s Stats), by the
Python garbage collections that ran inside the timed call, and (CUDA engines) by the time the
calling thread spent off the CPU during the call.

A tail whose batches did far more work than the median batch is the workload's (a deletion high in
the tree invalidates a large subtree); a tail of ordinary batches with collections inside, or with
the thread off the CPU (preempted by another process, or blocked), is the host's. On the same
luxembourg_osm stream on H100s (1c558f8-2d6e88f), one machine's fused p99 batches did 219.5 push
iterations (the median batch 17); another's did 12.5 (the median 11) yet took 1.8 ms against
0.42, with no collection inside and the SM clock at its highest; the off-CPU time, added to tell
such a tail apart, was not recorded yet then.

``GcWatch`` counts collections through ``gc.callbacks``, which Python calls only when a
collection runs, so it adds nothing to a call without one; the time it reports is the
collections' own, measured inside them (part of what the user paid).
"""

from __future__ import annotations

import gc
import time

import numpy as np

#: The Stats fields kept per batch, in this order.
WORK_FIELDS = ("iterations", "epochs", "invalidated", "affected")
#: The tail: batches whose time is at or above this percentile of the timed batches (the stream
#: passes its own p99, so the threshold is the p99 of its summary).
TAIL_PERCENTILE = 99.0
#: The oldest generation: a collection of it walks every tracked object (the long pauses).
FULL_GENERATION = 2


class GcWatch:
    """Counts Python's garbage collections, the full ones (FULL_GENERATION) and the time inside
    them while installed (a context manager). Its attributes ``collections``, ``full`` and
    ``seconds`` are read beside the clock around a call and differenced (``since``)."""

    def __init__(self, clock=time.perf_counter):
        self._clock = clock
        self.collections = 0
        self.full = 0
        self.seconds = 0.0
        self._started = None

    def _callback(self, phase, info):
        if phase == "start":
            self._started = self._clock()
        elif phase == "stop" and self._started is not None:
            self.collections += 1
            self.full += info.get("generation") == FULL_GENERATION
            self.seconds += self._clock() - self._started
            self._started = None

    def reading(self) -> tuple[int, int, float]:
        return self.collections, self.full, self.seconds

    @staticmethod
    def since(before: tuple, after: tuple) -> tuple[int, int, float]:
        """``(collections, full collections, seconds)`` between two readings."""
        return after[0] - before[0], after[1] - before[1], after[2] - before[2]

    def __enter__(self):
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc):
        gc.callbacks.remove(self._callback)
        return False


def off_cpu_ms(wall_s: float, cpu_s: float) -> float:
    """The ms of a call that its thread spent off the CPU: its wall time less the thread's CPU time
    over it (``time.thread_time``, read just outside the wall timer, so it may exceed the wall time
    by those reads: never below 0)."""
    return max(0.0, (wall_s - cpu_s) * 1e3)


def work_of(stats) -> tuple:
    """The kept Stats fields of one update (None where an engine's Stats lacks one)."""
    return tuple(getattr(stats, name, None) for name in WORK_FIELDS)


def median_of(values):
    """The median of the values that are not None (a float), None when there are none: the
    stream reports' one rule for a median of readings some batches lack."""
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def _group(indices, times, work, gcs, clocks=None, off_cpu=None) -> dict:
    chosen = list(indices)
    out = {"batches": len(chosen), "median_ms": median_of([times[i] for i in chosen])}
    if clocks is not None:  # the GPU's SM clock after each call (bench/stream_clock.py)
        out["median_sm_mhz"] = median_of([clocks[i] for i in chosen])
    if off_cpu is not None:  # the thread off the CPU inside each call (off_cpu_ms)
        out["median_off_cpu_ms"] = median_of([off_cpu[i] for i in chosen])
        out["off_cpu_ms_per_batch"] = round(sum(off_cpu[i] for i in chosen) / len(chosen), 4) if chosen else None
    for k, name in enumerate(WORK_FIELDS):
        out[f"median_{name}"] = median_of([work[i][k] for i in chosen])
    out["with_gc"] = sum(1 for i in chosen if gcs[i][0] > 0)
    out["with_full_gc"] = sum(1 for i in chosen if gcs[i][1] > 0)
    gc_ms = sum(gcs[i][2] for i in chosen) * 1e3
    out["gc_ms"] = round(gc_ms, 3)
    out["gc_ms_per_batch"] = round(gc_ms / len(chosen), 4) if chosen else None
    return out


def tail_anatomy(times_ms, work, gcs, warmup: int, percentile: float = TAIL_PERCENTILE,
                 clocks=None, off_cpu=None) -> dict | None:
    """``{"percentile", "threshold_ms", "tail": group, "all": group}`` over the timed batches
    (after ``warmup``): the tail is every batch at or above the ``percentile`` time; a group gives
    its batch count, median time, the median of each WORK_FIELDS entry, how many batches had a
    collection (a full one) inside the call, and the collections' ms in all and per batch.
    ``gcs``: per batch ``(collections, full collections, seconds)``; ``clocks`` (optional): per batch
    the SM clock read after the call (None where unread), whose median each group then gives;
    ``off_cpu`` (optional): per batch the ms its thread spent off the CPU, whose median and mean
    each group then gives. None without timed batches."""
    times = [float(t) for t in times_ms]
    if not len(times) == len(work) == len(gcs) or any(
            extra is not None and len(extra) != len(times) for extra in (clocks, off_cpu)):
        raise ValueError("tail_anatomy: one time, one work tuple and one collection reading per batch")
    timed = list(range(warmup, len(times)))
    if not timed:
        return None
    threshold = float(np.percentile([times[i] for i in timed], percentile))
    tail = [i for i in timed if times[i] >= threshold]
    return {"percentile": percentile, "threshold_ms": threshold,
            "tail": _group(tail, times, work, gcs, clocks, off_cpu),
            "all": _group(timed, times, work, gcs, clocks, off_cpu)}


def cell(value, digits=0) -> str:
    """A table cell of the stream reports: the value with thousands separators, – for None."""
    return "–" if value is None else f"{value:,.{digits}f}"


def engine_label(engine: str, run: dict) -> str:
    """An engine's name in the stream reports' tables: with "(partial: k of N batches)" where its
    entry comes from an interrupted stream (bench/stream.py marks it), so that no table of a partial
    record reads as a whole stream's."""
    partial = run.get("partial")
    if not partial:
        return engine
    return f"{engine} (partial: {partial['completed']:,} of {partial['planned']:,} batches)"


def markdown_lines(engines: dict) -> list[str]:
    """The report's table: per engine, its tail against all its timed batches (engines without a
    tail record, from before it existed, are left out; no lines when none has one)."""
    rows = [(engine_label(engine, run), run["tail"]) for engine, run in engines.items() if run.get("tail")]
    if not rows:
        return []
    # the clock's column only where some engine read one (records from before it, the host alone)
    clocked = any(tail[label].get("median_sm_mhz") is not None for _, tail in rows for label in ("tail", "all"))
    # the off-CPU column where the record has it (records from before it do not)
    timed_cpu = any(tail[label].get("off_cpu_ms_per_batch") is not None for _, tail in rows for label in ("tail", "all"))
    lines = ["", "The slowest batches (at or above each engine's p99) against all timed batches: the work the "
             "update reported (medians) and Python's garbage collections inside the call"
             + (", the ms per batch its thread spent off the CPU (wall less CPU time: preempted or blocked)"
                if timed_cpu else "")
             + (", and the median SM clock after the call:" if clocked else ":"), "",
             "| engine | batches | median ms | iterations | epochs | invalidated | affected | with a collection "
             "(full) | collections ms per batch |" + (" off-CPU ms per batch |" if timed_cpu else "")
             + (" SM MHz |" if clocked else ""),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|" if timed_cpu else "") + ("---:|" if clocked else "")]
    for engine, tail in rows:
        for label in ("tail", "all"):
            g = tail[label]
            name = f"{engine}, p{tail['percentile']:g} tail" if label == "tail" else f"{engine}, all"
            lines.append(f"| {name} | {g['batches']:,} | {cell(g['median_ms'], 3)} | {cell(g['median_iterations'], 1)} | "
                         f"{cell(g['median_epochs'], 1)} | {cell(g['median_invalidated'], 1)} | "
                         f"{cell(g['median_affected'], 1)} | {g['with_gc']:,} ({g['with_full_gc']:,}) | "
                         f"{cell(g['gc_ms_per_batch'], 4)} |"
                         + (f" {cell(g.get('off_cpu_ms_per_batch'), 4)} |" if timed_cpu else "")
                         + (f" {cell(g.get('median_sm_mhz'))} |" if clocked else ""))
    return lines


__all__ = ["FULL_GENERATION", "GcWatch", "TAIL_PERCENTILE", "WORK_FIELDS", "cell", "engine_label", "markdown_lines",
           "median_of", "off_cpu_ms", "tail_anatomy", "work_of"]
