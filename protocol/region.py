"""The engine timing: the engine-region timer (the ``probe`` that ``engines.sssp.update`` calls
around its engine region) and the one timed update (:func:`timed_update`, the whole ``update()``
call between two host clock readings) and loop of restored, timed updates (:func:`timed_updates`).

One place for the engine timing, shared by the A/B cell (``protocol.cell``, which re-exports
:class:`RegionProbe`), the engine table (``bench/engine_table.py``) and the asv suite
(``benchmarks/``). Host times are ``time.perf_counter_ns`` read through this module's ``time``
(tests and ``benchmarks/synthetic.py`` replace it with a controlled clock); device times are a
pair of CUDA events recorded on the engine's stream. Standard library only until a stream is
given (CuPy is imported then).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator


class RegionProbe:
    """The ``probe`` of engines.sssp.update: host times and CUDA events of the engine region."""

    def __init__(self):
        self._events = None
        self.reset()

    def reset(self):
        self.start_ns = None
        self.stop_ns = None
        self._timed_on_device = False

    def engine_start(self, stream):
        if stream is not None:
            if self._events is None:
                import cupy

                self._events = (cupy.cuda.Event(), cupy.cuda.Event())
            self._events[0].record(stream)
            self._timed_on_device = True
        self.start_ns = time.perf_counter_ns()

    def engine_stop(self, stream):
        self.stop_ns = time.perf_counter_ns()
        if stream is not None:
            self._events[1].record(stream)

    def host_ms(self) -> float | None:
        if self.start_ns is None or self.stop_ns is None:
            return None
        return (self.stop_ns - self.start_ns) / 1e6

    def device_ms(self) -> float | None:
        """Elapsed time between the two events (waits for the stop event: call outside timers)."""
        if not self._timed_on_device:
            return None
        import cupy

        self._events[1].synchronize()
        return float(cupy.cuda.get_elapsed_time(self._events[0], self._events[1]))


@dataclass
class TimedUpdate:
    """One timed update: its Stats (None when it raised), the whole call's host time, and the
    exception it raised (only with ``catch``)."""

    stats: object
    update_host_ms: float
    error: Exception | None = None


def timed_update(update: Callable, probe=None, *, hooks=None, catch: bool = False) -> TimedUpdate:
    """``update(hooks or probe)`` timed whole (``perf_counter_ns`` just before and after the call:
    everything the caller does around it, a restore, a check, stays outside), the probe reset
    first. ``probe`` None: a plain update, as a user calls it. ``catch``: an ``Exception`` the
    update raises is returned (the time still taken) instead of raised."""
    if probe is not None:
        probe.reset()
    passed = hooks if hooks is not None else probe
    error, stats = None, None
    t0 = time.perf_counter_ns()
    try:
        stats = update(passed)
    except Exception as exc:
        if not catch:
            raise
        error = exc
    t1 = time.perf_counter_ns()
    return TimedUpdate(stats, (t1 - t0) / 1e6, error)


def timed_updates(update: Callable, restore: Callable[[], None], count: int, probe=None, *,
                  hooks=None) -> Iterator[TimedUpdate]:
    """``count`` updates, each from the state ``restore()`` returns to (outside every timer), each
    a :func:`timed_update`; the probe holds the engine region of the update just yielded (read
    it before the next one starts)."""
    for _ in range(count):
        restore()
        yield timed_update(update, probe, hooks=hooks)


__all__ = ["RegionProbe", "TimedUpdate", "timed_update", "timed_updates"]
