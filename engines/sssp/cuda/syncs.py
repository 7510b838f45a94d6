"""An independent count of synchronizing CUDA calls, through CUPTI callbacks.

The engines count their own host synchronizations at their one sync helper (``host_syncs``,
algorithm.md §10.3). That count is only as honest as the code that increments it, so the tests and
``perf_ab.py engines --verify-syncs`` count from outside the engine as well (protocol.md §6,
algorithm.md §12.2 and §13 item 10): every stream, event, context and device synchronization and
every synchronous device-to-host copy made while the counter is active.

How a call is counted once. CUPTI reports the same logical synchronization on several channels:
the runtime API call (``cudaStreamSynchronize``), the driver API call the runtime makes inside it
(``cuStreamSynchronize``) and the SYNCHRONIZE domain's "stream synchronized" notification. So:

* a *top-level* synchronizing API call (runtime, or driver outside any watched runtime call)
  counts 1 when it returns; everything CUPTI reports while it runs is part of it;
* a SYNCHRONIZE notification outside any watched call counts 1 (an implicit synchronization of a
  call that is not in the watched list), unless it directly follows a watched synchronizing call
  that saw none of its own (a notification delivered just after the call returned).

Importing this module needs neither CuPy nor CUPTI; :func:`count_synchronizations` raises
:class:`~engines.errors.NotSupportedError` with the reason when CUPTI cannot be used.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import NotSupportedError

# Runtime API calls that always block the host until device work has finished.
_RUNTIME_SYNCHRONIZING = (
    "cudaDeviceSynchronize_v3020",
    "cudaThreadSynchronize_v3020",
    "cudaStreamSynchronize_v3020",
    "cudaStreamSynchronize_ptsz_v7000",
    "cudaEventSynchronize_v3020",
)
# Runtime memcpy calls that are synchronous; counted when their kind may be device-to-host.
_RUNTIME_MEMCPY = ("cudaMemcpy_v3020", "cudaMemcpy_ptds_v7000")
# Driver API calls that block the host (the driver has no device-wide synchronize).
_DRIVER_SYNCHRONIZING = (
    "cuCtxSynchronize",
    "cuCtxSynchronize_v2",
    "cuStreamSynchronize",
    "cuStreamSynchronize_ptsz",
    "cuEventSynchronize",
    "cuMemcpyDtoH",
    "cuMemcpyDtoH_v2",
    "cuMemcpyDtoH_v2_ptds",
    "cu64MemcpyDtoH",
)

# Calls for which CUPTI also sends a SYNCHRONIZE notification (stream or context synchronized).
_NOTIFYING = (
    "cudaDeviceSynchronize",
    "cudaThreadSynchronize",
    "cudaStreamSynchronize",
    "cuCtxSynchronize",
    "cuStreamSynchronize",
)

# cudaMemcpyKind values (driver_types.h): a synchronous copy with one of these may read device
# memory into host memory. cudaMemcpyDefault (4) infers the direction from the pointers, which a
# callback cannot look up safely, so it is counted too (conservative; CuPy names the direction).
_MEMCPY_DEVICE_TO_HOST = 2
_MEMCPY_DEFAULT = 4

# Offsets inside CUPTI's CUpti_CallbackData (cupti_callbacks.h): callbackSite (enum, padded to 8),
# functionName (pointer), then functionParams. cudaMemcpy_v3020_params is
# {void *dst; const void *src; size_t count; enum cudaMemcpyKind kind;}.
_CALLBACK_DATA_PARAMS_OFFSET = 16
_MEMCPY_PARAMS_KIND_OFFSET = 24


def _import_cupti():
    """The ``cupti`` module of cupti-python, or NotSupportedError naming what is missing."""
    try:
        from cupti import cupti  # noqa: PLC0415 (optional dependency, loaded on use)
    except Exception as exc:  # ImportError, or the native library failing to load
        raise NotSupportedError(
            "counting CUDA synchronizations needs CUPTI through the 'cupti-python' package "
            "(pip install cupti-python pyelftools, matching the CUDA driver's major version); "
            f"importing it failed: {type(exc).__name__}: {exc}"
        ) from exc
    return cupti


def is_available() -> bool:
    """True when cupti-python imports (a GPU is still needed for callbacks to fire)."""
    try:
        _import_cupti()
    except NotSupportedError:
        return False
    return True


@dataclass
class _Frame:
    """A watched API call in progress on one thread."""

    name: str
    synchronizing: bool
    saw_notification: bool = False


@dataclass
class SynchronizationCounter:
    """Counts synchronizing CUDA calls between ``__enter__`` and ``__exit__``.

    ``count`` is the number of logical synchronizations; ``calls`` lists what was counted, in
    order (API names, or ``"SYNCHRONIZE:<kind>"`` for notifications counted on their own), and
    ``origins`` the Python lines that made each (``path:line function``, innermost first, up to
    three frames outside this module, joined by ``" < "``), for diagnostics when a count disagrees with an engine's ``host_syncs``.
    """

    count: int = 0
    calls: list = field(default_factory=list)
    origins: list = field(default_factory=list)
    notifications: int = 0
    _cupti: object = None
    _subscriber: object = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _local: threading.local = field(default_factory=threading.local)
    _runtime_memcpy: frozenset = frozenset()
    _watched: dict = field(default_factory=dict)
    _error: BaseException | None = None

    # ---------------------------------------------------------------- context manager
    def __enter__(self) -> SynchronizationCounter:
        cupti = self._cupti
        runtime_ids = _resolve(cupti.runtime_api_trace_cbid, _RUNTIME_SYNCHRONIZING + _RUNTIME_MEMCPY)
        driver_ids = _resolve(cupti.driver_api_trace_cbid, _DRIVER_SYNCHRONIZING)
        self._runtime_memcpy = frozenset(
            cbid for name, cbid in runtime_ids.items() if name in _RUNTIME_MEMCPY
        )
        self._watched = {
            (int(cupti.CallbackDomain.RUNTIME_API), cbid): name for name, cbid in runtime_ids.items()
        }
        self._watched.update(
            {(int(cupti.CallbackDomain.DRIVER_API), cbid): name for name, cbid in driver_ids.items()}
        )
        try:
            self._subscriber = _subscribe(cupti, self._on_callback)
            cupti.enable_domain(1, self._subscriber, cupti.CallbackDomain.SYNCHRONIZE)
            for (domain, cbid) in self._watched:
                cupti.enable_callback(1, self._subscriber, domain, cbid)
        except Exception as exc:
            self._unsubscribe()
            raise NotSupportedError(
                f"CUPTI refused the synchronization callbacks: {type(exc).__name__}: {exc} "
                "(another CUPTI subscriber, such as a profiler, may be active)"
            ) from exc
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._unsubscribe()
        if self._error is not None and exc_type is None:
            raise RuntimeError("the CUPTI synchronization callback failed") from self._error

    def _unsubscribe(self) -> None:
        if self._subscriber is not None:
            try:
                self._cupti.unsubscribe(self._subscriber)
            finally:
                self._subscriber = None

    # ---------------------------------------------------------------- the callback
    def _frames(self) -> list:
        frames = getattr(self._local, "frames", None)
        if frames is None:
            frames = self._local.frames = []
            self._local.absorb_next = False
        return frames

    def _count(self, what: str) -> None:
        origin = _python_origin()
        with self._lock:
            self.count += 1
            self.calls.append(what)
            self.origins.append(origin)

    def described(self, limit: int = 12) -> str:
        """The counted calls with their origins, ``"; "``-separated (the first ``limit``)."""
        lines = [f"{call} from {origin}" for call, origin in zip(self.calls, self.origins)]
        if len(lines) > limit:
            lines = lines[:limit] + [f"... {len(lines) - limit} more"]
        return "; ".join(lines)

    def _on_callback(self, userdata, domain, cbid, cbdata) -> None:
        try:
            self._dispatch(int(domain), int(cbid), cbdata)
        except BaseException as exc:  # never let an exception cross into the CUDA library
            self._error = exc

    def _dispatch(self, domain: int, cbid: int, cbdata) -> None:
        cupti = self._cupti
        frames = self._frames()
        if domain == int(cupti.CallbackDomain.SYNCHRONIZE):
            self.notifications += 1
            if frames:
                frames[0].saw_notification = True
            elif self._local.absorb_next:
                self._local.absorb_next = False
            else:
                self._count(f"SYNCHRONIZE:{_sync_kind(cupti, cbid)}")
            return
        name = self._watched.get((domain, cbid))
        if name is None:
            return
        if int(cbdata.callback_site) == int(cupti.ApiCallbackSite.API_ENTER):
            synchronizing = True
            if domain == int(cupti.CallbackDomain.RUNTIME_API) and cbid in self._runtime_memcpy:
                synchronizing = _memcpy_kind(cbdata) in (_MEMCPY_DEVICE_TO_HOST, _MEMCPY_DEFAULT)
            if not frames:
                self._local.absorb_next = False
            frames.append(_Frame(name, synchronizing))
            return
        if not frames:
            return  # subscribed in the middle of this call: it started before counting did
        frame = frames.pop()
        if frames or not frame.synchronizing:
            return  # nested inside a counted call, or a copy that is not device-to-host
        self._count(name)
        # A notification that belongs to this call but arrives after it returned is absorbed.
        self._local.absorb_next = not frame.saw_notification and name.startswith(_NOTIFYING)


_REPOSITORY = str(Path(__file__).resolve().parents[3]) + "/"  # paths are shown relative to it


def _python_origin(depth: int = 3) -> str:
    """Where the Python code that made the current CUDA call is: the callback runs on the calling
    thread, so the frames outside this module are the caller's (innermost first, ``depth`` of
    them; a frame walk, no traceback formatting: this runs inside CUDA calls)."""
    frame = sys._getframe(1)
    here = frame.f_code.co_filename  # this module's own frames (_count, _dispatch, _on_callback)
    while frame is not None and frame.f_code.co_filename == here:
        frame = frame.f_back
    where = []
    while frame is not None and len(where) < depth:
        path = frame.f_code.co_filename
        if path.startswith(_REPOSITORY):
            path = path[len(_REPOSITORY):]
        elif "site-packages/" in path:
            path = path.rsplit("site-packages/", 1)[1]
        where.append(f"{path}:{frame.f_lineno} {frame.f_code.co_name}")
        frame = frame.f_back
    return " < ".join(where) if where else "no Python frame"


def _resolve(enum_class, names) -> dict:
    """Callback ids by name, skipping names this CUPTI version does not know."""
    resolved = {}
    for name in names:
        member = getattr(enum_class, name, None)
        if member is not None:
            resolved[name] = int(member)
    return resolved


def _subscribe(cupti, callback):
    if hasattr(cupti, "subscribe_v2") and hasattr(cupti, "SubscriberParams"):
        params = cupti.SubscriberParams()
        params.struct_size = cupti.SUBSCRIBER_PARAMS_SIZE
        params.subscriber_name = "ssspab-sync-counter"
        return cupti.subscribe_v2(callback, None, params.ptr)
    return cupti.subscribe(callback, None)


def _sync_kind(cupti, cbid: int) -> str:
    try:
        return cupti.CallbackIdSync(cbid).name
    except ValueError:
        return str(cbid)


def _memcpy_kind(cbdata) -> int:
    """The cudaMemcpyKind of a cudaMemcpy call, read from CUPTI's callback data (-1 if unknown)."""
    try:
        base = int(cbdata.ptr)
        params = ctypes.c_void_p.from_address(base + _CALLBACK_DATA_PARAMS_OFFSET).value
        if not params:
            return _MEMCPY_DEFAULT
        return ctypes.c_int.from_address(params + _MEMCPY_PARAMS_KIND_OFFSET).value
    except Exception:
        return _MEMCPY_DEFAULT  # cannot tell: count it, the safe side for a budget check


def count_synchronizations() -> SynchronizationCounter:
    """A context manager counting synchronizing CUDA calls; ``.count`` holds the total.

    Raises NotSupportedError (before anything is subscribed) when cupti-python is missing.
    """
    return SynchronizationCounter(_cupti=_import_cupti())


__all__ = ["SynchronizationCounter", "count_synchronizations", "is_available"]
