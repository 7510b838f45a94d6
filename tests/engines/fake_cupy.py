"""A stand-in for CuPy on the host, for the tests of the engines' buffer reservations (no GPU
here): device contexts that do nothing, events, NumPy allocations and pinned memory, and an
allocation that fails on request."""

from __future__ import annotations

import numpy as np


class FakeOutOfMemory(MemoryError):
    """Raised by the fake CuPy's n-th allocation (a MemoryError, as CuPy's OutOfMemoryError is)."""


FakeOutOfMemory.__module__ = "cupy.fake"


class FakeCupy:
    """CuPy's calls that the engines' buffer reservations make (ApplyScratch.reserve, ControlBlock),
    on NumPy arrays; allocation number ``fail_at`` raises."""

    int32, int64, uint64, uint8 = np.int32, np.int64, np.uint64, np.uint8

    def __init__(self, fail_at=None):
        self.fail_at, self.allocations = fail_at, 0
        outer = self

        class Device:
            def __init__(self, device):
                pass

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        class Pinned(bytearray):
            ptr = 1234

        class Cuda:
            pass

        class Event:
            def __init__(self, **kwargs):
                pass

        class Stream:
            def __init__(self, **kwargs):
                pass

        self.cuda = Cuda()
        self.cuda.Device, self.cuda.Event, self.cuda.Stream = Device, Event, Stream

        def alloc_pinned_memory(nbytes):
            outer._allocation()
            return Pinned(nbytes)

        self.cuda.alloc_pinned_memory = alloc_pinned_memory

    def _allocation(self):
        self.allocations += 1
        if self.allocations == self.fail_at:
            raise FakeOutOfMemory("out of memory")

    def zeros(self, n, dtype):
        self._allocation()
        return np.zeros(n, dtype=dtype)

    def empty(self, n, dtype):
        self._allocation()
        return np.empty(n, dtype=dtype)
