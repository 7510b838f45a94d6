"""What the campaign record says about where it ran (docs/protocol.md §9): code, host, GPU.

No host name and no user name are recorded; paths are relative to the repository.
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def git_state(repo: Path = REPO_ROOT) -> dict:
    """``{"commit": sha or None, "dirty": bool}``; a tree without commits or git counts as dirty."""

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, timeout=30, check=False
        )

    try:
        head = git("rev-parse", "--verify", "HEAD")
        status = git("status", "--porcelain", "--untracked-files=normal")
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": True}
    commit = head.stdout.strip() if head.returncode == 0 else None
    dirty = status.returncode != 0 or bool(status.stdout.strip()) or commit is None
    return {"commit": commit, "dirty": dirty}


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


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def host_info() -> dict:
    import numpy
    import psutil

    return {
        "cpu_model": cpu_model(),
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


__all__ = ["git_state", "tool_version", "host_info", "cuda_versions", "cuda_device_info", "REPO_ROOT"]
