"""Is there a CUDA GPU here? Exit 0 when the CUDA driver sees at least one device, else print why
and exit 3 (``ExitCode.ENVIRONMENT``, protocol.md §8).

`make bench` asks this first, before installing or preparing anything, so that a machine without
a GPU is told so in a second instead of after a few hundred MB of packages. It therefore imports
nothing outside the standard library: it asks the driver itself (libcuda, through ctypes), which
is also what CuPy needs later on. Whether CuPy is installed is checked after the install.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engines.exitcodes import ExitCode  # noqa: E402  (standard library only)


def gpu_problem() -> str | None:
    """None when the CUDA driver reports a device, else what is missing."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "no CUDA driver (libcuda.so.1 cannot be loaded)"
    status = driver.cuInit(0)
    if status != 0:
        # 100 is CUDA_ERROR_NO_DEVICE (also what CUDA_VISIBLE_DEVICES= gives)
        return "the CUDA driver sees no GPU" if status == 100 else f"the CUDA driver failed to start (cuInit: {status})"
    count = ctypes.c_int(0)
    status = driver.cuDeviceGetCount(ctypes.byref(count))
    if status != 0 or count.value < 1:
        return "the CUDA driver sees no GPU"
    return None


def main() -> int:
    problem = gpu_problem()
    if problem:
        print(f"no CUDA GPU: {problem}", file=sys.stderr)
        return ExitCode.ENVIRONMENT
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
