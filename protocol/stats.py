"""The statistics of docs/protocol.md §7: plain functions over NumPy arrays and pandas frames.

Quartiles use NumPy's default (linear interpolation between order statistics, "type 7"); the
bootstrap is SciPy's percentile bootstrap of the median of the per-pair ratios, seeded. With pairs
from several worker processes the bootstrap is hierarchical (:func:`hierarchical_ratio`):
processes are resampled first, then pairs within each chosen process, so that the interval
carries the between-process spread a single process cannot see (docs/protocol.md §2, §7).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np
import scipy.stats

NOISY_SPREAD = 0.05  # interquartile range / median above this marks a region noisy
PROVISIONAL_MEDIAN_MS = 10.0  # regions faster than this want ...
PROVISIONAL_MIN_ROUNDS = 20  # ... at least this many accepted rounds
MIN_RESAMPLES = 2000
#: paired_ratio hands SciPy's bootstrap this many resampled values at most per batch (``batch=``):
#: about 2 MB of indices and 2 MB of values, whatever the resample count, where all 2,000
#: resamples of 10,000 pairs at once held about 160 MB of each. The resamples are the same: SciPy
#: draws each batch's indices from the one generator in turn, so the numbers do not change.
BOOTSTRAP_BATCH_VALUES = 250_000


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
    processes: int = 1  # worker processes the pairs came from (1: the plain paired bootstrap)
    #: pairs left out because both sides timed 0 ms (:func:`timed_pairs`): their ratio is 0 / 0
    timeless_pairs: int = 0

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def contains_one(self) -> bool:
        return self.lo <= 1.0 <= self.hi

    @property
    def relative_half_width(self) -> float:
        return (self.hi - self.lo) / 2.0 / self.median if self.median > 0 else math.inf


def timed_pairs(a, b, *others):
    """The pairs whose ratio b[i]/a[i] says something, and how many were left out: a pair whose
    sides both timed 0 ms (below the clock's resolution) has the ratio 0 / 0, a NaN that NumPy's
    median spreads to the whole cell, which the verdict then read as "not measured" without a
    word. Such a pair says only that both sides were too quick to time, so it is left out of the
    ratio and counted (``PairedRatio.timeless_pairs``, named by :func:`verdict` when no pair is
    left). ``others``: arrays aligned with the pairs (process labels), filtered alike."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.size} and {b.size}")
    keep = ~((a == 0) & (b == 0))
    left_out = int(a.size - np.count_nonzero(keep))
    if not left_out:
        return (a, b, *others, 0)
    return (a[keep], b[keep], *(np.asarray(o)[keep] for o in others), left_out)


def paired_ratio(a, b, *, resamples: int = MIN_RESAMPLES, seed: int = 0) -> PairedRatio:
    """Median of the per-pair ratios b[i]/a[i] with a seeded 95 % percentile bootstrap interval
    (pairs timed 0 ms on both sides left out and counted: :func:`timed_pairs`)."""
    a, b, timeless = timed_pairs(a, b)
    if resamples < MIN_RESAMPLES:
        raise ValueError(f"at least {MIN_RESAMPLES} bootstrap resamples, got {resamples}")
    return replace(_paired_ratio(a, b, resamples=resamples, seed=seed), timeless_pairs=timeless)


def _paired_ratio(a: np.ndarray, b: np.ndarray, *, resamples: int, seed: int) -> PairedRatio:
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
        batch=bootstrap_batch(ratios.size),
        confidence_level=0.95,
        method="percentile",
        vectorized=True,
        axis=0,
        **_rng_argument(seed),
    )
    ci = result.confidence_interval
    return PairedRatio(median, float(ci.low), float(ci.high), int(a.size), resamples, seed)


def bootstrap_batch(pairs: int) -> int:
    """Resamples per SciPy bootstrap batch for ``pairs`` pairs: BOOTSTRAP_BATCH_VALUES values at
    most, one resample at least."""
    return max(1, BOOTSTRAP_BATCH_VALUES // max(1, pairs))


def hierarchical_ratio(a, b, processes, *, resamples: int = MIN_RESAMPLES, seed: int = 0) -> PairedRatio:
    """Median of the per-pair ratios b[i]/a[i] with a seeded two-level 95 % percentile bootstrap.

    ``processes[i]`` names the worker process of pair i. Each resample draws as many processes as
    there are, with replacement, then from each drawn process as many of its pairs as it has, with
    replacement, and takes the median of the pooled ratios. With pairs of one process this is
    :func:`paired_ratio` exactly (the same SciPy bootstrap, the same numbers).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    labels = np.asarray(processes)
    if a.shape != b.shape or labels.shape != a.shape:
        raise ValueError(f"paired samples differ in length: {a.size}, {b.size} and {labels.size} process labels")
    if resamples < MIN_RESAMPLES:
        raise ValueError(f"at least {MIN_RESAMPLES} bootstrap resamples, got {resamples}")
    a, b, labels, timeless = timed_pairs(a, b, labels)
    _, codes = np.unique(labels, return_inverse=True)
    count = int(codes.max()) + 1 if codes.size else 0
    if count <= 1:  # the plain paired bootstrap, on the pairs already filtered
        return replace(_paired_ratio(a, b, resamples=resamples, seed=seed), timeless_pairs=timeless)
    ratios = b / a
    groups = [ratios[codes == g] for g in range(count)]
    medians = hierarchical_medians(groups, resamples=resamples, rng=np.random.default_rng(seed))
    lo, hi = percentile_interval(medians)
    return PairedRatio(float(np.median(ratios)), float(lo), float(hi), int(a.size), resamples, seed,
                       processes=count, timeless_pairs=timeless)


def percentile_interval(values) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of bootstrap values, as NumPy's default (linear) percentile
    gives them. An infinite value (a pair whose A time is 0 ms has an infinite ratio) is a bound
    of its own: NumPy interpolates next to one as ``inf - inf``, a NaN that the verdict read as a
    difference ("B faster by 0.0 % [nan, 0.0]"); here a percentile reached from an infinity is that
    infinity, as SciPy's percentile bootstrap (:func:`paired_ratio`) gives it."""
    x = np.asarray(values, dtype=np.float64)
    if np.isfinite(x).all() or np.isnan(x).any():
        lo, hi = np.percentile(x, [2.5, 97.5])
        return float(lo), float(hi)
    x = np.sort(x)
    bounds = []
    for q in (0.025, 0.975):
        at = q * (x.size - 1)
        below, above = x[int(math.floor(at))], x[int(math.ceil(at))]
        fraction = at - math.floor(at)
        if below == above or fraction == 0:
            bounds.append(float(below))
        elif math.isinf(below) or math.isinf(above):
            bounds.append(float(below if math.isinf(below) else above))
        else:
            bounds.append(float(np.percentile(x, 100 * q)))
    return bounds[0], bounds[1]


# resamples are drawn in chunks of at most this many values, so memory stays bounded for long cells
_CHUNK_VALUES = 4_000_000


def hierarchical_medians(groups, *, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The bootstrap distribution of :func:`hierarchical_ratio`: one pooled median per resample.

    ``groups``: one array of pair ratios per process. Vectorised: the chosen processes' draws are
    laid out in a (resamples, processes, largest process) block whose unused slots sort last.
    """
    sizes = np.array([len(g) for g in groups], dtype=np.int64)
    if sizes.size == 0 or sizes.min() < 1:
        raise ValueError("every process needs at least one pair")
    count, widest = sizes.size, int(sizes.max())
    padded = np.full((count, widest), np.inf)
    for i, g in enumerate(groups):
        padded[i, : len(g)] = g
    step = max(1, _CHUNK_VALUES // (count * widest))
    out = np.empty(resamples)
    for start in range(0, resamples, step):
        r = min(step, resamples - start)
        chosen = rng.integers(0, count, size=(r, count))  # processes, with replacement
        n = sizes[chosen]  # pairs of each chosen process
        # pairs within each chosen process, with replacement; slots past its size stay unused
        draws = rng.integers(0, n[..., None], size=(r, count, widest))
        values = padded[chosen[..., None], draws]
        values[np.arange(widest) >= n[..., None]] = np.inf
        values = np.sort(values.reshape(r, count * widest), axis=1)
        total = n.sum(axis=1)
        low = np.take_along_axis(values, ((total - 1) // 2)[:, None], axis=1)[:, 0]
        high = np.take_along_axis(values, (total // 2)[:, None], axis=1)[:, 0]
        out[start : start + r] = 0.5 * (low + high)
    return out


@dataclass(frozen=True)
class ProcessSpread:
    """How the per-pair ratios of a cell spread within and between its worker processes."""

    processes: int
    pairs: list  # accepted pairs per process
    medians: list  # median pair ratio per process
    within: float  # median over processes of (IQR / median) of the process's pair ratios
    between: float | None  # (max - min) / median of the per-process medians; None for one process

    def as_dict(self) -> dict:
        return asdict(self)


def process_spread(a, b, processes) -> ProcessSpread:
    """Within- and between-process spread of the pair ratios b[i]/a[i] (``processes[i]``: the
    process of pair i, in order of first appearance)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a, b, labels, _ = timed_pairs(a, b, np.asarray(processes))
    if a.size == 0:
        return ProcessSpread(0, [], [], math.nan, None)
    ratios = b / a
    _, first, codes = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(first)  # processes in the order the pairs list them
    groups = [ratios[codes == g] for g in order]
    medians = [float(np.median(g)) for g in groups]
    within = float(np.median([summarize(g).spread for g in groups]))
    between = None
    if len(groups) > 1:
        centre = float(np.median(medians))
        between = (max(medians) - min(medians)) / centre if centre > 0 else math.inf
    return ProcessSpread(len(groups), [int(g.size) for g in groups], medians, within, between)


def _rng_argument(seed: int) -> dict:
    # SciPy >= 1.15 spells the generator ``rng``; older releases ``random_state``.
    import inspect

    params = inspect.signature(scipy.stats.bootstrap).parameters
    key = "rng" if "rng" in params else "random_state"
    return {key: np.random.default_rng(seed)}


def verdict(ratio: PairedRatio) -> str:
    """``B slower by x % [lo, hi]``, ``B faster by x % [lo, hi]`` or ``no difference detected``."""
    if ratio.pairs == 0 and ratio.timeless_pairs:
        return (f"not measured: all {ratio.timeless_pairs} pairs timed 0 ms on both sides "
                "(below the clock's resolution)")
    if ratio.pairs == 0 or any(map(math.isnan, (ratio.median, ratio.lo, ratio.hi))):
        return "not measured"  # a NaN bound says nothing: never read as a difference
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
    "bootstrap_batch",
    "BOOTSTRAP_BATCH_VALUES",
    "hierarchical_ratio",
    "hierarchical_medians",
    "percentile_interval",
    "ProcessSpread",
    "process_spread",
    "verdict",
    "provisional",
    "round_trip_cost_ms",
]
