"""engines.sssp.cuda.syncs without CUPTI (and without CuPy): it imports, reports itself
unavailable, and ``count_synchronizations()`` raises NotSupportedError naming what is missing.
"""

from __future__ import annotations

import importlib
import sys

import pytest

from engines import errors


@pytest.fixture
def no_cupti(monkeypatch):
    # A None entry makes ``import cupti`` raise ImportError, installed or not.
    monkeypatch.setitem(sys.modules, "cupti", None)
    monkeypatch.setitem(sys.modules, "cupti.cupti", None)


def test_imports_without_cupy_or_cupti(no_cupti, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    import engines.sssp.cuda.syncs as syncs

    syncs = importlib.reload(syncs)
    assert callable(syncs.count_synchronizations)
    assert syncs.is_available() is False


def test_count_raises_not_supported_clearly(no_cupti):
    from engines.sssp.cuda import syncs

    with pytest.raises(errors.NotSupportedError) as info:
        with syncs.count_synchronizations():
            pass  # pragma: no cover - never entered
    message = str(info.value)
    assert "cupti-python" in message and "CUPTI" in message
    assert isinstance(info.value, NotImplementedError)


# ---------------------------------------------------------------------------------------------
# The counting rules, driven by the callback sequences CUPTI delivers. CUPTI itself needs a GPU;
# here a stand-in exposes the few names syncs.py uses (enums, subscribe, enable_*), and the
# callbacks are replayed in the orders CUPTI may use. The memcpy kind is read from real memory
# laid out like CUpti_CallbackData and cudaMemcpy_v3020_params.

import ctypes
import enum
import types


class _Domain(enum.IntEnum):
    DRIVER_API = 1
    RUNTIME_API = 2
    SYNCHRONIZE = 6


class _Site(enum.IntEnum):
    API_ENTER = 0
    API_EXIT = 1


class _Sync(enum.IntEnum):
    STREAM_SYNCHRONIZED = 1
    CONTEXT_SYNCHRONIZED = 2


_Runtime = enum.IntEnum("_Runtime", {"cudaStreamSynchronize_v3020": 131, "cudaMemcpy_v3020": 31,
                                     "cudaEventSynchronize_v3020": 137,
                                     "cudaDeviceSynchronize_v3020": 165})
_Driver = enum.IntEnum("_Driver", {"cuStreamSynchronize": 246, "cuCtxSynchronize": 17,
                                   "cuMemcpyDtoH_v2": 279})


def _fake_cupti():
    state = {"callback": None, "enabled": set(), "domains": set()}

    def subscribe(callback, userdata):
        state["callback"] = callback
        return 1

    return types.SimpleNamespace(
        CallbackDomain=_Domain, ApiCallbackSite=_Site, CallbackIdSync=_Sync,
        runtime_api_trace_cbid=_Runtime, driver_api_trace_cbid=_Driver,
        subscribe=subscribe,
        enable_domain=lambda on, sub, domain: state["domains"].add(int(domain)),
        enable_callback=lambda on, sub, domain, cbid: state["enabled"].add((int(domain), int(cbid))),
        unsubscribe=lambda sub: state.update(callback=None),
        state=state,
    )


class _Data:
    """CUpti_CallbackData-like memory: callbackSite at 0, functionParams at 16."""

    def __init__(self, site, memcpy_kind=None):
        self.callback_site = int(site)
        self._params = (ctypes.c_uint8 * 32)()
        self._struct = (ctypes.c_uint8 * 72)()
        if memcpy_kind is not None:
            ctypes.c_int.from_buffer(self._params, 24).value = memcpy_kind
            ctypes.c_void_p.from_buffer(self._struct, 16).value = ctypes.addressof(self._params)
        self.ptr = ctypes.addressof(self._struct)


def _replay(events):
    from engines.sssp.cuda import syncs

    fake = _fake_cupti()
    counter = syncs.SynchronizationCounter(_cupti=fake)
    with counter:
        cb = fake.state["callback"]
        assert (int(_Domain.RUNTIME_API), 131) in fake.state["enabled"]
        assert int(_Domain.SYNCHRONIZE) in fake.state["domains"]
        for domain, cbid, data in events:
            cb(None, domain, cbid, data)
    assert fake.state["callback"] is None  # unsubscribed on exit
    return counter


def _call(domain, cbid, inner=(), kind=None):
    return ([(domain, cbid, _Data(_Site.API_ENTER, kind))] + list(inner)
            + [(domain, cbid, _Data(_Site.API_EXIT, kind))])


_NOTE = (_Domain.SYNCHRONIZE, _Sync.STREAM_SYNCHRONIZED, None)


def test_runtime_driver_and_notification_of_one_synchronize_count_once():
    events = _call(_Domain.RUNTIME_API, 131, _call(_Domain.DRIVER_API, 246, [_NOTE]))
    assert _replay(events).count == 1
    assert _replay(_call(_Domain.DRIVER_API, 246, [_NOTE])).count == 1
    assert _replay(_call(_Domain.RUNTIME_API, 131) + [_NOTE]).count == 1  # late notification
    assert _replay([_NOTE]).count == 1  # an implicit synchronization of an unwatched call


def test_two_synchronizations_count_two():
    one = _call(_Domain.RUNTIME_API, 131, [_NOTE])
    counter = _replay(one + one)
    assert counter.count == 2 and counter.calls == ["cudaStreamSynchronize_v3020"] * 2


def test_memcpy_counts_only_device_to_host():
    assert _replay(_call(_Domain.RUNTIME_API, 31, kind=1)).count == 0  # host to device
    assert _replay(_call(_Domain.RUNTIME_API, 31, kind=2)).count == 1  # device to host
    assert _replay(_call(_Domain.DRIVER_API, 279)).count == 1          # cuMemcpyDtoH


def test_event_synchronize_does_not_absorb_a_later_notification():
    events = _call(_Domain.RUNTIME_API, 137) + [_NOTE]
    assert _replay(events).count == 2


def _two_synchronizations_from_here():
    return _replay(_call(_Domain.RUNTIME_API, 131, [_NOTE]) * 2)


def test_each_counted_call_names_the_python_line_that_made_it():
    counter = _two_synchronizations_from_here()
    assert len(counter.origins) == counter.count == 2
    # the fake delivers callbacks from _replay's loop: the innermost frame outside syncs.py
    assert all(o.startswith("tests/engines/test_syncs_cpu.py:") and " _replay < " in o
               for o in counter.origins)
    assert " _two_synchronizations_from_here" in counter.origins[0]
    text = counter.described(limit=1)
    assert text.startswith("cudaStreamSynchronize_v3020 from tests/engines/test_syncs_cpu.py:")
    assert text.endswith("... 1 more")
