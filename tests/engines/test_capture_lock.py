"""runtime.capture serializes captures (issue 27's captured launches): the capture stream is one per
device and its callers hold locks that do not exclude each other (a workspace's, a graph's), so a
second thread beginning a capture while another's is open would fail, and the fused engine would
then stop capturing for the rest of the process. CuPy is replaced by a stream that refuses a second
open capture, as CUDA does; no GPU needed."""

from __future__ import annotations

import contextlib
import threading
from types import SimpleNamespace

import pytest

from engines.sssp.cuda import runtime


class _Stream:
    """A capture stream that, as CUDA's, refuses to begin a capture while one is open."""

    def __init__(self, non_blocking=False):
        self.open = False
        self.graphs = 0

    def begin_capture(self, mode=None):
        if self.open:
            raise RuntimeError("cudaErrorIllegalState: the stream is already capturing")
        self.open = True

    def end_capture(self):
        self.open = False
        self.graphs += 1
        return f"graph {self.graphs}"


@pytest.fixture
def fake_cupy(monkeypatch):
    cupy = SimpleNamespace(cuda=SimpleNamespace(Stream=_Stream, Device=lambda _d: contextlib.nullcontext(),
                                                runtime=SimpleNamespace(streamCaptureModeRelaxed=2)))
    monkeypatch.setattr(runtime, "cupy_module", lambda: cupy)
    monkeypatch.setattr(runtime, "_capture_streams", {})
    return cupy


def test_a_capture_waits_for_another_threads_capture_to_end(fake_cupy):
    first_inside, second_began = threading.Event(), threading.Event()
    graphs, errors = {}, []

    def first_enqueue(stream):
        first_inside.set()
        # give the second thread time to reach its begin_capture: without the lock it would begin
        # on the open stream now and fail (with it, it waits: this wait then simply times out)
        second_began.wait(timeout=0.5)

    def second_enqueue(stream):
        second_began.set()

    def run(name, enqueue):
        try:
            graphs[name] = runtime.capture(0, enqueue)
        except Exception as exc:  # noqa: BLE001 - the failure under test
            errors.append(exc)

    first = threading.Thread(target=run, args=("first", first_enqueue))
    first.start()
    assert first_inside.wait(timeout=30)
    second = threading.Thread(target=run, args=("second", second_enqueue))
    second.start()
    first.join(timeout=30)
    second.join(timeout=30)
    assert not errors, errors
    assert sorted(graphs.values()) == ["graph 1", "graph 2"]
    # the first capture had ended before the second began
    assert graphs["first"] == "graph 1"
