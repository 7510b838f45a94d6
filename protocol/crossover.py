"""Where update() stops paying (issue 33): the crossover of a batch-size sweep.

A sweep measures, per graph, locality, engine and batch size, the engine's whole ``update()``
(side A of a cell) against ``compute()`` from scratch on the updated graph (side B), as the A/B
pairs of the protocol (docs/protocol.md §2, §3, §7). This module turns the pairs into the
**update/recompute ratio** per size (median of the per-pair ratios ``update / compute`` with the
protocol's hierarchical 95 % bootstrap interval, docs/protocol.md §7) and finds the crossover:

- the smallest measured size whose interval lies above 1 (compute() is faster there, with 95 %
  confidence) is ``first_confident_size``;
- the crossover itself is interpolated on the log scale (log ratio against log size, a straight
  line between two measured sizes) between the last size below that one whose median ratio is at
  most 1 and the next measured size, the **measured pair either side** (``below``, ``above``);
- ``status``: ``crossover`` (found between two measured sizes), ``below_range`` (compute() is
  already faster at the smallest size measured, or the median ratio is above 1 at every size up to
  the first confident one: the line crosses below the range), ``none_in_range`` (no size has its
  interval above 1: update() pays, or cannot be told from compute(), at every size measured), or
  ``no_data`` (no measured size).

Plain functions over numbers (the CPU tests feed them synthetic timings); no engine, no GPU.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

CROSSOVER = "crossover"
BELOW_RANGE = "below_range"
NONE_IN_RANGE = "none_in_range"
NO_DATA = "no_data"
STATUSES = (CROSSOVER, BELOW_RANGE, NONE_IN_RANGE, NO_DATA)


@dataclass(frozen=True)
class SizePoint:
    """One measured batch size: the update/recompute ratio (median of per-pair ratios) and its
    95 % interval, with the two sides' medians (ms) and the pair count."""

    size: int
    ratio: float
    lo: float
    hi: float
    update_ms: float | None = None
    compute_ms: float | None = None
    pairs: int = 0
    processes: int = 1
    #: side B's whole round (the batch applied, then compute()): what a user who recomputes pays
    apply_compute_ms: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def compute_faster(self) -> bool:
        """compute() faster than update() with 95 % confidence: the interval lies above 1."""
        return self.lo > 1.0


@dataclass(frozen=True)
class Crossover:
    status: str
    size: float | None = None  # interpolated on the log scale (status crossover)
    first_confident_size: int | None = None  # smallest size with the interval above 1
    below: SizePoint | None = None  # the measured size either side of the interpolated crossing
    above: SizePoint | None = None

    def as_dict(self) -> dict:
        return {"status": self.status, "size": self.size, "first_confident_size": self.first_confident_size,
                "below": None if self.below is None else self.below.as_dict(),
                "above": None if self.above is None else self.above.as_dict()}

    def describe(self, subject: str = "compute()") -> str:
        """One sentence for tables and logs (``subject``: what side B is called)."""
        if self.status == CROSSOVER:
            return (f"{subject} faster from about {self.size:,.0f} changes (between {self.below.size:,} and "
                    f"{self.above.size:,}; interval above 1 from {self.first_confident_size:,})")
        if self.status == BELOW_RANGE:
            return (f"{subject} faster already at {self.above.size:,} changes, the smallest size measured"
                    if self.first_confident_size == self.above.size else
                    f"{subject} faster below the range: the ratio is above 1 from the smallest size; "
                    f"interval above 1 from {self.first_confident_size:,}")
        if self.status == NONE_IN_RANGE:
            return "no crossover in range: update() pays (or cannot be told apart) at every size measured"
        return "no measured size"


def log_interpolate(low: SizePoint, high: SizePoint) -> float:
    """The size where the straight line through (log size, log ratio) of two points meets ratio 1;
    ``low.ratio <= 1 < high.ratio`` (else the nearer end)."""
    r0, r1 = math.log(low.ratio), math.log(high.ratio)
    s0, s1 = math.log(low.size), math.log(high.size)
    if r1 == r0:
        return float(low.size)
    t = min(1.0, max(0.0, (0.0 - r0) / (r1 - r0)))
    return float(math.exp(s0 + t * (s1 - s0)))


def find_crossover(points) -> Crossover:
    """The crossover of one (graph, locality, engine) from its measured sizes (any order; points
    without a finite positive ratio are left out)."""
    pts = sorted((p for p in points if p.ratio is not None and math.isfinite(p.ratio) and p.ratio > 0
                  and p.lo is not None and math.isfinite(p.lo)), key=lambda p: p.size)
    if not pts:
        return Crossover(NO_DATA)
    first = next((j for j, p in enumerate(pts) if p.compute_faster), None)
    if first is None:
        return Crossover(NONE_IN_RANGE, below=pts[-1])
    confident = pts[first].size
    if first == 0:
        return Crossover(BELOW_RANGE, first_confident_size=confident, above=pts[0])
    # the last size below the confident one whose median ratio is at most 1: the line crosses 1
    # between it and the next measured size
    last = next((k for k in range(first - 1, -1, -1) if pts[k].ratio <= 1.0), None)
    if last is None:
        return Crossover(BELOW_RANGE, first_confident_size=confident, above=pts[0])
    low, high = pts[last], pts[last + 1]
    return Crossover(CROSSOVER, size=log_interpolate(low, high), first_confident_size=confident,
                     below=low, above=high)


def size_point(size: int, update_ms, compute_ms, processes=None, *, resamples: int = 2000,
               seed: int = 0) -> SizePoint:
    """The point of one size from its accepted pairs: ``update_ms[i]`` and ``compute_ms[i]`` of pair
    i (same length), ``processes[i]`` its worker process (None: one process). The ratio is
    update / compute per pair, the interval the protocol's (hierarchical with several processes)."""
    from .stats import hierarchical_ratio

    u = np.asarray(update_ms, dtype=float)
    c = np.asarray(compute_ms, dtype=float)
    labels = np.zeros(u.size, dtype=np.int64) if processes is None else np.asarray(processes)
    if u.size == 0:
        return SizePoint(int(size), math.nan, math.nan, math.nan, None, None, 0, 0)
    # hierarchical_ratio(a, b) is the median of b / a: update / compute
    r = hierarchical_ratio(c, u, labels, resamples=resamples, seed=seed)
    return SizePoint(int(size), r.median, r.lo, r.hi, float(np.median(u)), float(np.median(c)), r.pairs,
                     r.processes)


__all__ = ["SizePoint", "Crossover", "find_crossover", "log_interpolate", "size_point", "STATUSES", "CROSSOVER",
           "BELOW_RANGE", "NONE_IN_RANGE", "NO_DATA"]
