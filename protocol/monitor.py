"""Contamination of a round (docs/protocol.md §5): foreign GPU processes and foreign CPU load.

Foreign CPU load is the system's busy CPU time minus this process tree's, divided by the wall
time. The kernel counts CPU time in ticks (10 ms on most Linux systems), so a window shorter than
a few ticks says nothing: every window is widened backwards over earlier readings to at least
``min_window_s``, and the readings are taken outside the timers.
"""

from __future__ import annotations

import bisect
import os
import time
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class CpuReading:
    t_ns: int
    system_busy_s: float
    own_s: float


def _own_tree_cpu_s(process: psutil.Process) -> float:
    total = 0.0
    times = process.cpu_times()
    total += times.user + times.system + times.children_user + times.children_system
    for child in process.children(recursive=True):
        try:
            t = child.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        total += t.user + t.system
    return total


# Busy CPU time on Linux: guest time is already inside user/nice, and idle, iowait and steal
# are time no process of this machine ran.
_BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq", "dpc", "interrupt")


def _system_busy_s() -> float:
    t = psutil.cpu_times()
    return sum(getattr(t, f, 0.0) for f in _BUSY_FIELDS)


class CpuLoadMonitor:
    """Foreign CPU load in cores over a window, from psutil readings taken at round boundaries."""

    def __init__(self, *, min_window_s: float = 0.25):
        self._process = psutil.Process(os.getpid())
        self._min_window_ns = int(min_window_s * 1e9)
        self._readings: list[CpuReading] = []

    def read(self) -> CpuReading:
        r = CpuReading(time.perf_counter_ns(), _system_busy_s(), _own_tree_cpu_s(self._process))
        self._readings.append(r)
        # keep the list short: only what the widest window could reach
        if len(self._readings) > 4096:
            del self._readings[:2048]
        return r

    def foreign_cores(self, start: CpuReading, end: CpuReading) -> float:
        """Foreign cores busy between two readings, the start widened to ``min_window_s``."""
        times = [r.t_ns for r in self._readings]
        i = bisect.bisect_right(times, end.t_ns - self._min_window_ns) - 1
        begin = start
        if i >= 0 and self._readings[i].t_ns < start.t_ns:
            begin = self._readings[i]
        elif self._readings and self._readings[0].t_ns < start.t_ns:
            begin = self._readings[0]
        wall_s = (end.t_ns - begin.t_ns) / 1e9
        if wall_s <= 0:
            return 0.0
        foreign = (end.system_busy_s - begin.system_busy_s) - (end.own_s - begin.own_s)
        return max(foreign, 0.0) / wall_s


def own_process_tree() -> set[int]:
    me = psutil.Process(os.getpid())
    pids = {me.pid}
    try:
        pids.update(c.pid for c in me.children(recursive=True))
    except psutil.Error:
        pass
    return pids


def foreign_gpu_processes(nvml, handle, *, own_context: bool | int = False) -> list[int] | None:
    """PIDs of compute processes on the device outside this process tree; None when unknown.

    Inside a container NVML reports host PIDs, so this process's own entry carries a PID that
    does not exist here. When this process tree holds CUDA contexts (``own_context``: True for
    one, or how many: the campaign process and its worker process) and NVML lists none of our
    PIDs, that many PIDs that do not exist in our namespace are taken to be ours; any further
    entry is foreign.
    """
    if nvml is None or handle is None:
        return None
    pids = nvml.compute_pids(handle)
    if pids is None:
        return None
    mine = own_process_tree()
    others = sorted(p for p in pids if p not in mine)
    ours = int(own_context)
    if ours and len(others) == len(pids):
        invisible = [p for p in others if not psutil.pid_exists(p)]
        for pid in invisible[:ours]:
            others.remove(pid)
    return others


def judge_contamination(
    foreign_cpu_cores: float | None, foreign_gpu_pids: list[int] | None, *, max_foreign_cpu: float
) -> str | None:
    if foreign_gpu_pids:
        return f"foreign GPU process(es): {', '.join(map(str, foreign_gpu_pids))}"
    if foreign_cpu_cores is not None and foreign_cpu_cores > max_foreign_cpu:
        return f"foreign CPU load {foreign_cpu_cores:.2f} cores > {max_foreign_cpu:g}"
    return None


__all__ = [
    "CpuReading",
    "CpuLoadMonitor",
    "own_process_tree",
    "foreign_gpu_processes",
    "judge_contamination",
]
