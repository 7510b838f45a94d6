"""The one door to NVML (``nvidia-ml-py``'s ``pynvml``).

Everything the service asks NVML goes through ``Nvml``, built on a module object; tests hand it a
fake module with the same function names (scripted clocks, reasons and processes; failures on
demand), so every path of observing and locking clocks is exercised without a GPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

# Clock-event reason bits (NVML's nvmlClocksEventReason*; the values are part of NVML's ABI).
REASON_BITS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
# docs/protocol.md §4: every reason but "GPU idle" and "applications clocks setting" rejects a round.
BENIGN_REASONS = 0x1 | 0x2


def reason_names(mask: int | None) -> str | None:
    """``"sw_power_cap|hw_slowdown"`` for a reason mask; unknown bits as hex; None stays None."""
    if mask is None:
        return None
    names = [name for bit, name in REASON_BITS.items() if mask & bit]
    unknown = mask & ~sum(REASON_BITS)
    if unknown:
        names.append(hex(unknown))
    return "|".join(names) if names else "none"


class NvmlUnavailable(Exception):
    """NVML cannot be loaded or initialised, or the device cannot be found."""


@dataclass(frozen=True)
class Sample:
    """One NVML reading of a device; a field is None where NVML would not say."""

    t_ns: int  # time.perf_counter_ns() at the reading, the clock the round timers use
    sm_mhz: int | None
    mem_mhz: int | None
    reasons: int | None
    pstate: int | None
    temperature_c: int | None
    power_w: float | None
    utilization_pct: int | None


class Nvml:
    """A thin adapter over a ``pynvml``-shaped module; ``Nvml.load()`` builds the real one."""

    def __init__(self, module):
        self._m = module
        self._open = False

    @classmethod
    def load(cls, module=None) -> "Nvml":
        if module is None:
            try:
                import pynvml as module  # noqa: PLC0415 (optional dependency)
            except ImportError as exc:
                raise NvmlUnavailable(f"nvidia-ml-py (pynvml) is not installed: {exc}") from exc
        nvml = cls(module)
        try:
            module.nvmlInit()
        except Exception as exc:  # NVMLError, or a missing library
            raise NvmlUnavailable(f"NVML could not be initialised: {exc}") from exc
        nvml._open = True
        return nvml

    @property
    def module(self):
        return self._m

    def shutdown(self) -> None:
        if self._open:
            self._open = False
            try:
                self._m.nvmlShutdown()
            except Exception:  # noqa: BLE001 (shutting down: nothing left to do about it)
                pass

    # -- errors ---------------------------------------------------------------------------------
    def is_no_permission(self, exc: BaseException) -> bool:
        return getattr(exc, "value", None) == getattr(self._m, "NVML_ERROR_NO_PERMISSION", 4)

    def is_not_supported(self, exc: BaseException) -> bool:
        return getattr(exc, "value", None) == getattr(self._m, "NVML_ERROR_NOT_SUPPORTED", 3)

    def _try(self, fn, *args):
        """``fn(*args)``, or None where NVML answers with an error (not supported, no permission)."""
        try:
            return fn(*args)
        except self._m.NVMLError:
            return None

    # -- devices --------------------------------------------------------------------------------
    def handle(self, *, pci_bus_id: str | None = None, index: int = 0):
        try:
            if pci_bus_id is not None:
                bus = pci_bus_id.encode() if isinstance(pci_bus_id, str) else pci_bus_id
                return self._m.nvmlDeviceGetHandleByPciBusId(bus)
            return self._m.nvmlDeviceGetHandleByIndex(index)
        except self._m.NVMLError as exc:
            raise NvmlUnavailable(f"NVML cannot open the device: {exc}") from exc

    def sample(self, handle) -> Sample:
        m = self._m
        reasons_fn = getattr(m, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            m, "nvmlDeviceGetCurrentClocksThrottleReasons"
        )
        power_mw = self._try(m.nvmlDeviceGetPowerUsage, handle)
        util = self._try(m.nvmlDeviceGetUtilizationRates, handle)
        return Sample(
            t_ns=time.perf_counter_ns(),
            sm_mhz=self.sm_clock(handle),
            mem_mhz=self._try(m.nvmlDeviceGetClockInfo, handle, m.NVML_CLOCK_MEM),
            reasons=self._try(reasons_fn, handle),
            pstate=self._try(m.nvmlDeviceGetPerformanceState, handle),
            temperature_c=self._try(m.nvmlDeviceGetTemperature, handle, m.NVML_TEMPERATURE_GPU),
            power_w=None if power_mw is None else power_mw / 1000.0,
            utilization_pct=None if util is None else getattr(util, "gpu", None),
        )

    def sm_clock(self, handle) -> int | None:
        """The SM clock now (MHz), one NVML call: what a reading between two timed calls can
        afford (``sample`` makes seven); None where NVML would not say."""
        return self._try(self._m.nvmlDeviceGetClockInfo, handle, self._m.NVML_CLOCK_SM)

    def max_clocks(self, handle) -> tuple[int | None, int | None]:
        m = self._m
        return (
            self._try(m.nvmlDeviceGetMaxClockInfo, handle, m.NVML_CLOCK_SM),
            self._try(m.nvmlDeviceGetMaxClockInfo, handle, m.NVML_CLOCK_MEM),
        )

    def default_clocks(self, handle) -> tuple[int | None, int | None]:
        """The default applications clocks: the GPU's base operating point."""
        m = self._m
        return (
            self._try(m.nvmlDeviceGetDefaultApplicationsClock, handle, m.NVML_CLOCK_SM),
            self._try(m.nvmlDeviceGetDefaultApplicationsClock, handle, m.NVML_CLOCK_MEM),
        )

    def compute_pids(self, handle) -> list[int] | None:
        procs = self._try(self._m.nvmlDeviceGetComputeRunningProcesses, handle)
        if procs is None:
            return None
        return [int(p.pid) for p in procs]

    def device_info(self, handle) -> dict:
        m = self._m

        def text(value):
            return value.decode() if isinstance(value, bytes) else value

        memory = self._try(m.nvmlDeviceGetMemoryInfo, handle)
        ecc = self._try(m.nvmlDeviceGetEccMode, handle)
        max_sm, max_mem = self.max_clocks(handle)
        base_sm, base_mem = self.default_clocks(handle)
        cuda_driver = self._try(m.nvmlSystemGetCudaDriverVersion)
        return {
            "name": text(self._try(m.nvmlDeviceGetName, handle)),
            "memory_bytes": None if memory is None else int(memory.total),
            "ecc_current": None if ecc is None else bool(ecc[0]),
            "persistence_mode": (
                None
                if (p := self._try(m.nvmlDeviceGetPersistenceMode, handle)) is None
                else bool(p)
            ),
            "nvidia_driver": text(self._try(m.nvmlSystemGetDriverVersion)),
            "cuda_driver_nvml": None
            if cuda_driver is None
            else f"{cuda_driver // 1000}.{(cuda_driver % 1000) // 10}",
            "max_sm_mhz": max_sm,
            "max_mem_mhz": max_mem,
            "default_sm_mhz": base_sm,
            "default_mem_mhz": base_mem,
        }

    # -- locking (opt-in; raises the module's NVMLError) ----------------------------------------
    def set_gpu_locked_clocks(self, handle, mhz: int) -> None:
        self._m.nvmlDeviceSetGpuLockedClocks(handle, mhz, mhz)

    def reset_gpu_locked_clocks(self, handle) -> None:
        self._m.nvmlDeviceResetGpuLockedClocks(handle)

    def set_memory_locked_clocks(self, handle, mhz: int) -> None:
        self._m.nvmlDeviceSetMemoryLockedClocks(handle, mhz, mhz)

    def reset_memory_locked_clocks(self, handle) -> None:
        self._m.nvmlDeviceResetMemoryLockedClocks(handle)


__all__ = ["Nvml", "NvmlUnavailable", "Sample", "REASON_BITS", "BENIGN_REASONS", "reason_names"]
