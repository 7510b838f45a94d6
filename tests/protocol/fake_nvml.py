"""A scripted stand-in for ``pynvml``: the functions the adapter calls, with recorded calls.

Clocks, event reasons and compute processes are attributes a test sets (or callables it
scripts); any function can be made to fail with an NVML error code. The lock functions change the
reported SM/memory clocks the way a real driver would, so a lock can be verified.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_UNINITIALIZED = 1
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0

THROTTLE_SW_POWER_CAP = 0x4
THROTTLE_HW_SLOWDOWN = 0x8
REASON_GPU_IDLE = 0x1


class NVMLError(Exception):
    def __init__(self, value: int):
        super().__init__(f"NVML error {value}")
        self.value = value


class FakeNvml:
    """Module-like: ``Nvml(FakeNvml(...))`` or ``Nvml.load(FakeNvml(...))``."""

    NVMLError = NVMLError
    NVML_ERROR_NOT_SUPPORTED = NVML_ERROR_NOT_SUPPORTED
    NVML_ERROR_NO_PERMISSION = NVML_ERROR_NO_PERMISSION
    NVML_CLOCK_SM = NVML_CLOCK_SM
    NVML_CLOCK_MEM = NVML_CLOCK_MEM
    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU

    def __init__(self, *, sm=1980, mem=2619, max_sm=1980, max_mem=2619, base_sm=1590, base_mem=2619,
                 reasons=0, processes=(), log_path=None):
        self.sm = sm
        self.mem = mem
        self.max_sm = max_sm
        self.max_mem = max_mem
        self.base_sm = base_sm
        self.base_mem = base_mem
        self.reasons = reasons  # an int, or a callable returning one
        self.processes = list(processes)
        self.fail: dict[str, int] = {}  # function name -> NVML error code to raise
        self.calls: list[tuple] = []
        self.locked_sm = None
        self.locked_mem = None
        self.log_path = log_path  # lock/reset calls are also appended here (subprocess tests)
        self._lock = threading.Lock()

    def _call(self, name, *args):
        with self._lock:
            self.calls.append((name, args))
        if self.log_path and ("Lock" in name or "Reset" in name):
            with open(self.log_path, "a", encoding="utf-8") as handle:
                handle.write(" ".join([name, *map(str, args[1:])]) + "\n")
        if name in self.fail:
            raise NVMLError(self.fail[name])

    def called(self, name) -> list[tuple]:
        return [args for n, args in self.calls if n == name]

    # lifecycle and devices
    def nvmlInit(self):
        self._call("nvmlInit")

    def nvmlShutdown(self):
        self._call("nvmlShutdown")

    def nvmlDeviceGetHandleByIndex(self, index):
        self._call("nvmlDeviceGetHandleByIndex", index)
        return ("gpu", index)

    def nvmlDeviceGetHandleByPciBusId(self, bus):
        self._call("nvmlDeviceGetHandleByPciBusId", bus)
        return ("gpu", bus)

    # readings
    def nvmlDeviceGetClockInfo(self, handle, kind):
        self._call("nvmlDeviceGetClockInfo", handle, kind)
        return self.sm if kind == NVML_CLOCK_SM else self.mem

    def nvmlDeviceGetMaxClockInfo(self, handle, kind):
        self._call("nvmlDeviceGetMaxClockInfo", handle, kind)
        return self.max_sm if kind == NVML_CLOCK_SM else self.max_mem

    def nvmlDeviceGetDefaultApplicationsClock(self, handle, kind):
        self._call("nvmlDeviceGetDefaultApplicationsClock", handle, kind)
        return self.base_sm if kind == NVML_CLOCK_SM else self.base_mem

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        self._call("nvmlDeviceGetCurrentClocksEventReasons", handle)
        return self.reasons() if callable(self.reasons) else self.reasons

    def nvmlDeviceGetPerformanceState(self, handle):
        self._call("nvmlDeviceGetPerformanceState", handle)
        return 0

    def nvmlDeviceGetTemperature(self, handle, sensor):
        self._call("nvmlDeviceGetTemperature", handle, sensor)
        return 45

    def nvmlDeviceGetPowerUsage(self, handle):
        self._call("nvmlDeviceGetPowerUsage", handle)
        return 250_000

    def nvmlDeviceGetUtilizationRates(self, handle):
        self._call("nvmlDeviceGetUtilizationRates", handle)
        return SimpleNamespace(gpu=90, memory=40)

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        self._call("nvmlDeviceGetComputeRunningProcesses", handle)
        return [SimpleNamespace(pid=p, usedGpuMemory=0) for p in self.processes]

    def nvmlDeviceGetMemoryInfo(self, handle):
        self._call("nvmlDeviceGetMemoryInfo", handle)
        return SimpleNamespace(total=141 * 2**30, free=140 * 2**30, used=2**30)

    def nvmlDeviceGetEccMode(self, handle):
        self._call("nvmlDeviceGetEccMode", handle)
        return (1, 1)

    def nvmlDeviceGetPersistenceMode(self, handle):
        self._call("nvmlDeviceGetPersistenceMode", handle)
        return 1

    def nvmlDeviceGetName(self, handle):
        self._call("nvmlDeviceGetName", handle)
        return "Fake H200"

    def nvmlSystemGetDriverVersion(self):
        self._call("nvmlSystemGetDriverVersion")
        return "580.00"

    def nvmlSystemGetCudaDriverVersion(self):
        self._call("nvmlSystemGetCudaDriverVersion")
        return 13000

    # locking
    def nvmlDeviceSetGpuLockedClocks(self, handle, lo, hi):
        self._call("nvmlDeviceSetGpuLockedClocks", handle, lo, hi)
        self.locked_sm = (lo, hi)
        self._unlocked_sm, self.sm = self.sm, lo

    def nvmlDeviceResetGpuLockedClocks(self, handle):
        self._call("nvmlDeviceResetGpuLockedClocks", handle)
        if self.locked_sm is not None:
            self.sm = self._unlocked_sm
        self.locked_sm = None

    def nvmlDeviceSetMemoryLockedClocks(self, handle, lo, hi):
        self._call("nvmlDeviceSetMemoryLockedClocks", handle, lo, hi)
        self.locked_mem = (lo, hi)
        self._unlocked_mem, self.mem = self.mem, lo

    def nvmlDeviceResetMemoryLockedClocks(self, handle):
        self._call("nvmlDeviceResetMemoryLockedClocks", handle)
        if self.locked_mem is not None:
            self.mem = self._unlocked_mem
        self.locked_mem = None
