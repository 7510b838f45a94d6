"""What the campaign record says about where it ran (docs/protocol.md §9): code, host, GPU.

No host name and no user name are recorded; paths are relative to the repository.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import time
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def git_state(repo: Path = REPO_ROOT, exclude=()) -> dict:
    """``{"commit": sha or None, "dirty": bool}``; a tree without commits or git counts as dirty.

    ``exclude``: folders whose changes are not the code's, the records a measurement is writing
    into the tree (``make bench-commit`` into results/, a sweep whose ``--out`` is inside the
    checkout such as ``SWEEP_OUT=results/sweep``): its own sweep.json and finished campaigns would
    otherwise make a resumed or later campaign refuse a clean checkout. Matched literally (a name
    with ``*`` hides nothing else). A folder outside ``repo``, the repository itself, or one that
    holds tracked code (Python or CUDA sources: an ``--out`` pointed at the code by mistake) excludes
    nothing."""

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, timeout=30, check=False
        )

    try:
        head = git("rev-parse", "--verify", "HEAD")
        records = [path for path in _inside(repo, exclude) if not _holds_code(git, path)]
        status = git("status", "--porcelain", "--untracked-files=normal", "--", ".",
                     *(f":(exclude,literal){path}" for path in records))
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": True}
    commit = head.stdout.strip() if head.returncode == 0 else None
    dirty = status.returncode != 0 or bool(status.stdout.strip()) or commit is None
    return {"commit": commit, "dirty": dirty}


def _inside(repo: Path, folders) -> list[str]:
    """The folders under ``repo``, as paths relative to it (git pathspecs)."""
    root = Path(repo).resolve()
    inside = []
    for folder in folders:
        try:
            relative = Path(folder).resolve().relative_to(root)
        except ValueError:
            continue
        if relative.parts:  # excluding the repository itself would hide every change
            inside.append(relative.as_posix())
    return inside


#: What makes a folder code rather than records: tracked files with these endings.
CODE_SUFFIXES = (".py", ".cu", ".cuh", ".sh", ".toml", ".j2")


def _holds_code(git, path: str) -> bool:
    """Whether the tracked files under ``path`` (relative to the repository) include code; a git
    failure counts as code (the folder is then not left out)."""
    listed = git("ls-files", "-z", "--", f":(literal){path}")
    if listed.returncode != 0:
        return True
    return any(name.endswith(CODE_SUFFIXES) or name.rsplit("/", 1)[-1] == "Makefile"
               for name in listed.stdout.split("\0") if name)


def tool_version() -> str:
    try:
        return metadata.version("ssspab")
    except metadata.PackageNotFoundError:
        return "0+checkout"


def cpu_model() -> str:
    """The host CPU's model name (Linux's /proc/cpuinfo), else what the platform module says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


#: host_probe's defaults: calls of each part per timed run, and timed runs (the median counts).
HOST_PROBE_CALLS = 1000
HOST_PROBE_REPEATS = 7
_PROBE_N = 100  # the NumPy part's arrays: 100 int64 values, as a batch of 100 changes has


class _ProbeState:
    """What the pure-Python part reads and writes: attributes and a dict, as an update's host code
    reads its graph's and result's attributes and options."""

    def __init__(self):
        self.count = 0
        self.last = None
        self.options = {"objective": 0, "mode": "auto", "checked": True}


def _probe_python(state, *, key, value, weight=1):
    """The pure-Python part: a call with keyword arguments, a dict built and read, attributes read
    and written."""
    options = state.options
    entry = {"key": key, "value": value, "weight": weight, "mode": options["mode"]}
    if options.get("checked") and entry["weight"] > 0:
        state.count += weight
    state.last = entry
    return entry.get("missing", len(entry)) + state.count


def _probe_arrays():
    """The NumPy part's fixed inputs: two deterministic permutations-with-repeats of 0 .. 99."""
    import numpy as np

    index = np.arange(_PROBE_N, dtype=np.int64)
    return (index * 37) % _PROBE_N, (index * 11 + 3) % _PROBE_N


def _probe_numpy(src, dst):
    """The small-NumPy part: a handful of calls on 100-element int64 arrays (keys, a concatenation,
    np.unique, comparisons), as an update checks and sorts a batch of 100 changes on the host."""
    import numpy as np

    keys = np.concatenate((src * _PROBE_N + dst, dst * _PROBE_N + src))
    unique = np.unique(keys)
    inside = (unique >= 0) & (unique < _PROBE_N * _PROBE_N)
    return int(np.count_nonzero(inside)) + int(np.flatnonzero(src == dst).size)


def host_probe(*, calls: int = HOST_PROBE_CALLS, repeats: int = HOST_PROBE_REPEATS,
               clock=time.perf_counter_ns) -> dict:
    """How fast this host runs the kind of work one small ``update()`` call does on the host: a
    fixed, deterministic workload timed with ``clock`` (integer nanoseconds).

    Each of ``repeats`` runs times ``calls`` calls of the pure-Python part (a small function called
    with keyword arguments, dict and attribute work), then ``calls`` calls of the small-NumPy part
    (np.concatenate, np.unique, comparisons on 100-element int64 arrays), each part between two
    readings of ``clock``. Reported per part: the median over the runs of a run's nanoseconds,
    divided by ``calls``, in microseconds (``python_call_us``, ``numpy_call_us``), with every run's
    nanoseconds and the parameters. One untimed call of each part comes first. The defaults take
    well under a second (about 0.1 s on a current server CPU)."""
    if calls < 1 or repeats < 1:
        raise ValueError(f"host_probe needs calls >= 1 and repeats >= 1, got {calls} and {repeats}")
    state = _ProbeState()
    src, dst = _probe_arrays()
    _probe_python(state, key=0, value=0)  # untimed: first-call costs (imports, caches)
    _probe_numpy(src, dst)
    runs = {"python": [], "numpy": []}
    for _ in range(repeats):
        start = clock()
        for i in range(calls):
            _probe_python(state, key=i, value=i)
        runs["python"].append(clock() - start)
        start = clock()
        for _ in range(calls):
            _probe_numpy(src, dst)
        runs["numpy"].append(clock() - start)
    # the clock by name (a callable object by its class's: never a repr with an address)
    timer = ("time.perf_counter_ns" if clock is time.perf_counter_ns
             else getattr(clock, "__qualname__", type(clock).__qualname__))
    return {
        "python_call_us": statistics.median(runs["python"]) / calls / 1e3,
        "numpy_call_us": statistics.median(runs["numpy"]) / calls / 1e3,
        "calls": calls,
        "repeats": repeats,
        "array_size": _PROBE_N,
        "timer": timer,
        "python_runs_ns": runs["python"],
        "numpy_runs_ns": runs["numpy"],
    }


def probe_figures(probe: dict) -> str:
    """host_probe's two figures as the records' readers print them (the stream's Machine line, the
    report's CPU line)."""
    return (f"{probe['python_call_us']:.2f} µs a Python call, {probe['numpy_call_us']:.1f} µs a small "
            "NumPy call")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def host_info() -> dict:
    """The host of a campaign or sweep record: the CPU by name and by speed (host_probe: two hosts
    of one GPU model differ in what every update's host side costs), the software versions."""
    import numpy
    import psutil

    return {
        "cpu_model": cpu_model(),
        "host_probe": host_probe(),
        "logical_cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": _version("scipy"),
        "pandas": _version("pandas"),
        "pyarrow": _version("pyarrow"),
        "nvidia_ml_py": _version("nvidia-ml-py"),
        **cuda_versions(),
    }


def cuda_versions() -> dict:
    """CuPy, NVRTC and CUDA runtime/driver versions; None where CuPy or CUDA is missing."""
    info = {"cupy": None, "nvrtc": None, "cuda_runtime": None, "cuda_driver": None}
    try:
        import cupy
    except ImportError:
        return info
    info["cupy"] = cupy.__version__

    def fmt(v):
        return f"{v // 1000}.{(v % 1000) // 10}"

    try:
        info["cuda_runtime"] = fmt(cupy.cuda.runtime.runtimeGetVersion())
        info["cuda_driver"] = fmt(cupy.cuda.runtime.driverGetVersion())
        major, minor = cupy.cuda.nvrtc.getVersion()
        info["nvrtc"] = f"{major}.{minor}"
    except Exception:  # noqa: BLE001 (a broken CUDA install: record what is known)
        pass
    return info


def cuda_device_info(device: int) -> dict:
    """Name, SM count, memory and PCI bus id of a CUDA device, through CuPy."""
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(device)
    name = props.get("name", b"")
    return {
        "device": device,
        "name": name.decode() if isinstance(name, bytes) else name,
        "sm_count": int(props.get("multiProcessorCount", 0)),
        "memory_bytes": int(props.get("totalGlobalMem", 0)),
        "compute_capability": f"{props.get('major')}.{props.get('minor')}",
        "pci_bus_id": cupy.cuda.Device(device).pci_bus_id,
    }


__all__ = ["git_state", "tool_version", "cpu_model", "host_probe", "probe_figures", "host_info",
           "cuda_versions", "cuda_device_info", "REPO_ROOT"]
