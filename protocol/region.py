"""The engine-region timer: the ``probe`` that ``engines.sssp.update`` calls around its engine region.

One place for the engine timing, shared by the A/B cell (``protocol.cell``, which re-exports
:class:`RegionProbe`), the engine table (``bench/engine_table.py``) and the asv suite
(``benchmarks/``). Host times are ``time.perf_counter_ns`` read through this module's ``time``
(tests and ``benchmarks/synthetic.py`` replace it with a controlled clock); device times are a
pair of CUDA events recorded on the engine's stream. Standard library only until a stream is
given (CuPy is imported then).
"""

from __future__ import annotations

import time


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


__all__ = ["RegionProbe"]
