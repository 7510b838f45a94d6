"""What one cell's rounds say about two sources of noise (issue 32, step 1; docs/protocol.md §2.5):
the SM clock each round ran at, and the host's share of the engine region's time.

- **Clock**: in observe mode the SM clock ramps and dips between rounds, and every round records
  the median of its NVML clock readings (``sm_clock_median_mhz``). A round's time scales about as
  1 / clock, so a pair's ratio B / A should follow clock A / clock B if the clock moves it:
  :func:`clock_correlation` gives the Pearson correlation of the per-pair ratio with that clock
  ratio, and of every round's time (over its worker's and side's median) with its own clock. Every
  round at the same clock: ``constant``; no readings (no NVML, host sides): ``not recorded``.
- **Host timing**: the engine region is timed twice in a CUDA round, by the host clock
  (``engine_host_ms``) and by CUDA events on the engine's stream at the same points
  (``engine_device_ms``, docs/protocol.md §2.2). :func:`host_event_difference` gives host − event
  per round, and the interval of the ratio on each timer, so that what the host adds to the
  interval shows. A side without CUDA events (a host side) records no event time: ``not recorded``.

Plain functions over a cell's round frame (``RecordStore.read_rounds`` rows of one cell), the
accepted timed rounds only (``protocol.analysis.accepted``); the interval is the summary's
(``protocol.analysis.primary_interval``'s hierarchical bootstrap), not computed again here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .analysis import accepted, paired_frame, with_process

CLOCK = "sm_clock_median_mhz"
CONSTANT = "constant"
VARIES = "varies"
NOT_RECORDED = "not recorded"
#: fewer pairs (or rounds) than this give no correlation
MIN_POINTS = 3


def pearson(x, y) -> float | None:
    """Pearson's correlation of ``x`` and ``y``; None with fewer than MIN_POINTS points or when
    either is constant (the correlation is undefined)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.size != y.size:
        raise ValueError(f"correlated samples differ in length: {x.size} and {y.size}")
    if x.size < MIN_POINTS or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def clock_correlation(rows: pd.DataFrame, column: str) -> dict:
    """How the SM clock moved over the cell's accepted rounds and how region ``column`` (e.g.
    ``engine_device_ms``) followed it: ``state`` (constant, varies, not recorded), the clock's
    ``min_mhz`` / ``max_mhz``, ``rounds`` with a reading, and (when it varies)
    ``r_pair_ratio`` (per-pair B / A against clock A / clock B: positive when a pair whose B ran
    at a lower clock is slower) and ``r_round_time`` (each round's time over its worker's and
    side's median, against its clock: negative when a faster clock makes a faster round); None
    where undefined (fewer than MIN_POINTS, or one of the two constant)."""
    acc = with_process(accepted(rows))
    clocks = acc[CLOCK].dropna() if len(acc) else pd.Series(dtype=float)
    out = {"state": NOT_RECORDED, "min_mhz": None, "max_mhz": None, "rounds": int(clocks.size),
           "r_pair_ratio": None, "r_round_time": None}
    if clocks.empty:
        return out
    out["min_mhz"], out["max_mhz"] = float(clocks.min()), float(clocks.max())
    if out["min_mhz"] == out["max_mhz"]:
        out["state"] = CONSTANT
        return out
    out["state"] = VARIES
    pairs = paired_frame(rows, (column, CLOCK)).dropna()
    if len(pairs):
        ratio = pairs[(column, "B")] / pairs[(column, "A")]
        expected = pairs[(CLOCK, "A")] / pairs[(CLOCK, "B")]
        out["r_pair_ratio"] = pearson(ratio, expected)
    timed = acc.dropna(subset=[column, CLOCK])
    if len(timed):
        centre = timed.groupby(["session", "process", "role"])[column].transform("median")
        out["r_round_time"] = pearson(timed[column] / centre, timed[CLOCK])
    return out


def host_event_difference(rows: pd.DataFrame, summary_cell: dict | None = None) -> dict:
    """Host time against CUDA-event time of the engine region in the cell's accepted rounds:
    ``state`` (recorded, not recorded), ``rounds`` timed by both, the median and quartiles of
    host − event in ms (``median_ms``, ``q1_ms``, ``q3_ms``) and the median of host / event − 1
    (``median_relative``). With the cell's summary entry (``analysis.cell_summary``), the relative
    half-width of the paired interval on either timer (``half_width_host``,
    ``half_width_event``)."""
    acc = accepted(rows)
    both = acc.dropna(subset=["engine_host_ms", "engine_device_ms"]) if len(acc) else acc
    out = {"state": NOT_RECORDED, "rounds": int(len(both)), "median_ms": None, "q1_ms": None, "q3_ms": None,
           "median_relative": None, "half_width_host": None, "half_width_event": None}
    regions = (summary_cell or {}).get("regions") or {}
    out["half_width_host"] = half_width((regions.get("engine_host") or {}).get("paired"))
    out["half_width_event"] = half_width((regions.get("engine_device") or {}).get("paired"))
    if both.empty:
        return out
    host = both["engine_host_ms"].to_numpy(dtype=float)
    event = both["engine_device_ms"].to_numpy(dtype=float)
    q1, median, q3 = np.percentile(host - event, [25, 50, 75])
    out.update(state="recorded", median_ms=float(median), q1_ms=float(q1), q3_ms=float(q3),
               median_relative=float(np.median(host / event - 1.0)))
    return out


def half_width(paired: dict | None) -> float | None:
    """The relative half-width (hi − lo) / 2 / median of a paired interval (``PairedRatio.as_dict``,
    as the summary records it); None when it did not measure."""
    if not paired:
        return None
    lo, hi, median = paired.get("lo"), paired.get("hi"), paired.get("median")
    if None in (lo, hi, median) or not all(map(math.isfinite, (lo, hi, median))) or median <= 0:
        return None
    return (hi - lo) / 2.0 / median


def share_of_base(half: float | None, base_half: float | None) -> float | None:
    """The fraction of the base experiment's half-width an experiment removes:
    (base − half) / base; negative when the experiment is wider. None without both, or with a
    base of width 0."""
    if half is None or base_half is None or base_half <= 0:
        return None
    return (base_half - half) / base_half


__all__ = ["CLOCK", "CONSTANT", "VARIES", "NOT_RECORDED", "MIN_POINTS", "pearson", "clock_correlation",
           "host_event_difference", "half_width", "share_of_base"]
