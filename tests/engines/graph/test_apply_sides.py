"""The device apply's two sides side by side (``ENGINES_APPLY_PARALLEL_SIDES``, engines/graph/
apply_sides.py), without a GPU: the switch's reading, the in side's own scratch through the
reserve's growth and failures, the plan (the same kernels as the serial commit, the in side's on
its own scratch between the branch's markers) and the streams each step is enqueued on. The bytes
a parallel commit writes are checked on the GPU (tests/gpu/test_parallel_sides.py)."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace

import numpy as np
import pytest

from engines import errors
from engines.graph import apply_sides, device_apply

from tests.switch_env import set_switch

from ..fake_cupy import FakeCupy
from .test_apply_reserve import _assert_complete, _fresh_scratch


@pytest.mark.parametrize("text, on", [(None, True), ("", True), ("0", False), ("off", False), (" OFF ", False),
                                      ("1", True), (" ON ", True)])
def test_the_switch_is_on_unless_turned_off(monkeypatch, text, on):
    set_switch(monkeypatch, apply_sides.PARALLEL_SIDES_ENV, text)
    assert apply_sides.parallel_sides() is on


def _reserving(monkeypatch, fake=None):
    scratch = _fresh_scratch()
    monkeypatch.setattr(device_apply, "cupy_module", lambda: fake or FakeCupy())
    return scratch


def _assert_side(scratch):
    side = scratch.in_side
    assert side.mark.size == scratch.m_cap
    assert side.row_flag.size == side.row_delta.size == side.cum.size == scratch.n_cap
    assert side.stage_key.size == side.stage_ins.size == scratch.event_cap
    assert side.touched_cum.size == scratch.event_cap + 1
    for name in apply_sides.SIDE_ARRAYS:  # its own, never the out side's, of the out side's type
        assert getattr(side, name) is not getattr(scratch, name), name
        assert getattr(side, name).dtype == getattr(scratch, name).dtype, name
    assert not side.mark.any() and not side.row_flag.any() and not side.row_delta.any()


def test_the_reserve_makes_the_in_sides_scratch_at_every_growth(monkeypatch):
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, "1")
    scratch = _reserving(monkeypatch)
    scratch.reserve(10, 20, 8, stream=nullcontext())
    _assert_complete(scratch, 10, 20, 8)
    assert scratch.parallel
    _assert_side(scratch)
    first, layout = scratch.in_side, scratch.layout
    scratch.reserve(10, 20, 8, stream=nullcontext())  # room for it: nothing changes
    assert scratch.in_side is first and scratch.layout == layout
    scratch.reserve(500, 20, 8, stream=nullcontext())  # the rows grow: the in side's with them
    assert scratch.in_side is not first and scratch.layout != layout
    _assert_side(scratch)
    scratch.arena = SimpleNamespace(nbytes=0)
    side_bytes = sum(int(getattr(scratch.in_side, n).nbytes) for n in apply_sides.SIDE_ARRAYS)
    with_side, scratch.in_side = scratch.nbytes, None
    assert with_side == scratch.nbytes + side_bytes  # what a graph's device memory counts


def test_the_switch_is_read_when_the_event_buffers_grow(monkeypatch):
    """As the apply's other switches (a captured commit's plan depends on it): a growth of rows or
    entries keeps the reading, a growth of the events takes the switch's value, and a bad value
    refuses the reserve before anything changes."""
    scratch = _reserving(monkeypatch)
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, "0")
    scratch.reserve(10, 20, 8, stream=nullcontext())
    assert not scratch.parallel and scratch.in_side is None
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, "1")
    scratch.reserve(500, 900, 8, stream=nullcontext())  # rows and entries grow, events fit
    assert not scratch.parallel and scratch.in_side is None
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, "sometimes")
    before = (scratch.layout, scratch.event_cap, scratch.keys)
    with pytest.raises(errors.InvalidArgumentError, match=apply_sides.PARALLEL_SIDES_ENV):
        scratch.reserve(500, 900, 5000, stream=nullcontext())
    assert (scratch.layout, scratch.event_cap, scratch.keys) == before and scratch.in_side is None
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, "1")
    scratch.reserve(500, 900, 5000, stream=nullcontext())
    assert scratch.parallel
    _assert_side(scratch)
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, "0")
    scratch.reserve(500, 900, 50_000, stream=nullcontext())
    assert not scratch.parallel and scratch.in_side is None
    monkeypatch.delenv(apply_sides.PARALLEL_SIDES_ENV)  # unset: the default, on
    scratch.reserve(500, 900, 100_000, stream=nullcontext())
    assert scratch.parallel
    _assert_side(scratch)


# a growing reserve of the parallel commit allocates eleven times for the out side (as
# test_apply_reserve counts them), then seven arrays of the in side
@pytest.mark.parametrize("fail_at", range(12, 19))
def test_an_in_side_that_failed_half_way_is_made_by_the_next_reserve(monkeypatch, fail_at):
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, "1")
    scratch = _reserving(monkeypatch)
    scratch.reserve(10, 20, 8, stream=nullcontext())
    failing = FakeCupy(fail_at)
    monkeypatch.setattr(device_apply, "cupy_module", lambda: failing)
    with pytest.raises(errors.OutOfMemoryError):
        scratch.reserve(1000, 5000, 5000, stream=nullcontext())
    assert failing.allocations == fail_at and scratch.in_side is None and scratch.layout == 0
    monkeypatch.setattr(device_apply, "cupy_module", lambda: FakeCupy())
    scratch.reserve(10, 20, 8, stream=nullcontext())
    _assert_complete(scratch, 10, 20, 8)
    _assert_side(scratch)
    assert scratch.layout != 0


# -- the plan ------------------------------------------------------------------------------------

class _Module:
    def functions(self, vertex, offset):  # runtime.CompiledModule.functions
        return {name: name for name in device_apply.KERNELS}


def _planned(monkeypatch, parallel: bool, touched: bool, blocks=lambda items, device: 7, num_edges: int = 20):
    """A plan of a commit of 8 events on a graph of 10 vertices and ``num_edges`` arcs (``blocks``:
    runtime.operators_blocks)."""
    monkeypatch.setattr(device_apply, "load_module", lambda device: _Module())
    monkeypatch.setattr(device_apply.runtime, "operators_blocks", blocks)
    scratch = _reserving(monkeypatch)
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, "1" if parallel else "0")
    monkeypatch.setenv(device_apply.TOUCHED_SCAN_ENV, "off" if not touched else "1000000")
    monkeypatch.setenv("ENGINES_APPLY_KEY_SORT", "library")
    monkeypatch.setenv("ENGINES_MAPPED_RECORDS", "0")  # the record's download ends these plans
    scratch.reserve(10, 20, 8, stream=nullcontext())

    def buffers():
        def side():
            return {name: np.zeros(4) for name in ("out", "in")}
        return SimpleNamespace(ptr=side(), end=side(), key=side(), weight=side(), row_of=side(), m_cap=20, serial=1,
                               num_weights=2, offset_dtype=np.dtype(np.int32), num_vertices=10,
                               num_edges=num_edges)

    graph = SimpleNamespace(device=0)
    # the width as the commit reads it (once, for the plan and its key)
    shift = device_apply.group_shift(10, num_edges)
    return scratch, device_apply._plan(graph, scratch, buffers(), buffers(), 10, shift)


def _side_scratch(step, scratch) -> set:
    """Which sides' scratch a step's arguments hold: "out" (the scratch's own arrays), "in"."""
    held = set()
    values = step[3] if step[0] == "kernel" else step[1:]
    for value in values:
        for name in apply_sides.SIDE_ARRAYS:
            mine = getattr(scratch, name)
            if value is mine or (isinstance(value, np.ndarray) and value.base is mine):
                held.add("out")
            if scratch.in_side is not None:
                theirs = getattr(scratch.in_side, name)
                if value is theirs or (isinstance(value, np.ndarray) and value.base is theirs):
                    held.add("in")
    return held


def _shape(step):
    return step[0] if step[0] != "kernel" else step[1]


@pytest.mark.parametrize("touched", [False, True])
def test_the_parallel_plan_is_the_serial_one_with_the_in_side_on_its_own_scratch(monkeypatch, touched):
    serial_scratch, serial = _planned(monkeypatch, parallel=False, touched=touched)
    scratch, parallel = _planned(monkeypatch, parallel=True, touched=touched)
    assert all(step[0] not in ("branch", "main", "join") for step in serial)
    # serial: the keys and their sort, the out side's chain, the in side's, the rescan, the download
    chain = (len(serial) - 4) // 2
    out_chain, in_chain = serial[2: 2 + chain], serial[2 + chain: -2]
    assert [_shape(s) for s in out_chain] == [_shape(s) for s in in_chain]
    assert ("cumsum" in [_shape(s) for s in out_chain]) is not touched
    assert [_shape(s) for s in serial[-2:]] == ["apply_rescan_max", "download"]
    assert all(_side_scratch(s, serial_scratch) <= {"out"} for s in serial)
    # parallel: the same steps, the in side's chain between the markers, then the out side's and
    # the rescan on the commit's stream, the join before the download
    assert parallel[2] == apply_sides.BRANCH and parallel[3 + chain] == apply_sides.MAIN
    assert parallel[-2] == apply_sides.JOIN
    p_in, p_out = parallel[3: 3 + chain], parallel[4 + chain: 4 + 2 * chain]
    assert [_shape(s) for s in p_in] == [_shape(s) for s in in_chain]
    assert [_shape(s) for s in p_out] == [_shape(s) for s in out_chain]
    assert [_shape(s) for s in parallel[4 + 2 * chain:]] == ["apply_rescan_max", "join", "download"]
    assert [_shape(s) for s in parallel[:2]] == [_shape(s) for s in serial[:2]]
    assert all(_side_scratch(s, scratch) == {"in"} for s in p_in)
    assert all(_side_scratch(s, scratch) <= {"out"} for s in p_out)


# -- the streams ---------------------------------------------------------------------------------

class _Stream:
    def __init__(self, name, log):
        self.name, self.log, self.ptr = name, log, name

    def wait_event(self, event):
        self.log.append(("wait", self.name, event.name))

    def __enter__(self):
        self.log.append(("current", self.name))
        return self

    def __exit__(self, *exc):
        self.log.append(("current", None))
        return False


class _Event:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def record(self, stream):
        self.log.append(("record", self.name, stream.name))


def test_the_in_side_runs_on_its_stream_between_the_fork_and_the_join(monkeypatch):
    scratch, steps = _planned(monkeypatch, parallel=True, touched=False)
    log = []
    side = scratch.in_side
    side.stream, side.forked, side.joined = _Stream("side", log), _Event("forked", log), _Event("joined", log)
    main = _Stream("main", log)

    def kernel(name):
        return lambda grid, block, args, stream, shared_mem: log.append(("kernel", name, stream.name))

    steps = [("kernel", kernel(s[1]), *s[2:]) if s[0] == "kernel" else s for s in steps]
    fake = SimpleNamespace(
        cuda=SimpleNamespace(using_allocator=lambda malloc: nullcontext(),
                             runtime=SimpleNamespace(memcpyAsync=lambda *a: log.append(("download", a[-1])),
                                                     memcpyDeviceToHost=2)),
        cumsum=lambda source, out: log.append(("cumsum",)))
    monkeypatch.setattr(device_apply, "cupy_module", lambda: fake)
    scratch.arena = SimpleNamespace(malloc=None)
    scratch.record_host_ptr = 0
    assert steps[-1][0] == "download"
    steps[-1] = ("download", SimpleNamespace(data=SimpleNamespace(ptr=1), nbytes=8))
    device_apply._enqueue(steps, scratch, main)
    kernels = [(e[1], e[2]) for e in log if e[0] == "kernel"]
    streams = {}
    for name, stream in kernels:
        streams.setdefault(name, []).append(stream)
    assert streams["apply_keys"] == ["main"] and streams["apply_rescan_max"] == ["main"]
    for name in ("apply_decide", "apply_row_ptr", "apply_move", "apply_rebuild"):
        assert streams[name] == ["side", "main"], name  # the in side's first (its branch comes first)
    fork = log.index(("record", "forked", "main"))
    assert log[fork + 1] == ("wait", "side", "forked")
    assert log.index(("kernel", "apply_keys", "main")) < fork < log.index(("kernel", "apply_decide", "side"))
    join = log.index(("record", "joined", "side"))
    assert log[join + 1] == ("wait", "main", "joined")
    assert max(i for i, e in enumerate(log) if e[0] == "kernel") < join < log.index(("download", "main"))
    # the in side's library scan runs with the side stream current, the out side's with the main one
    scans = [i for i, e in enumerate(log) if e == ("cumsum",)]
    assert [log[i - 1] for i in scans] == [("current", "side"), ("current", "main")]


def test_a_failed_commit_zeroes_both_sides_scratch(monkeypatch):
    """reset_after_failure re-zeroes every array that must read zero between commits, the in
    side's too (a commit that failed half-way may have set marks and row flags on either side)."""
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, "1")
    scratch = _reserving(monkeypatch)
    scratch.reserve(10, 20, 8, stream=nullcontext())
    zeroed = []

    class _Array:
        def __init__(self, label, nbytes):
            self.nbytes = nbytes
            self.data = SimpleNamespace(memset_async=lambda value, size, stream: zeroed.append((label, value, size)))

    expected = []
    for side, owner in (("out", scratch), ("in", scratch.in_side)):
        for name in apply_sides.SIDE_ARRAYS:
            setattr(owner, name, _Array((side, name), 8 * len(name)))
        expected += [((side, name), 0, 8 * len(name)) for name in ("mark", "row_flag", "row_delta")]
    assert apply_sides.ZERO_INVARIANT == ("mark", "row_flag", "row_delta")
    scratch.reset_after_failure(stream=None)
    assert sorted(zeroed) == sorted(expected)
