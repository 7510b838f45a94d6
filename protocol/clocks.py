"""GPU clock state (docs/protocol.md §4): the observe sampler, the per-round judgement and the opt-in lock.

Observe mode (the default, and the only mode for machines that are not yours) samples NVML on a
thread every few milliseconds; each round is judged on the samples of its window plus readings
taken right before and right after it. Lock mode pins the clocks through NVML for the campaign
and resets them on every way out: normal exit, exception, SIGINT, SIGTERM and interpreter exit.
"""

from __future__ import annotations

import atexit
import collections
import os
import signal
import statistics
import threading
from dataclasses import dataclass

from .errors import EnvironmentProblem, UsageError
from .nvml import BENIGN_REASONS, Nvml, Sample, reason_names

# A locked clock may read a few MHz off its set point; beyond this fraction a round is "off lock".
LOCK_TOLERANCE = 0.02
# Samples older than this are dropped; no round window is that long.
_SAMPLE_HORIZON_NS = 120 * 10**9


@dataclass(frozen=True)
class RoundClocks:
    """What a round's record says about the clocks during its window."""

    sm_min_mhz: int | None
    sm_median_mhz: float | None
    mem_mhz: int | None
    pstate: int | None  # the highest (slowest) P-state seen
    reasons: int | None  # OR of every reading's event reasons
    samples_in_window: int  # sampler readings strictly inside the round (before/after excluded)
    temperature_peak_c: int | None
    power_peak_w: float | None

    def as_record(self) -> dict:
        return {
            "sm_clock_min_mhz": self.sm_min_mhz,
            "sm_clock_median_mhz": self.sm_median_mhz,
            "mem_clock_mhz": self.mem_mhz,
            "pstate": self.pstate,
            "event_reasons": self.reasons,
            "event_reason_names": reason_names(self.reasons),
            "nvml_samples": self.samples_in_window,
            "temperature_peak_c": self.temperature_peak_c,
            "power_peak_w": self.power_peak_w,
        }


UNKNOWN_ROUND_CLOCKS = RoundClocks(None, None, None, None, None, 0, None, None)


def summarize_window(before: Sample, inside: list[Sample], after: Sample) -> RoundClocks:
    """Fold the readings of one round; the before/after readings decide for short rounds."""
    readings = [before, *inside, after]

    def present(field):
        return [getattr(s, field) for s in readings if getattr(s, field) is not None]

    sm = present("sm_mhz")
    mem = present("mem_mhz")
    reasons = present("reasons")
    pstates = present("pstate")
    temps = present("temperature_c")
    powers = present("power_w")
    or_reasons = None
    if reasons:
        or_reasons = 0
        for r in reasons:
            or_reasons |= int(r)
    return RoundClocks(
        sm_min_mhz=min(sm) if sm else None,
        sm_median_mhz=float(statistics.median(sm)) if sm else None,
        # the memory clock that differs most from the before-reading: a change anywhere counts
        mem_mhz=max(mem, key=lambda v: abs(v - mem[0])) if mem else None,
        pstate=max(pstates) if pstates else None,
        reasons=or_reasons,
        samples_in_window=len(inside),
        temperature_peak_c=max(temps) if temps else None,
        power_peak_w=max(powers) if powers else None,
    )


def judge_round_clocks(
    clocks: RoundClocks,
    *,
    max_sm_mhz: int | None,
    reference_mem_mhz: int | None,
    min_clock_fraction: float,
    locked_sm_mhz: int | None = None,
) -> str | None:
    """The reason a round's clocks reject it, or None (docs/protocol.md §4). Unknown clocks never reject."""
    if clocks.reasons is not None and clocks.reasons & ~BENIGN_REASONS:
        return f"clock event: {reason_names(clocks.reasons & ~BENIGN_REASONS)}"
    if clocks.sm_min_mhz is not None and max_sm_mhz:
        floor = min_clock_fraction * max_sm_mhz
        if clocks.sm_min_mhz < floor:
            return (
                f"SM clock {clocks.sm_min_mhz} MHz below {min_clock_fraction:g} x max "
                f"{max_sm_mhz} MHz"
            )
    if locked_sm_mhz is not None and clocks.sm_min_mhz is not None:
        if abs(clocks.sm_min_mhz - locked_sm_mhz) > LOCK_TOLERANCE * locked_sm_mhz:
            return f"SM clock {clocks.sm_min_mhz} MHz off the locked {locked_sm_mhz} MHz"
    if (
        clocks.mem_mhz is not None
        and reference_mem_mhz is not None
        and clocks.mem_mhz != reference_mem_mhz
    ):
        return f"memory clock {clocks.mem_mhz} MHz differs from the cell's {reference_mem_mhz} MHz"
    return None


class ClockSampler:
    """A daemon thread reading NVML every ``interval_s`` into a time-ordered buffer."""

    def __init__(self, nvml: Nvml, handle, *, interval_s: float = 0.005):
        self._nvml = nvml
        self._handle = handle
        self._interval = interval_s
        self._samples: collections.deque[Sample] = collections.deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "ClockSampler":
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def _run(self) -> None:
        while not self._stop.is_set():
            s = self._nvml.sample(self._handle)
            with self._lock:
                self._samples.append(s)
                horizon = s.t_ns - _SAMPLE_HORIZON_NS
                while self._samples and self._samples[0].t_ns < horizon:
                    self._samples.popleft()
            self._stop.wait(self._interval)

    def read_now(self) -> Sample:
        return self._nvml.sample(self._handle)

    def between(self, t0_ns: int, t1_ns: int) -> list[Sample]:
        with self._lock:
            return [s for s in self._samples if t0_ns < s.t_ns < t1_ns]


# -- the lock -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LockRequest:
    """``--lock-clocks base|max|<SM MHz>[,<memory MHz>]``."""

    sm: str | int  # "base", "max" or MHz
    mem_mhz: int | None = None

    @classmethod
    def parse(cls, text: str) -> "LockRequest":
        text = text.strip().lower()
        if text in ("base", "max"):
            return cls(text)
        parts = text.split(",")
        try:
            values = [int(p) for p in parts]
        except ValueError:
            values = []
        if len(parts) not in (1, 2) or len(values) != len(parts) or min(values) <= 0:
            raise UsageError(
                f"--lock-clocks {text!r}: expected base, max, <SM MHz> or <SM MHz>,<memory MHz>"
            )
        return cls(values[0], values[1] if len(values) == 2 else None)


class ClockLock:
    """Locks the GPU (and where supported memory) clocks; resets them whatever happens.

    ``acquire()`` installs SIGINT/SIGTERM handlers (main thread only) and an atexit hook that all
    call ``release()``; ``release()`` is idempotent, restores the previous handlers and then, for
    a signal, lets the previous handler act (so SIGTERM still ends the process).
    """

    def __init__(self, nvml: Nvml, handle, request: LockRequest):
        self._nvml = nvml
        self._handle = handle
        self.request = request
        self.sm_mhz: int | None = None
        self.mem_mhz: int | None = None
        self.memory_locked = False
        self.memory_note: str | None = None
        self.held: bool | None = None
        self._active = False
        self._previous_handlers: dict[int, object] = {}

    # resolve the request against what the device reports
    def _targets(self) -> tuple[int, int | None]:
        max_sm, max_mem = self._nvml.max_clocks(self._handle)
        base_sm, base_mem = self._nvml.default_clocks(self._handle)
        if self.request.sm == "max":
            sm, mem = max_sm, self.request.mem_mhz or max_mem
        elif self.request.sm == "base":
            sm, mem = base_sm, self.request.mem_mhz or base_mem
        else:
            sm, mem = int(self.request.sm), self.request.mem_mhz
        if sm is None:
            raise EnvironmentProblem(
                f"--lock-clocks {self.request.sm}: NVML does not report that clock for this GPU"
            )
        return int(sm), None if mem is None else int(mem)

    def acquire(self) -> "ClockLock":
        sm, mem = self._targets()
        try:
            self._nvml.set_gpu_locked_clocks(self._handle, sm)
        except self._nvml.module.NVMLError as exc:
            if self._nvml.is_no_permission(exc):
                raise EnvironmentProblem(
                    "--lock-clocks needs administrative rights: NVML refused "
                    f"nvmlDeviceSetGpuLockedClocks ({exc}); run as root (or with CAP_SYS_ADMIN), "
                    "or measure without --lock-clocks (observe mode)"
                ) from exc
            raise EnvironmentProblem(f"--lock-clocks: NVML could not lock the GPU clocks ({exc})") from exc
        self.sm_mhz = sm
        self._active = True
        self._install_handlers()
        if mem is not None:
            try:
                self._nvml.set_memory_locked_clocks(self._handle, mem)
                self.memory_locked = True
                self.mem_mhz = mem
            except self._nvml.module.NVMLError as exc:
                if self._nvml.is_not_supported(exc):
                    self.memory_note = "memory clock lock not supported by this GPU"
                else:
                    self.release()
                    raise EnvironmentProblem(
                        "--lock-clocks: NVML refused nvmlDeviceSetMemoryLockedClocks "
                        f"({exc}); the GPU clock lock was reset"
                    ) from exc
            except BaseException:
                # anything else (a binding without the function, Ctrl-C): the GPU lock is not
                # left behind for the exit hook, which may find NVML already shut down
                self.release()
                raise
        return self

    def verify(self, sample: Sample) -> bool:
        """Under load, do the clocks hold the lock? Recorded; off-lock rounds are rejected anyway."""
        ok = sample.sm_mhz is not None and abs(sample.sm_mhz - self.sm_mhz) <= (
            LOCK_TOLERANCE * self.sm_mhz
        )
        if self.memory_locked and sample.mem_mhz is not None:
            ok = ok and abs(sample.mem_mhz - self.mem_mhz) <= LOCK_TOLERANCE * self.mem_mhz
        self.held = bool(ok)
        return self.held

    def release(self) -> None:
        if not self._active:
            return
        self._active = False
        errors = []
        for reset in (
            (self._nvml.reset_memory_locked_clocks if self.memory_locked else None),
            self._nvml.reset_gpu_locked_clocks,
        ):
            if reset is None:
                continue
            try:
                reset(self._handle)
            except Exception as exc:  # noqa: BLE001 (try every reset; report after)
                errors.append(exc)
        self._restore_handlers()
        if errors:
            raise EnvironmentProblem(f"resetting the locked clocks failed: {errors[0]}")

    def record(self) -> dict:
        return {
            "request": str(self.request.sm)
            + ("" if self.request.mem_mhz is None else f",{self.request.mem_mhz}"),
            "sm_mhz": self.sm_mhz,
            "mem_mhz": self.mem_mhz,
            "memory_locked": self.memory_locked,
            "memory_note": self.memory_note,
            "held_under_load": self.held,
        }

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
        return False

    # -- signals and interpreter exit ---------------------------------------------------------
    def _install_handlers(self) -> None:
        atexit.register(self.release)
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(signum)
            # None: a handler installed outside Python, which Python can neither call nor put
            # back; the default action stands in for it (restored after, and acted on for a signal)
            self._previous_handlers[signum] = signal.SIG_DFL if previous is None else previous
            signal.signal(signum, self._on_signal)

    def _restore_handlers(self) -> None:
        atexit.unregister(self.release)
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, previous in self._previous_handlers.items():
            signal.signal(signum, previous)
        self._previous_handlers.clear()

    def _on_signal(self, signum, frame):
        previous = self._previous_handlers.get(signum, signal.SIG_DFL)
        try:
            self.release()
        finally:
            if callable(previous):
                previous(signum, frame)
            elif previous == signal.SIG_DFL:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)


__all__ = [
    "RoundClocks",
    "UNKNOWN_ROUND_CLOCKS",
    "summarize_window",
    "judge_round_clocks",
    "ClockSampler",
    "LockRequest",
    "ClockLock",
]
