"""Programmatic dependent launch (Hopper and later; CUDA 12.3+ graphs) of the operators engine's
device loop: each ``ops_loop`` launch of a captured replay may be scheduled while the previous one
still runs, and waits on the device (``griddepcontrol.wait``, operators.cu) for it to complete.
A phase then no longer pays the launch of the next grid after its last block: on the H200 the
operators engine spent about 2.5 µs a phase more than the fused kernel's grid barrier (issue 26).

CuPy's kernel call takes no launch attributes, so these launches go through cuda-bindings'
``cuLaunchKernelEx``. Off unless ``ENGINES_OPERATORS_PDL=1`` (or ``enabled(True)``) while the
GPU tests and the benchmarks decide it; the results never depend on it.
"""

from __future__ import annotations


import numpy as np

from ...errors import CudaError, InvalidArgumentError
from . import switches

ENV = "ENGINES_OPERATORS_PDL"
DEFAULT = False
#: Compute capability from which griddepcontrol exists (sm_90).
MIN_MAJOR = 9


def requested() -> bool:
    """Whether the environment asks for programmatic launches (``ENGINES_OPERATORS_PDL``)."""
    value = switches.raw(ENV).strip()
    if value == "":
        return DEFAULT
    if value not in ("0", "1"):
        raise InvalidArgumentError(f"{ENV} must be 0 or 1, got {value!r}")
    return value == "1"


def usable(compute_major: int) -> bool:
    """Programmatic launches where asked and where the device has them."""
    return requested() and int(compute_major) >= MIN_MAJOR


def argument_block(args) -> tuple[np.ndarray, np.ndarray]:
    """``cuLaunchKernelEx``'s kernel parameters for arguments that are all device buffers: the
    pointer values, and the array of their addresses (keep both alive across the call)."""
    values = np.array([int(a.data.ptr) for a in args], dtype=np.uint64)
    addresses = values.ctypes.data + 8 * np.arange(values.size, dtype=np.uint64)
    return values, addresses


def launch(kernel, blocks: int, threads: int, args, stream) -> None:
    """Launch the CuPy ``kernel`` (a RawKernel of buffer arguments) on ``stream`` with the
    programmatic-stream-serialization attribute; inside a stream capture it becomes a kernel node
    with a programmatic edge from the previous one."""
    from cuda.bindings import driver

    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = int(blocks), 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = int(threads), 1, 1
    config.sharedMemBytes = 0
    config.hStream = driver.CUstream(int(stream.ptr))
    attribute = driver.CUlaunchAttribute()
    attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    attribute.value.programmaticStreamSerializationAllowed = 1
    config.attrs = [attribute]
    config.numAttrs = 1
    function = driver.CUfunction(int(getattr(kernel, "kernel", kernel).ptr))
    # ``values`` must outlive the call (``addresses`` point into it); the driver copies them then
    values, addresses = argument_block(args)
    (result,) = driver.cuLaunchKernelEx(config, function, int(addresses.ctypes.data), 0)
    if result != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(result)
        raise CudaError(f"CUDA error {name.decode() if isinstance(name, bytes) else name} "
                        f"in cuLaunchKernelEx (programmatic launch of {len(values)} arguments)")


__all__ = ["ENV", "argument_block", "launch", "requested", "usable"]
