"""CUDA runtime pieces shared by the fused and operators engines (algorithm.md §10, §12).

- lazy CuPy import (this module imports on machines without CuPy);
- device capability (cooperative launch) with the test hook ``without_cooperative_launch()`` and
  the environment variable ``ENGINES_NO_COOPERATIVE_LAUNCH=1``;
- compilation of an engine's source through ``cupy.RawModule`` with the shared header inlined
  (CuPy's cache key covers the source string, not headers found through ``-I``: cupy/cupy#6159),
  templates instantiated for every supported (vertex, offset) type pair, and an in-process cache
  per (engine, device);
- occupancy and grid sizing (algorithm.md §10.2);
- the one stream per device and THE synchronization helper (algorithm.md §10.3), which both engines
  use and which is the only place a run waits for the device;
- translation of CuPy / CUDA exceptions into ``CudaError`` / ``OutOfMemoryError``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import CudaError, Error, NotSupportedError, OutOfMemoryError
from . import switches

#: Every kernel of both engines runs blocks of this many threads (kernels.cuh SSSP_BLOCK).
BLOCK_SIZE = 256
#: Environment switch of the "no cooperative launch" test hook (algorithm.md §10.1, D6).
NO_COOPERATIVE_ENV = "ENGINES_NO_COOPERATIVE_LAUNCH"
#: The shared header, inlined into every engine source string.
HEADER_NAME = "kernels.cuh"
SOURCE_DIR = Path(__file__).resolve().parent

#: (vertex dtype, offset dtype) pairs every engine instantiates (D2, algorithm.md §3.1), with their
#: C names.
TYPE_PAIRS = ((np.dtype(np.int32), np.dtype(np.int32)), (np.dtype(np.int32), np.dtype(np.int64)))
C_TYPE_NAMES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}

#: Compiler options for NVRTC (through CuPy). The header uses C++17 features only.
NVRTC_OPTIONS = ("-std=c++17",)

_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"kernels\.cuh"\s*$', re.MULTILINE)


# ---------------------------------------------------------------------------------------------
# Lazy CuPy


#: CuPy once imported: the engines ask for it about ten times per update, and each import
#: statement goes through the import machinery (about a microsecond) even when CuPy is loaded.
_cupy = None


def cupy_module():
    """Import and return CuPy, or raise ``NotSupportedError`` when it is missing."""
    global _cupy
    if _cupy is not None:
        return _cupy
    try:
        import cupy  # noqa: PLC0415 - imported lazily so the package imports without CuPy
    except Exception as exc:  # ImportError, or a broken CUDA installation raising at import
        raise NotSupportedError(
            f"backend='cuda' needs CuPy and a CUDA GPU; CuPy could not be imported ({exc}); "
            "use backend='host'"
        ) from exc
    _cupy = cupy
    return cupy


#: Set once a device was seen. The device count of a process is fixed when CUDA initializes
#: (CUDA_VISIBLE_DEVICES is read then), and cudaGetDeviceCount costs about 30 us a call on the
#: H200 machine: asked twice per update, it was a sixth of a small update's whole call (cProfile
#: of bench/stream.py on luxembourg_osm, 7011977). A negative answer is asked again: CuPy or a
#: driver may become usable later in a long process (a fixed installation, a test's hook).
_seen_device = False


def is_available() -> bool:
    """CuPy importable and at least one CUDA device visible; never raises."""
    global _seen_device
    if _seen_device:
        return True
    try:
        cupy = cupy_module()
        _seen_device = int(cupy.cuda.runtime.getDeviceCount()) > 0
    except Exception:
        return False
    return _seen_device


def current_device() -> int:
    """The id of CuPy's current device."""
    cupy = cupy_module()
    with cuda_errors("querying the current device"):
        return int(cupy.cuda.runtime.getDevice())


# ---------------------------------------------------------------------------------------------
# Error translation


class _CudaErrors:
    """The context manager of ``cuda_errors``: a class rather than a generator, because a small
    update enters it a few dozen times (about a microsecond each as a generator)."""

    __slots__ = ("what",)

    def __init__(self, what: str):
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, traceback) -> bool:
        if exc is None or not isinstance(exc, Exception) or isinstance(exc, Error):
            return False  # success, Ctrl-C and the like, or the engines' own errors: unchanged
        what = self.what
        if isinstance(exc, MemoryError):  # cupy.cuda.memory.OutOfMemoryError derives from it
            raise OutOfMemoryError(f"out of memory while {what}: {exc}") from exc
        if not _is_cuda_exception(exc):
            return False
        if _is_out_of_memory_status(exc):
            raise OutOfMemoryError(f"out of memory while {what}: {exc}") from exc
        raise CudaError(f"CUDA failure while {what}: {exc}", code=getattr(exc, "status", None)) from exc


def cuda_errors(what: str) -> _CudaErrors:
    """Turn CuPy / CUDA failures inside the block into ``CudaError`` / ``OutOfMemoryError``.

    Errors of the engines' own hierarchy pass through unchanged.
    """
    return _CudaErrors(what)


def _is_cuda_exception(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    name = type(exc).__name__
    if module.startswith(("cupy", "cupy_backends", "cuda")):
        return True
    return name in {"CUDARuntimeError", "CUDADriverError", "CompileException", "NVRTCError"}


def _is_out_of_memory_status(exc: BaseException) -> bool:
    # cudaErrorMemoryAllocation = 2 (runtime), CUDA_ERROR_OUT_OF_MEMORY = 2 (driver).
    name = type(exc).__name__
    return name in {"CUDARuntimeError", "CUDADriverError"} and getattr(exc, "status", None) == 2


# ---------------------------------------------------------------------------------------------
# Device capability and the "no cooperative launch" hook


_hook_lock = threading.Lock()
_hook_depth = 0


@contextlib.contextmanager
def without_cooperative_launch():
    """Test hook (D6, algorithm.md §10.1): inside the block, no device counts as supporting
    cooperative launch.

    ``cuda_engine="automatic"`` then selects the operators engine and ``"fused"`` raises
    ``NotSupportedError``. Nests; thread-safe.
    """
    global _hook_depth
    with _hook_lock:
        _hook_depth += 1
    try:
        yield
    finally:
        with _hook_lock:
            _hook_depth -= 1


def cooperative_launch_disabled() -> bool:
    """True while the test hook is active or ``ENGINES_NO_COOPERATIVE_LAUNCH`` is set (not 0)."""
    if _hook_depth > 0:
        return True
    value = switches.raw(NO_COOPERATIVE_ENV).strip().lower()
    return value not in ("", "0", "false", "no", "off")


@dataclass(frozen=True)
class DeviceInfo:
    device: int
    name: str
    multiprocessors: int
    max_threads_per_multiprocessor: int
    cooperative_launch: bool  # the hardware attribute, before the test hook
    compute_major: int = 0  # the compute capability's major (9 on Hopper)


@functools.lru_cache(maxsize=None)
def device_info(device: int) -> DeviceInfo:
    """Properties of one device, queried once per process."""
    cupy = cupy_module()
    with cuda_errors(f"querying the properties of device {device}"):
        props = cupy.cuda.runtime.getDeviceProperties(int(device))
    name = props.get("name", b"")
    if isinstance(name, bytes):
        name = name.decode(errors="replace")
    return DeviceInfo(
        device=int(device),
        name=str(name),
        multiprocessors=int(props["multiProcessorCount"]),
        max_threads_per_multiprocessor=int(props["maxThreadsPerMultiProcessor"]),
        cooperative_launch=bool(props.get("cooperativeLaunch", 0)),
        compute_major=int(props.get("major", 0)),
    )


def supports_cooperative_launch(device: int) -> bool:
    """The device attribute, unless the test hook or the environment variable hides it."""
    if cooperative_launch_disabled():
        return False
    return device_info(device).cooperative_launch


# ---------------------------------------------------------------------------------------------
# Sources and compilation


def read_source(filename: str) -> str:
    """The text of an engine source with the shared header inlined in place of its include."""
    source = (SOURCE_DIR / filename).read_text()
    header = (SOURCE_DIR / HEADER_NAME).read_text()
    inlined, count = _INCLUDE_RE.subn(lambda _m: header, source, count=1)
    if count != 1:
        raise CudaError(f'{filename} must include "{HEADER_NAME}" exactly once')
    return inlined


#: Compile-time variants of the engines' modules (kernels.cuh): each is defined as 1 ahead of the
#: source of its own module, so a variant's code and registers never reach the default kernels.
#: SSSP_PUSH_BATCHED: the "batched" push expansion (push.module_defines); SSSP_FUSED_SOLO: the
#: fused engine's solo push (fused.solo_limit); SSSP_WIDE_PASSES: both engines' wide O(n) passes
#: (passes.module_defines, ENGINES_WIDE_PASSES); SSSP_BLOCK_APPEND: both engines' block-aggregated
#: near-list appends (appends.module_defines, ENGINES_BLOCK_APPEND); SSSP_FUSED_CAPTURED: the fused
#: update's per-update scalars read from the control block (fused.capture_enabled,
#: ENGINES_FUSED_CAPTURE); SSSP_PUSH_CHAIN: both engines' lane-local chain following
#: (chains.module_defines, ENGINES_PUSH_CHAIN); SSSP_MULTI_HOP_JUMP: both engines' multi-hop pointer
#: jumping (jumps.module_defines, ENGINES_MULTI_HOP_JUMP).
VARIANT_DEFINES = ("SSSP_PUSH_BATCHED", "SSSP_FUSED_SOLO", "SSSP_WIDE_PASSES", "SSSP_BLOCK_APPEND",
                   "SSSP_FUSED_CAPTURED", "SSSP_PUSH_CHAIN", "SSSP_MULTI_HOP_JUMP", "SSSP_PHASE_CLOCK")


def variant_defines(defines) -> tuple[str, ...]:
    """``defines`` as a module key: sorted, unique, each one of VARIANT_DEFINES."""
    chosen = tuple(sorted(set(defines)))
    unknown = [d for d in chosen if d not in VARIANT_DEFINES]
    if unknown:
        raise ValueError(f"unknown module variant {', '.join(unknown)}: expected some of "
                         f"{', '.join(VARIANT_DEFINES)}")
    return chosen


def variant_code(code: str, defines) -> str:
    """A source with its variant's defines ahead of it (the header reads them)."""
    return "".join(f"#define {d} 1\n" for d in variant_defines(defines)) + code


def instantiation_name(kernel: str, vertex_dtype, offset_dtype) -> str:
    """The C++ name expression of a kernel template instantiation, e.g. ``k<int, long long>``."""
    v = C_TYPE_NAMES[np.dtype(vertex_dtype)]
    o = C_TYPE_NAMES[np.dtype(offset_dtype)]
    return f"{kernel}<{v}, {o}>"


class CompiledModule:
    """One engine's module on one device: every kernel template at every supported type pair."""

    def __init__(self, engine: str, device: int, raw_module, kernels: tuple[str, ...],
                 defines: tuple[str, ...] = ()):
        self.engine = engine
        self.device = device
        self.defines = defines  # the compile-time variant (VARIANT_DEFINES)
        self._raw = raw_module
        self._kernels = kernels
        self._functions: dict[tuple[str, np.dtype, np.dtype], object] = {}
        self._tables: dict[tuple, dict] = {}  # functions(): every kernel of one instantiation
        self._occupancy: dict[tuple[str, np.dtype, np.dtype], int] = {}

    def function(self, kernel: str, vertex_dtype, offset_dtype):
        """The ``cupy.RawKernel`` of one instantiation (compiled on first use of the module)."""
        key = (kernel, np.dtype(vertex_dtype), np.dtype(offset_dtype))
        fn = self._functions.get(key)
        if fn is None:
            if kernel not in self._kernels:
                raise KeyError(f"kernel {kernel!r} is not part of the {self.engine} module")
            with cuda_errors(f"loading kernel {kernel} of the {self.engine} engine"):
                fn = self._raw.get_function(instantiation_name(kernel, *key[1:]))
            self._functions[key] = fn
        return fn

    def global_array(self, name: str, dtype, count: int):
        """The module's ``__device__`` array ``name`` (a C name) as a CuPy array of ``count``
        items of ``dtype``: a view of the module's own memory, no copy (instruments read what a
        kernel left there, e.g. phase_clock.py)."""
        cupy = cupy_module()
        with cuda_errors(f"finding {name} in the {self.engine} module"):
            pointer = self._raw.get_global(name)
        # (CuPy does not say how large the global is: its pointer's memory reports size 0, so the
        # caller's count is trusted; phase_clock.py's SLOTS is pinned to fused.cu's by a test)
        return cupy.ndarray((int(count),), dtype=np.dtype(dtype), memptr=pointer)

    def functions(self, vertex_dtype, offset_dtype) -> dict:
        """Every kernel's ``function`` at one type pair, by name, made once: a launcher that asks
        for a dozen kernels per run would otherwise build a key of two dtypes for each (about
        10 µs of a small update's host time on a slow CPU, the operators engine)."""
        key = (vertex_dtype, offset_dtype)
        table = self._tables.get(key)
        if table is None:
            table = self._tables[key] = {name: self.function(name, vertex_dtype, offset_dtype)
                                         for name in self._kernels}
        return table

    def load_all(self) -> None:
        """Compile the module and load every instantiation (so failures surface early)."""
        for kernel in self._kernels:
            for vertex, offset in TYPE_PAIRS:
                fn = self.function(kernel, vertex, offset)
                with cuda_errors(f"loading kernel {kernel} of the {self.engine} engine"):
                    _ = fn.kernel  # forces compilation and module load on this device

    def occupancy(self, kernel: str, vertex_dtype, offset_dtype, block: int = BLOCK_SIZE) -> int:
        """Co-resident blocks of ``block`` threads per multiprocessor (0 dynamic shared memory)."""
        key = (kernel, np.dtype(vertex_dtype), np.dtype(offset_dtype))
        value = self._occupancy.get(key)
        if value is None:
            cupy = cupy_module()
            fn = self.function(kernel, vertex_dtype, offset_dtype)
            with cuda_errors(f"querying the occupancy of {kernel}"), cupy.cuda.Device(self.device):
                value = int(
                    cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                        fn.kernel.ptr, int(block), 0
                    )
                )
            self._occupancy[key] = value
        return value


_module_lock = threading.Lock()
_modules: dict[tuple[str, int, tuple[str, ...]], CompiledModule] = {}  # (engine, device, defines)


def loaded_modules(engine: str, device: int) -> list[CompiledModule]:
    """The modules of ``engine`` compiled on ``device`` in this process, in every variant."""
    return [m for (e, d, _), m in list(_modules.items()) if e == engine and d == int(device)]


def get_module(
    engine: str,
    device: int,
    source_file: str,
    kernels: tuple[str, ...],
    *,
    cooperative: bool,
    defines=(),
) -> CompiledModule:
    """The compiled module of ``engine`` on ``device`` in the variant ``defines``
    (VARIANT_DEFINES), from the in-process cache or compiled now.

    Compiles under ``cuda_errors`` (NVRTC failures become ``CudaError``). CuPy's on-disk cache
    keeps the binary across processes; its key covers the full source string, header and defines
    included.
    """
    # the steady state (every update asks): a module already made under this exact key, without
    # normalizing the defines or taking the lock (a dict read is atomic)
    module = _modules.get((engine, device, defines)) if isinstance(defines, tuple) else None
    if module is not None:
        return module
    defines = variant_defines(defines)
    key = (engine, int(device), defines)
    with _module_lock:
        module = _modules.get(key)
        if module is not None:
            return module
        cupy = cupy_module()
        code = variant_code(read_source(source_file), defines)
        names = [instantiation_name(k, v, o) for k in kernels for v, o in TYPE_PAIRS]
        with cuda_errors(f"compiling the {engine} engine"), cupy.cuda.Device(int(device)):
            raw = cupy.RawModule(
                code=code,
                options=NVRTC_OPTIONS,
                name_expressions=names,
                enable_cooperative_groups=cooperative,
            )
            module = CompiledModule(engine, int(device), raw, tuple(kernels), defines)
            module.load_all()
        _modules[key] = module
        return module


# ---------------------------------------------------------------------------------------------
# Grid sizing (algorithm.md §10.2)


def cooperative_grid(module: CompiledModule, kernel: str, vertex_dtype, offset_dtype) -> int:
    """Fused: blocks = occupancy(kernel, 256 threads, 0 shared) x SM count (0 if it cannot fit)."""
    occ = module.occupancy(kernel, vertex_dtype, offset_dtype)
    return occ * device_info(module.device).multiprocessors


def operators_grid_cap(device: int) -> int:
    """Operators: max(SM count, 1) x max(max threads per SM // 256, 1) (1056 on an H200)."""
    info = device_info(device)
    return max(info.multiprocessors, 1) * max(info.max_threads_per_multiprocessor // BLOCK_SIZE, 1)


def operators_blocks(work: int, device: int) -> int:
    """Operators: min(ceil(max(work, 1) / 256), grid_cap) blocks of 256 threads."""
    work = max(int(work), 1)
    return min((work + BLOCK_SIZE - 1) // BLOCK_SIZE, operators_grid_cap(device))


# ---------------------------------------------------------------------------------------------
# Streams and THE synchronization helper (algorithm.md §10.3, §12.3)


_stream_lock = threading.Lock()
_streams: dict[int, object] = {}


def stream(device: int):
    """The one stream every run on ``device`` uses (created on first use).

    A blocking stream on purpose: work that other code enqueues on CuPy's legacy default stream
    (growing a result, ``clone()``, ``from_arrays()``) is ordered before the engines' launches
    without any host synchronization, and the engines' work before later default-stream work.
    """
    device = int(device)
    s = _streams.get(device)
    if s is not None:
        return s
    with _stream_lock:
        s = _streams.get(device)
        if s is None:
            cupy = cupy_module()
            with cuda_errors(f"creating the stream of device {device}"), cupy.cuda.Device(device):
                s = cupy.cuda.Stream(non_blocking=False)
            _streams[device] = s
        return s


_capture_streams: dict[int, object] = {}
#: Held through a capture, begin to end: the capture stream is one per device, and the callers hold
#: locks of their own (a workspace's, a graph's) that do not exclude each other, so two threads
#: could otherwise begin captures on the same stream; the second fails and the fused engine stops
#: capturing for the rest of the process (fused.CaptureState.problem). Captures are rare (the first
#: run of each buffer layout), so one lock for every device costs nothing in a steady state.
_capture_lock = threading.Lock()


def capture(device: int, enqueue):
    """A CUDA graph of the work ``enqueue(stream)`` puts on a stream (stream capture).

    Captured on a private non-blocking stream of ``device``, in relaxed mode, so that nothing
    another thread or CuPy's legacy default stream does can join or break the capture; nothing
    runs until the graph is launched (``graph.launch(stream)``). Kernel arguments are captured by
    value: the graph is valid while every buffer it names keeps its address.
    """
    device = int(device)
    cupy = cupy_module()
    with _stream_lock:
        s = _capture_streams.get(device)
        if s is None:
            with cuda_errors(f"creating the capture stream of device {device}"), cupy.cuda.Device(device):
                s = cupy.cuda.Stream(non_blocking=True)
            _capture_streams[device] = s
    with _capture_lock, cuda_errors("capturing a CUDA graph"), cupy.cuda.Device(device):
        # cudaStreamCaptureModeRelaxed = 2 (CUDA runtime API)
        s.begin_capture(mode=getattr(cupy.cuda.runtime, "streamCaptureModeRelaxed", 2))
        try:
            enqueue(s)
        finally:
            graph = s.end_capture()
    return graph


#: (site, argument count) -> (positions of the device arrays, positions of the scalars): where a
#: launcher puts arrays and scalars is fixed by its code, so it is worked out once per site (a key
#: is built on every captured update: 1.3 µs instead of 7.2 µs for the fused update's 34
#: arguments, timed on a CPU with stand-in arrays)
_key_layouts: dict[tuple, tuple] = {}


def capture_key(site, args) -> tuple:
    """What a captured launch fixes of its arguments ``args``: every device array's address and
    every scalar's value, as ``(scalars, addresses)``. ``site`` names the code that builds
    ``args`` (a kernel function's id, a launcher's name): the code decides which positions hold
    arrays and which scalars, and each scalar's type, so the key need not (a site whose scalar
    types vary, with the vertex type say, puts what decides them in its own key). An address
    stands for whatever buffer holds it now: a graph replayed with the same addresses in the same
    places reads and writes the buffers the run means, whichever allocation made them."""
    layout = _key_layouts.get((site, len(args)))
    if layout is None:
        ndarray = cupy_module().ndarray
        layout = _key_layouts[(site, len(args))] = (
            tuple(i for i, a in enumerate(args) if isinstance(a, ndarray)),
            tuple(i for i, a in enumerate(args) if not isinstance(a, ndarray)))
    arrays, scalars = layout
    return tuple([args[i] for i in scalars]), tuple([args[i].data.ptr for i in arrays])


_order_events: dict[int, object] = {}


def order_after_current_stream(stream_, device: int) -> None:
    """Make the engine's stream wait, on the device, for the work already enqueued on CuPy's
    current stream (where the dispatch grows, clones and imports result arrays): one event record
    and one stream wait, reused; no host synchronization, no allocation. Covers a per-thread
    default stream too, with which the blocking stream does not order itself."""
    cupy = cupy_module()
    with cuda_errors("ordering the engine's stream after the caller's"), cupy.cuda.Device(int(device)):
        current = cupy.cuda.get_current_stream()
        if current.ptr == stream_.ptr:
            return
        event = _order_events.get(int(device))
        if event is None:
            event = _order_events[int(device)] = cupy.cuda.Event(block=False, disable_timing=True)
        event.record(current)
        stream_.wait_event(event)


class SyncCounter:
    """Counts the host synchronizations of one run (``host_syncs``, algorithm.md §9)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


def poll_while_running(step, stream_) -> None:
    """Call ``step()`` until it returns True or ``stream_`` has finished its work, with event and
    stream queries only (no synchronization; the run's one wait follows). For host work that waits
    for something stream-ordered before the run (an update's commit record, which lands before
    the engine's kernel starts): done here, it overlaps the kernel; left to after the wait, it
    lengthens the update by its own time. A finished stream gets one last ``step()``."""
    with cuda_errors("waiting for the run"):
        while not step():
            if stream_.done:
                step()
                return


def synchronize(control, stream_, syncs: SyncCounter):
    """THE synchronization helper of both engines (algorithm.md §10.3).

    Copies the whole device control block into its pinned host mirror asynchronously on
    ``stream_``, waits for the stream, counts one host synchronization and returns the host record
    (a NumPy structured scalar view; valid until the next synchronization of this control block).
    ``control`` is a ``workspace.ControlBlock``.
    """
    with cuda_errors("reading the control block"):
        control.device.data.copy_to_host_async(control.host_read_ptr, control.nbytes, stream_)
        stream_.synchronize()
    syncs.count += 1
    return control.host_read[0]


def wait_record(control, stream_, syncs: SyncCounter):
    """``synchronize`` for a run whose copy of the control block into ``host_read`` is already
    enqueued (a node of a captured graph, fused.py): waits for the stream, counts one host
    synchronization and returns the host record, as ``synchronize`` does."""
    with cuda_errors("reading the control block"):
        stream_.synchronize()
    syncs.count += 1
    return control.host_read[0]


def readback_async(control, stream_, slot: int) -> None:
    """Enqueue a copy of the control block into its ahead mirror ``slot`` (0 or 1) and an event
    after it, without waiting: work enqueued next can run while the host waits for this copy
    (``wait_readback``). What the device loop of the operators engine uses to keep a replay in
    flight while it reads the previous one's state."""
    mirror, ptr, event = control.ahead[slot]
    with cuda_errors("reading the control block"):
        control.device.data.copy_to_host_async(ptr, control.nbytes, stream_)
        event.record(stream_)


def wait_readback(control, slot: int, syncs: SyncCounter):
    """Wait for ``readback_async(..., slot)``'s copy (one host synchronization, counted) and return
    a copy of that record (the mirror may be reused by the next readback)."""
    mirror, _, event = control.ahead[slot]
    with cuda_errors("reading the control block"):
        event.synchronize()
    syncs.count += 1
    # a copy of the bytes read as the record: NumPy copies a structured scalar field by field
    # (8.3 µs for the operators' 432-byte block against 1.3 µs, timeit on this CPU)
    return mirror.view(np.uint8).copy().view(mirror.dtype)[0]


__all__ = [
    "BLOCK_SIZE",
    "NO_COOPERATIVE_ENV",
    "capture",
    "poll_while_running",
    "readback_async",
    "wait_readback",
    "wait_record",
    "TYPE_PAIRS",
    "VARIANT_DEFINES",
    "CompiledModule",
    "DeviceInfo",
    "SyncCounter",
    "cooperative_grid",
    "cooperative_launch_disabled",
    "cuda_errors",
    "cupy_module",
    "current_device",
    "device_info",
    "get_module",
    "instantiation_name",
    "loaded_modules",
    "variant_code",
    "variant_defines",
    "is_available",
    "operators_blocks",
    "operators_grid_cap",
    "order_after_current_stream",
    "read_source",
    "stream",
    "supports_cooperative_launch",
    "synchronize",
    "without_cooperative_launch",
]
