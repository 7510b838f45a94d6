"""The fused engine's phase clock, read on the host: what block 0 of a fused launch stamped at each
grid barrier (fused.cu phase_mark, module variant SSSP_PHASE_CLOCK, switch
``ENGINES_FUSED_PHASE_CLOCK``) turned into the phases' times of that launch.

A persistent kernel is one launch, so a profiler's per-kernel time cannot split it; blocks leave a
barrier together, so the gap between two of block 0's stamps is the time of the phase the second
barrier ended, its barrier included. Stamps are SM cycles (fine) and the global timer (coarse);
``PhaseTimes.seconds`` converts cycles with a cycles-per-second rate that the caller pools over
many launches (``pooled_rate``), so one short launch's coarse timer does not set it.

An instrument for bench/fused_phases.py: the engine times users read never run with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import fused, runtime

#: The phase kinds in fused.cu's ``PhaseKind`` order (a test reads the enum): what the barrier
#: that ends a phase closes. The last, "unpack", is the stretch after the last barrier to block 0's
#: end: block 0's share of the unpack (the other blocks' shares run alongside), or with
#: distance-only words the last pass of the parents' recovery (algorithm.md §4.4).
KINDS = ("start", "pack and roots", "jump round", "invalidate", "heads", "pull", "first minimum",
         "first split", "push iteration", "solo stretch", "epoch minimum", "epoch split",
         "recover parents", "seed", "unpack")
#: fused.cu's enumerator of each kind, in the same order (the test compares them)
ENUM_NAMES = ("PHASE_START", "PHASE_PACK_ROOTS", "PHASE_JUMP_ROUND", "PHASE_INVALIDATE", "PHASE_HEADS",
              "PHASE_PULL", "PHASE_FIRST_MIN", "PHASE_FIRST_SPLIT", "PHASE_PUSH", "PHASE_SOLO",
              "PHASE_EPOCH_MIN", "PHASE_EPOCH_SPLIT", "PHASE_RECOVER", "PHASE_SEED", "PHASE_END")
#: fused.cu's SSSP_PHASE_SLOTS: stamps past it are counted, not kept
SLOTS = 8192
_COUNT, _KIND, _CYCLES, _NS = ("sssp_phase_count", "sssp_phase_kind", "sssp_phase_cycles", "sssp_phase_ns")


@dataclass(frozen=True)
class PhaseTimes:
    """One launch's stamps: ``kinds[i]`` names the phase that ended at stamp i + 1 and
    ``cycles[i]`` its length in SM cycles; ``launch_cycles`` / ``launch_ns`` from the first stamp
    to the last kept one; ``dropped`` stamps came past SLOTS (their phases are missing)."""

    kinds: tuple[str, ...]
    cycles: tuple[int, ...]
    launch_cycles: int
    launch_ns: int
    dropped: int

    def cycles_of(self, kind: str) -> list[int]:
        """The lengths, in cycles and in launch order, of the phases of ``kind`` (one of KINDS)."""
        return [c for k, c in zip(self.kinds, self.cycles) if k == kind]

    def seconds(self, cycles_per_second: float) -> list[float]:
        """Each phase's length in seconds at ``cycles_per_second`` (``pooled_rate``)."""
        return [c / cycles_per_second for c in self.cycles]


def from_stamps(count: int, kinds, cycles, ns) -> PhaseTimes:
    """The PhaseTimes of ``count`` stamps (the first min(count, SLOTS) of the three arrays)."""
    kept = min(int(count), SLOTS)
    if kept < 1:
        raise ValueError("no stamps: the launch did not run the phase clock's module")
    kinds = np.asarray(kinds[:kept], dtype=np.int64)
    cycles = np.asarray(cycles[:kept], dtype=np.uint64).astype(np.int64)
    ns = np.asarray(ns[:kept], dtype=np.uint64).astype(np.int64)
    bad = kinds[(kinds < 0) | (kinds >= len(KINDS))]
    if bad.size:
        raise ValueError(f"unknown phase kind {int(bad[0])}: fused.cu and phase_clock.KINDS differ")
    if kinds[0] != 0:
        raise ValueError("the first stamp is not the launch's start")
    return PhaseTimes(tuple(KINDS[k] for k in kinds[1:]), tuple(int(c) for c in np.diff(cycles)),
                      int(cycles[-1] - cycles[0]), int(ns[-1] - ns[0]), int(count) - kept)


def pooled_rate(launches) -> float | None:
    """Cycles per second over ``launches`` (PhaseTimes) together: their cycles over their timer
    nanoseconds; None without a launch the timer saw last long enough."""
    cycles = sum(t.launch_cycles for t in launches)
    ns = sum(t.launch_ns for t in launches)
    return cycles / ns * 1e9 if ns > 0 and cycles > 0 else None


def _clocked(device: int):
    """The fused modules compiled on ``device`` with the phase clock."""
    return [m for m in runtime.loaded_modules(fused.ENGINE, device) if set(fused.PHASE_CLOCK_DEFINES) <= set(m.defines)]


def reset(device: int) -> None:
    """Zero the stamp count of every phase-clock module on ``device`` (before a launch, so that
    ``read`` finds the module that ran)."""
    with runtime.cupy_module().cuda.Device(int(device)):
        for module in _clocked(device):
            module.global_array(_COUNT, np.int32, 1).fill(0)


def read(device: int) -> PhaseTimes | None:
    """The stamps of the one phase-clock launch on ``device`` since ``reset`` (None: none ran;
    ValueError when launches of two modules ran, an update's and a compute()'s say: ``reset``
    between them). Call after the launch finished (update() and compute() return after their
    synchronization)."""
    with runtime.cupy_module().cuda.Device(int(device)):
        ran = [(m, int(m.global_array(_COUNT, np.int32, 1).get()[0])) for m in _clocked(device)]
        ran = [(m, count) for m, count in ran if count > 0]
        if len(ran) > 1:
            raise ValueError("launches of several phase-clock modules ran since the reset; reset between them")
        if not ran:
            return None
        module, count = ran[0]
        return from_stamps(count, module.global_array(_KIND, np.int32, SLOTS).get(),
                           module.global_array(_CYCLES, np.uint64, SLOTS).get(),
                           module.global_array(_NS, np.uint64, SLOTS).get())


__all__ = ["ENUM_NAMES", "KINDS", "SLOTS", "PhaseTimes", "from_stamps", "pooled_rate", "read", "reset"]
