"""The measuring instruments of a campaign: clock observation or lock (NVML) and contamination.

``Instruments.open`` decides the clock mode once: ``observe`` (NVML readable), ``lock`` (opt-in),
``unknown`` (NVML missing or not permitted: measured anyway and said so) or ``not_applicable``
(no GPU side). Around each round, ``begin_round``/``end_round`` take the readings outside the
timers and return the record fields and the reason, if any, the round is rejected.
"""

from __future__ import annotations

from dataclasses import dataclass

from .clocks import (
    UNKNOWN_ROUND_CLOCKS,
    ClockLock,
    ClockSampler,
    LockRequest,
    judge_round_clocks,
    summarize_window,
)
from .errors import EnvironmentProblem
from .monitor import CpuLoadMonitor, CpuReading, foreign_gpu_processes, judge_contamination
from .nvml import Nvml, NvmlUnavailable, Sample


@dataclass
class RoundWindow:
    cpu: CpuReading
    gpu_pids: list[int] | None
    before: Sample | None


class Instruments:
    def __init__(
        self,
        *,
        nvml: Nvml | None,
        handle,
        clock_mode: str,
        note: str | None,
        lock: ClockLock | None,
        min_clock_fraction: float,
        max_foreign_cpu: float,
        sample_interval_s: float,
        own_context: bool = False,
    ):
        self.nvml = nvml
        self.handle = handle
        self.clock_mode = clock_mode
        self.note = note
        self.lock = lock
        self.min_clock_fraction = min_clock_fraction
        self.max_foreign_cpu = max_foreign_cpu
        self.cpu = CpuLoadMonitor()
        self.sampler = (
            ClockSampler(nvml, handle, interval_s=sample_interval_s) if nvml is not None else None
        )
        self.max_sm_mhz = nvml.max_clocks(handle)[0] if nvml is not None else None
        self.reference_mem_mhz: int | None = None
        self.device = nvml.device_info(handle) if nvml is not None else None
        self.own_context = own_context
        # CUDA contexts held by this campaign's worker processes (workers.py), which NVML lists
        # beside this process's own; the runner sets it while spawned workers measure a CUDA side
        self.worker_contexts = 0

    @classmethod
    def open(
        cls,
        *,
        gpu: bool,
        pci_bus_id: str | None = None,
        gpu_index: int = 0,
        own_context: bool = False,
        lock_request: LockRequest | None = None,
        nvml_module=None,
        sample_interval_s: float = 0.005,
    ) -> "Instruments":
        """Open NVML for the measured GPU (when ``gpu``) and lock its clocks when asked.

        The rejection thresholds are the campaign's: the runner sets them (``set_thresholds``).
        ``own_context``: this process runs CUDA work on the device (a CUDA side), so NVML lists it.
        """
        common = dict(min_clock_fraction=0.9, max_foreign_cpu=1.0, sample_interval_s=sample_interval_s)
        if not gpu:
            if lock_request is not None:
                raise EnvironmentProblem("--lock-clocks needs a CUDA side: no GPU is measured")
            return cls(nvml=None, handle=None, clock_mode="not_applicable",
                       note="host sides only: no GPU clocks", lock=None, **common)
        try:
            nvml = Nvml.load(nvml_module)
            handle = nvml.handle(pci_bus_id=pci_bus_id, index=gpu_index)
        except NvmlUnavailable as exc:
            if lock_request is not None:
                raise EnvironmentProblem(f"--lock-clocks needs NVML: {exc}") from exc
            return cls(nvml=None, handle=None, clock_mode="unknown",
                       note=f"clocks unknown: {exc}", lock=None, **common)
        lock = None
        try:
            if lock_request is not None:
                lock = ClockLock(nvml, handle, lock_request)
                lock.acquire()
            probe = nvml.sample(handle)
            if lock is None and probe.sm_mhz is None:
                mode, note = "unknown", "clocks unknown: NVML does not report the SM clock"
            else:
                mode, note = ("lock" if lock else "observe"), None
            instruments = cls(nvml=nvml, handle=handle, clock_mode=mode, note=note, lock=lock,
                              own_context=own_context, **common)
            if instruments.sampler is not None:
                instruments.sampler.start()
        except BaseException:
            # nothing is handed back to close: reset a lock taken here while NVML can still reach
            # the device, then shut NVML down (a reset that fails raises its own EnvironmentProblem:
            # a GPU left locked outranks the failure that brought us here)
            try:
                if lock is not None:
                    lock.release()
            finally:
                nvml.shutdown()
            raise
        return instruments

    def set_thresholds(self, *, min_clock_fraction: float, max_foreign_cpu: float) -> None:
        self.min_clock_fraction = min_clock_fraction
        self.max_foreign_cpu = max_foreign_cpu

    # -- per cell -------------------------------------------------------------------------------
    def start_cell(self) -> None:
        self.reference_mem_mhz = None

    def after_warmup(self) -> None:
        """Fix the cell's reference memory clock; verify a lock under load (the first time)."""
        if self.sampler is None:
            return
        reading = self.sampler.read_now()
        self.reference_mem_mhz = reading.mem_mhz
        if self.lock is not None and self.lock.held is None:
            self.lock.verify(reading)

    # -- per round ------------------------------------------------------------------------------
    def _own_contexts(self) -> int:
        return int(bool(self.own_context)) + self.worker_contexts

    def begin_round(self) -> RoundWindow:
        cpu = self.cpu.read()
        pids = foreign_gpu_processes(self.nvml, self.handle, own_context=self._own_contexts())
        before = self.sampler.read_now() if self.sampler is not None else None
        return RoundWindow(cpu, pids, before)

    def end_round(self, window: RoundWindow) -> tuple[dict, str | None]:
        after = self.sampler.read_now() if self.sampler is not None else None
        pids_after = foreign_gpu_processes(self.nvml, self.handle, own_context=self._own_contexts())
        cpu = self.cpu.read()
        if after is not None and window.before is not None:
            inside = self.sampler.between(window.before.t_ns, after.t_ns)
            clocks = summarize_window(window.before, inside, after)
        else:
            clocks = UNKNOWN_ROUND_CLOCKS
        pids = None
        if window.gpu_pids is not None or pids_after is not None:
            pids = sorted(set(window.gpu_pids or []) | set(pids_after or []))
        foreign_cpu = self.cpu.foreign_cores(window.cpu, cpu)
        reason = judge_round_clocks(
            clocks,
            max_sm_mhz=self.max_sm_mhz,
            reference_mem_mhz=self.reference_mem_mhz,
            min_clock_fraction=self.min_clock_fraction,
            locked_sm_mhz=self.lock.sm_mhz if self.lock is not None else None,
        ) or judge_contamination(foreign_cpu, pids, max_foreign_cpu=self.max_foreign_cpu)
        fields = clocks.as_record()
        fields["foreign_cpu_cores"] = foreign_cpu
        fields["foreign_gpu_pids"] = None if pids is None else ",".join(map(str, pids))
        return fields, reason

    # -- campaign -------------------------------------------------------------------------------
    def campaign_record(self) -> dict:
        return {
            "mode": self.clock_mode,
            "note": self.note,
            "lock": None if self.lock is None else self.lock.record(),
            "min_clock_fraction": self.min_clock_fraction,
            "max_sm_mhz": self.max_sm_mhz,
            "max_foreign_cpu": self.max_foreign_cpu,
        }

    def close(self) -> None:
        """Stop sampling, reset a lock, shut NVML down; safe to call twice."""
        try:
            if self.sampler is not None:
                self.sampler.stop()
            if self.lock is not None:
                self.lock.release()
        finally:
            if self.nvml is not None:
                self.nvml.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


__all__ = ["Instruments", "RoundWindow"]
