"""The statistics of protocol.md §7: plain functions over NumPy arrays and pandas frames.

Quartiles use NumPy's default (linear interpolation between order statistics, "type 7"); the
bootstrap is SciPy's percentile bootstrap of the median of the per-pair ratios, seeded.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import scipy.stats

NOISY_SPREAD = 0.05  # interquartile range / median above this marks a region noisy
PROVISIONAL_MEDIAN_MS = 10.0  # regions faster than this want ...
PROVISIONAL_MIN_ROUNDS = 20  # ... at least this many accepted rounds
MIN_RESAMPLES = 2000


@dataclass(frozen=True)
class Summary:
    count: int
    median: float
    q1: float
    q3: float
    min: float
    max: float
    spread: float  # IQR / median
    range_spread: float  # (max - min) / median, the reference's spread
    noisy: bool

    def as_dict(self) -> dict:
        return asdict(self)


def summarize(values) -> Summary:
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, False)
    q1, median, q3 = np.percentile(x, [25, 50, 75])
    lo, hi = float(x.min()), float(x.max())
    spread = (q3 - q1) / median if median > 0 else math.inf
    range_spread = (hi - lo) / median if median > 0 else math.inf
    return Summary(
        count=int(x.size),
        median=float(median),
        q1=float(q1),
        q3=float(q3),
        min=lo,
        max=hi,
        spread=float(spread),
        range_spread=float(range_spread),
        noisy=bool(spread > NOISY_SPREAD),
    )


def ratio_of_medians(a, b) -> float:
    """median(B) / median(A)."""
    return float(np.median(np.asarray(b, dtype=np.float64)) / np.median(np.asarray(a, dtype=np.float64)))


@dataclass(frozen=True)
class PairedRatio:
    median: float  # median of the per-pair ratios B/A
    lo: float  # 95 % bootstrap interval
    hi: float
    pairs: int
    resamples: int
    seed: int

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def contains_one(self) -> bool:
        return self.lo <= 1.0 <= self.hi

    @property
    def relative_half_width(self) -> float:
        return (self.hi - self.lo) / 2.0 / self.median if self.median > 0 else math.inf


def paired_ratio(a, b, *, resamples: int = MIN_RESAMPLES, seed: int = 0) -> PairedRatio:
    """Median of the per-pair ratios b[i]/a[i] with a seeded 95 % percentile bootstrap interval."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.size} and {b.size}")
    if resamples < MIN_RESAMPLES:
        raise ValueError(f"at least {MIN_RESAMPLES} bootstrap resamples, got {resamples}")
    if a.size == 0:
        return PairedRatio(math.nan, math.nan, math.nan, 0, resamples, seed)
    ratios = b / a
    median = float(np.median(ratios))
    if a.size == 1 or np.all(ratios == ratios[0]):
        # a degenerate sample: every resample has the same median
        return PairedRatio(median, median, median, int(a.size), resamples, seed)
    result = scipy.stats.bootstrap(
        (ratios,),
        np.median,
        n_resamples=resamples,
        confidence_level=0.95,
        method="percentile",
        vectorized=True,
        axis=0,
        **_rng_argument(seed),
    )
    ci = result.confidence_interval
    return PairedRatio(median, float(ci.low), float(ci.high), int(a.size), resamples, seed)


def _rng_argument(seed: int) -> dict:
    # SciPy >= 1.15 spells the generator ``rng``; older releases ``random_state``.
    import inspect

    params = inspect.signature(scipy.stats.bootstrap).parameters
    key = "rng" if "rng" in params else "random_state"
    return {key: np.random.default_rng(seed)}


def verdict(ratio: PairedRatio) -> str:
    """``B slower by x % [lo, hi]``, ``B faster by x % [lo, hi]`` or ``no difference detected``."""
    if ratio.pairs == 0 or math.isnan(ratio.median):
        return "not measured"
    if ratio.contains_one:
        return "no difference detected"
    if ratio.lo > 1.0:
        return (
            f"B slower by {100 * (ratio.median - 1):.1f} % "
            f"[{100 * (ratio.lo - 1):.1f}, {100 * (ratio.hi - 1):.1f}]"
        )
    return (
        f"B faster by {100 * (1 - ratio.median):.1f} % "
        f"[{100 * (1 - ratio.hi):.1f}, {100 * (1 - ratio.lo):.1f}]"
    )


def provisional(median_ms: float, accepted: int) -> bool:
    """A region under 10 ms with fewer than 20 accepted rounds is provisional."""
    return bool(median_ms < PROVISIONAL_MEDIAN_MS and accepted < PROVISIONAL_MIN_ROUNDS)


def round_trip_cost_ms(median_a: float, median_b: float, syncs_a: float, syncs_b: float) -> float | None:
    """(median B - median A) / (median syncs B - median syncs A): the cost of one host round trip."""
    diff = syncs_b - syncs_a
    if diff == 0 or any(map(math.isnan, (median_a, median_b, syncs_a, syncs_b))):
        return None
    return (median_b - median_a) / diff


__all__ = [
    "NOISY_SPREAD",
    "PROVISIONAL_MEDIAN_MS",
    "PROVISIONAL_MIN_ROUNDS",
    "Summary",
    "summarize",
    "ratio_of_medians",
    "PairedRatio",
    "paired_ratio",
    "verdict",
    "provisional",
    "round_trip_cost_ms",
]
