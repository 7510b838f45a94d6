"""The planted slowdown (docs/protocol.md §7): a test hook that delays one side by a few percent.

``perf_ab.py engines --plant-delay SIDE:PERCENT`` makes side ``SIDE`` (``A``, ``B`` or a side's
label) slower by ``PERCENT`` % of its own engine region, so that a campaign can show that the
statistics detect a slowdown of that size on the real machine, and that the same campaign without
it does not. The campaign records the plant (``parameters.planted_delay``; every round of the
delayed side its delay, ``planted_delay_ns``), and the report says in its first lines that the
campaign is a test, not a measurement of the engines.

How the delay is made: inside the timed engine region (between the probe's ``engine_start`` and
``engine_stop``), never inside an engine, at its END and on the host, for every side alike:
:meth:`DelayedProbe.engine_stop` busy-waits the delay, then calls the inner probe's
``engine_stop``. The region's host time grows by the delay, and on a CUDA side so does its device
time: the engine has synchronized its stream before ``engine_stop``, so the stream is idle during
the wait and the stop event (recorded by the inner probe after it) lands that much later. No
synchronization is added (verification rounds count them with CUPTI against the engine's own
count), no kernel is launched and CuPy is not needed.

Why at the end: the delay used to be a one-thread spin kernel enqueued on the engine's stream
right after the region's start event. On the H200 (roadNet-PA, ``cuda:fused`` against itself,
``B:3``) the rounds recorded ``planted_delay_ns`` ≈ 70 000, yet B/A came out 1.007 [0.992, 1.025]
(safe50k) and 1.007 [0.977, 1.032] (local10k): not detected. At the region's start the GPU is idle
while the host prepares the engine's first launch (about 90 µs of host work: host time 2.43 ms,
device time 2.34 ms), so the spin overlapped that host work and added nothing. A wait after the
engine's final synchronization cannot overlap anything.

Calibration: per cell, the delay is ``PERCENT`` % of the side's median engine region in that cell's
warm-up rounds (device time where the side has it, else host time), so it is "a few percent" on
every cell whatever its size. Until then (the guard, the warm-up rounds) the side runs undelayed.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, replace

from .errors import UsageError
from .sides import Side

OPTION = "--plant-delay"
ROLES = ("A", "B")
MAX_PERCENT = 100.0


@dataclass(frozen=True)
class PlantSpec:
    """What ``--plant-delay`` asked for: the role delayed, its side's label and the percentage."""

    role: str
    label: str
    percent: float

    def record(self) -> dict:
        """As campaign.json holds it (``parameters.planted_delay``)."""
        return {"side": self.role, "label": self.label, "percent": self.percent}

    def argv(self) -> list[str]:
        """The option that reproduces it (the role, which is never ambiguous)."""
        return [OPTION, f"{self.role}:{self.percent:g}"]


def parse(text: str, sides: tuple[Side, Side]) -> PlantSpec:
    """``"B:3"``, ``"cuda:fused:3"`` -> the spec; UsageError (exit 2) naming what is wrong."""
    what, sep, amount = (text or "").strip().rpartition(":")
    if not sep or not what:
        raise UsageError(f"{OPTION} {text!r}: expected SIDE:PERCENT, e.g. B:3 or cuda:fused:3")
    try:
        percent = float(amount)
    except ValueError:
        raise UsageError(f"{OPTION} {text!r}: the percentage {amount!r} is not a number") from None
    if not 0 < percent <= MAX_PERCENT:
        raise UsageError(f"{OPTION} {text!r}: the percentage must be in (0, {MAX_PERCENT:g}]")
    if what in ROLES:
        role = what
    else:
        roles = [r for r, side in zip(ROLES, sides) if side.label.lower() == what.lower()]
        if not roles:
            raise UsageError(f"{OPTION} {text!r}: {what!r} is neither A, B nor a side of this campaign "
                             f"({sides[0].label}, {sides[1].label})")
        if len(roles) > 1:
            raise UsageError(f"{OPTION} {text!r}: both sides are {what}; name the role to delay, A or B")
        role = roles[0]
    return PlantSpec(role, sides[ROLES.index(role)].label, percent)


def plant(sides: tuple[Side, Side], spec: PlantSpec | None) -> tuple[Side, Side]:
    """The campaign's sides with the delayed one wrapped in a :class:`PlantedSide`."""
    if spec is None:
        return sides
    index = ROLES.index(spec.role)
    out = list(sides)
    out[index] = PlantedSide.around(sides[index], spec.percent)
    return tuple(out)


def calibrated_delay_ns(median_ms: float | None, percent: float) -> int:
    """``percent`` % of a median engine region in ms, in whole nanoseconds (0 when unknown)."""
    if median_ms is None or not median_ms > 0:
        return 0
    return int(round(median_ms * 1e6 * percent / 100.0))


def warmup_median_ms(rows, role: str) -> float | None:
    """The median engine region (device time where every such round has it, else host time) of
    the warm-up rounds of ``role`` among ``rows`` (round records as dicts)."""
    warm = [r for r in rows if r["role"] == role and r["warmup"] and not r.get("verification")]
    device = [r["engine_device_ms"] for r in warm]
    values = device if warm and all(v is not None for v in device) else [r["engine_host_ms"] for r in warm]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def calibrate_cell(states: dict, rows) -> None:
    """Give every planted side of a cell its delay from that cell's warm-up ``rows`` (round
    records as dicts); ``states``: role -> the cell's side state, whose ``.side`` is replaced.
    Every later round of the side records its delay (the ``planted_delay_ns`` round column)."""
    for role, state in states.items():
        if isinstance(state.side, PlantedSide):
            state.side = state.side.calibrated(warmup_median_ms(rows, role))


@dataclass(frozen=True)
class PlantedSide(Side):
    """``base`` with a delay inside its engine region: none until :meth:`calibrated`."""

    base: Side | None = None
    percent: float = 0.0
    delay_ns: int | None = None

    @classmethod
    def around(cls, base: Side, percent: float) -> "PlantedSide":
        return cls(base.label, base.backend, base.cuda_engine, base.operators_loop, base.push_expansion,
                   base.update_launch, base=base, percent=percent)

    def calibrated(self, median_ms: float | None) -> "PlantedSide":
        """This side delayed by ``percent`` % of ``median_ms``."""
        return replace(self, delay_ns=calibrated_delay_ns(median_ms, self.percent))

    def make_result(self, graph, source: int, objective: int, distances, parents):
        return self.base.make_result(graph, source, objective, distances, parents)

    def compute(self, graph, source: int, objective: int):
        return self.base.compute(graph, source, objective)

    def update(self, graph, batch, result, probe):
        if probe is None or not self.delay_ns:
            return self.base.update(graph, batch, result, probe)
        return self.base.update(graph, batch, result, DelayedProbe(probe, self.delay_ns))


class DelayedProbe:
    """Passes the engine hooks on, delaying ``delay_ns`` at the end of the region: a host busy wait
    after the engine's work (and its final synchronization), before the inner probe's stop, so
    that the host time and the CUDA events of the region both grow by it (module docstring)."""

    def __init__(self, inner, delay_ns: int):
        self.inner = inner
        self.delay_ns = int(delay_ns)

    def engine_start(self, stream):
        self.inner.engine_start(stream)

    def engine_stop(self, stream):
        host_wait(self.delay_ns)
        self.inner.engine_stop(stream)


def host_wait(ns: int) -> None:
    """A busy wait (not a sleep: a sleep's wake-up latency would add tens of microseconds)."""
    until = time.perf_counter_ns() + int(ns)
    while time.perf_counter_ns() < until:
        pass


__all__ = ["OPTION", "PlantSpec", "PlantedSide", "DelayedProbe", "parse", "plant", "calibrated_delay_ns",
           "warmup_median_ms", "calibrate_cell", "host_wait"]
