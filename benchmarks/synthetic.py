"""A controlled clock for the engine region: ``SSSPAB_ASV_SYNTHETIC`` (a test hook, used only by
``benchmarks/asv_semantics.py``).

Unset, :func:`region_probe` is the protocol's ``RegionProbe`` and nothing changes. Set (to any seed
text), the engines still run every update, but the engine region each update measures lasts a
seeded draw instead of its real time: ``BASE_NS`` x the process's offset (lognormal, ``BETWEEN``)
x a draw per update (lognormal, ``WITHIN``), the shape ``tests/bench/test_asv_statistics.py``
samples. The planted delay (``protocol.planted_delay.DelayedProbe``, calibrated from those draws)
is added to the region on the same clock instead of being waited for. asv's samples, and so its
verdict, are then a function of the seed and the code alone: the check fails when asv's pipeline or
the benchmark's wiring is wrong, never because the machine was busy (``make asv-semantics`` once
read a planted 10 % as 1.00 on a loaded 2-core box).
"""

from __future__ import annotations

import hashlib
import os
import time

import numpy as np

from protocol import planted_delay, region
from protocol.region import RegionProbe

ENV = "SSSPAB_ASV_SYNTHETIC"
BASE_NS = 330_000   # a host engine region at the tiny scale
WITHIN = 0.03       # the spread of one process's updates
BETWEEN = 0.015     # the spread between processes (layout, caches, the machine's load)


class _Clock:
    """Stands in for ``time`` in ``protocol.region``: ``perf_counter_ns`` reads a counter that only
    the synthetic regions and the planted delay advance (every other name is the real module's)."""

    def __init__(self):
        self.now_ns = 0

    def perf_counter_ns(self) -> int:
        self.now_ns += 1  # every reading a distinct instant
        return self.now_ns

    def advance(self, ns) -> None:
        self.now_ns += int(ns)

    def __getattr__(self, name):
        return getattr(time, name)


class SyntheticProbe:
    """A ``RegionProbe`` whose region lasts a seeded draw on the process's synthetic clock."""

    def __init__(self, clock: _Clock, rng):
        self.inner = RegionProbe()
        self.clock = clock
        self.rng = rng
        self.offset = float(rng.lognormal(0.0, BETWEEN))

    def reset(self):
        self.inner.reset()

    def engine_start(self, stream):
        self.inner.engine_start(None)  # host times only: they are the clock's

    def engine_stop(self, stream):
        self.clock.advance(BASE_NS * self.offset * float(self.rng.lognormal(0.0, WITHIN)))
        self.inner.engine_stop(None)

    def host_ms(self):
        return self.inner.host_ms()

    def device_ms(self):
        return None


_clock: _Clock | None = None


def region_probe(label: str):
    """The probe of one benchmark state (``label`` names it, e.g. ``host/local``): synthetic when
    :data:`ENV` is set, each label and seed text drawing its own stream."""
    global _clock
    seed = os.environ.get(ENV, "")
    if not seed:
        return RegionProbe()
    if _clock is None:
        _clock = _Clock()
        region.time = _clock                  # RegionProbe's readings
        planted_delay.host_wait = _clock.advance  # the planted delay, added rather than waited
    digest = hashlib.sha256(f"{seed}/{label}".encode()).digest()
    return SyntheticProbe(_clock, np.random.default_rng(int.from_bytes(digest[:8], "little")))
