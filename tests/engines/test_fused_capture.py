"""The captured fused update's switch and module variant without a GPU (issue 27 step 2;
``ENGINES_FUSED_CAPTURE``; the GPU side is tests/gpu/test_fused_capture.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from engines import errors
from engines.sssp.cuda import compile_check, fused, push, runtime, workspace
from engines.sssp.plan import PUSH_EXPANSIONS

CAPTURED = ("SSSP_FUSED_CAPTURED",)


@pytest.mark.parametrize("text, on", [("", True), ("0", False), ("off", False), (" OFF ", False),
                                      ("1", True), ("on", True), ("On", True)])
def test_the_switch(monkeypatch, text, on):
    monkeypatch.setenv(fused.CAPTURE_ENV, text)
    assert fused.capture_enabled() is on


def test_unset_is_on(monkeypatch):
    """The default since the H200 measurements at 1b2fb4c (the GPU tests passed captured)."""
    monkeypatch.delenv(fused.CAPTURE_ENV, raising=False)
    assert fused.capture_enabled() is True


@pytest.mark.parametrize("text", ["2", "yes", "true", "-1", "graph"])
def test_a_bad_value_names_the_switch(monkeypatch, text):
    monkeypatch.setenv(fused.CAPTURE_ENV, text)
    with pytest.raises(errors.InvalidArgumentError, match=fused.CAPTURE_ENV):
        fused.capture_enabled()


@pytest.mark.parametrize("expansion", PUSH_EXPANSIONS)
def test_a_run_loads_the_captured_variant_unless_switched_off(monkeypatch, expansion):
    plan = SimpleNamespace(push_expansion=expansion, batch_changes=0)
    monkeypatch.delenv(fused.CAPTURE_ENV, raising=False)
    for name in (fused.SOLO_ENV, "ENGINES_WIDE_PASSES", "ENGINES_BLOCK_APPEND", "ENGINES_PUSH_CHAIN",
                 "ENGINES_MULTI_HOP_JUMP"):
        monkeypatch.setenv(name, "0")  # the other variants off, whatever their defaults
    assert fused.run_defines(plan) == push.module_defines(expansion) + CAPTURED  # the default
    monkeypatch.setenv(fused.CAPTURE_ENV, "0")
    plain = fused.run_defines(plan)
    assert plain == push.module_defines(expansion)
    monkeypatch.setenv(fused.CAPTURE_ENV, "1")
    assert fused.run_defines(plan) == plain + CAPTURED
    monkeypatch.setenv(fused.SOLO_ENV, "1024")
    assert set(fused.run_defines(plan)) == set(plain) | {"SSSP_FUSED_SOLO"} | set(CAPTURED)
    assert fused.module_defines(plan, 0, False, True) == plain + CAPTURED
    # compute() is never captured: what prepare() compiles for it is what it loads
    monkeypatch.delenv(fused.CAPTURE_ENV)
    assert "SSSP_FUSED_CAPTURED" in fused.run_defines(plan)
    assert "SSSP_FUSED_CAPTURED" not in fused.run_defines(plan, update=False)
    assert fused.run_choice(plan, False).defines == fused.run_defines(plan, update=False)


def test_every_variant_is_compiled_also_captured():
    uncaptured = [v for v in fused.VARIANTS if "SSSP_FUSED_CAPTURED" not in v]
    captured = [v for v in fused.VARIANTS if "SSSP_FUSED_CAPTURED" in v]
    assert {runtime.variant_defines(v + CAPTURED) for v in uncaptured} == set(captured)
    assert len(set(fused.VARIANTS)) == len(fused.VARIANTS) == 2 * len(uncaptured)
    assert "SSSP_FUSED_CAPTURED" in runtime.VARIANT_DEFINES
    assert compile_check.variants_of(runtime.SOURCE_DIR / fused.SOURCE) == fused.CHECKED_VARIANTS


def test_the_control_block_carries_the_per_update_scalars():
    """The fields the captured kernel reads (their offsets against offsetof are checked by
    test_cuda_sources); the default kernel never reads them, so the initial record's zeros are
    harmless to it."""
    import numpy as np

    for vertex in (np.int32, np.int64):
        dtype = workspace.fused_control_dtype(vertex)
        assert dtype["base_generation"] == np.dtype(np.int32)
        assert dtype["num_heads"] == np.dtype(vertex)
        assert dtype["solo_limit"] == np.dtype(vertex)
        assert dtype["delta"] == np.dtype(np.uint64)
        assert dtype.names[-6:-2] == ("base_generation", "num_heads", "solo_limit", "delta")
        # the mapped records' fields (mapped.py): the pinned host record's address, then the
        # blocks that finished; the block stays whole 8-byte words (fused.cu copies it by words)
        assert dtype.names[-2:] == ("host_record", "exited")
        assert dtype["host_record"] == np.dtype(np.uint64) and dtype["exited"] == np.dtype(np.uint32)
        assert dtype.itemsize % 8 == 0


class _Graph:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def launch(self, stream):
        self.log.append(("replay", self.name))


class _Control:
    host_init_ptr, host_read_ptr = 1, 2

    def enqueue_copies(self, stream, between):
        between(stream)


def test_the_captures_are_kept_least_recently_used_first(monkeypatch):
    """The cache policy of fused._run_captured without a GPU (the CUDA calls replaced by a log): a
    new key captures, a known one replays, and beyond MAX_CAPTURED the launch used longest ago is
    dropped, not merely the oldest made; a capture that fails launches from Python and is not
    tried again."""
    log = []
    made = iter(range(100))
    monkeypatch.setattr(fused, "MAX_CAPTURED", 2)
    monkeypatch.setattr(fused, "_capture_key", lambda fn, blocks, args: (blocks,) + tuple(args))
    monkeypatch.setattr(runtime, "capture", lambda device, enqueue: _Graph(f"g{next(made)}", log))
    monkeypatch.setattr(runtime, "wait_record", lambda control, s, syncs: "record")
    monkeypatch.setattr(fused, "_capture_states", {})

    def fn(grid, block, args, stream=None):
        log.append(("python", args))

    def run(args):
        assert fused._run_captured(fn, 1, args, _Control(), "s", 0, "int32", None) == "record"

    for args in (("a",), ("b",), ("a",), ("c",), ("a",), ("b",)):
        run(args)
    state = fused.capture_state(0, "int32")
    # a, b captured; a replayed (now the most recent); c evicts b, not a; a replays; b again
    assert log == [("replay", "g0"), ("replay", "g1"), ("replay", "g0"), ("replay", "g2"),
                   ("replay", "g0"), ("replay", "g3")]
    assert state.made == 4 and len(state.graphs) == 2 and state.problem is None

    def refuse(device, enqueue):
        raise RuntimeError("not here")

    monkeypatch.setattr(runtime, "capture", refuse)
    log.clear()
    run(("d",))
    run(("e",))
    assert log == [("python", ("d",)), ("python", ("e",))]
    assert state.problem == "RuntimeError: not here" and state.made == 4


def capturing_into_a_log(monkeypatch) -> list:
    """fused._run_captured without a GPU: each capture runs the enqueue on the stream "capture"
    and makes a graph g0, g1, ... whose replays go into the returned log; keys are the grid and the
    kernel arguments, the wait returns "record", no capture is kept from before."""
    log = []
    made = iter(range(100))

    def capture(device, enqueue):
        enqueue("capture")
        return _Graph(f"g{next(made)}", log)

    monkeypatch.setattr(fused, "_capture_key", lambda fn, blocks, args: (blocks,) + tuple(args))
    monkeypatch.setattr(runtime, "capture", capture)
    monkeypatch.setattr(runtime, "wait_record", lambda control, s, syncs: "record")
    monkeypatch.setattr(fused, "_capture_states", {})
    return log


class _LoggingControl(_Control):
    def __init__(self, log):
        self.log = log

    def enqueue_copies(self, stream, between):
        self.log.append(("upload", stream))
        between(stream)
        self.log.append(("download", stream))


def test_the_captured_graph_uploads_first_then_stages_the_change_lists_and_keys_them(monkeypatch):
    """Review of 67ab2bc without a GPU: a run with a staging launch enqueues it in the captured
    work after the control block's upload and before the kernel (a copy between the two kernels
    cost the GPU 7.6 us a replay, H100), the download last; a key with staging differs from the
    same arguments without it (an empty batch's graph stages nothing) and replays when the
    staging's arguments are the same again."""
    log = capturing_into_a_log(monkeypatch)

    def fn(grid, block, args, stream=None):
        log.append(("fused", stream))

    def sized(grid, block, args, stream=None):
        log.append(("staging", grid, block, args, stream))

    one, three = ((1,), (1024,)), ((3,), (1024,))  # the staging's launch dimensions (ENGINES_CHANGES_GRID)
    for staging in ((sized, ("sizes", "src"), one), None, (sized, ("sizes", "src"), one),
                    (sized, ("sizes", "src"), three)):
        assert fused._run_captured(fn, 1, ("a",), _LoggingControl(log), "s", 0, "int32", None,
                                   staging) == "record"
    assert log == [("upload", "capture"), ("staging", (1,), (1024,), ("sizes", "src"), "capture"),
                   ("fused", "capture"), ("download", "capture"), ("replay", "g0"),
                   ("upload", "capture"), ("fused", "capture"), ("download", "capture"), ("replay", "g1"),
                   ("replay", "g0"),
                   # another grid for the staging is another graph
                   ("upload", "capture"), ("staging", (3,), (1024,), ("sizes", "src"), "capture"),
                   ("fused", "capture"), ("download", "capture"), ("replay", "g2")]
    assert fused.capture_state(0, "int32").made == 3


def test_captured_staging_reads_the_sizes_on_the_device_and_zeroes_an_empty_batch(monkeypatch):
    """DeviceChangeLists.captured_staging: a non-empty commit gives apply_changes_sized over the
    scratch's sizes block and event views (buffers fixed per scratch layout, so the capture key
    holds from batch to batch); an empty one (no sizes staged) gives no launch and zeroes the
    count instead."""
    import numpy as np

    from engines.graph import device_apply

    class _View:
        def __init__(self, name):
            self.name, self.filled = name, None

        def fill(self, value):
            self.filled = value

    class _Module:
        def functions(self, vertex, offset):  # CompiledModule.functions: every kernel by name
            return {name: ("fn", name, np.dtype(vertex), np.dtype(offset)) for name in device_apply.KERNELS}

    monkeypatch.setattr(device_apply, "load_module", lambda device: _Module())
    scratch = SimpleNamespace(device=0, num_weights=2, sizes="sizes", ev_src="src", ev_dst="dst",
                              increased="inc", event_cap=8)
    views = (_View("from"), _View("to"), _View("heads"), _View("count"))
    ws = SimpleNamespace(change_views=lambda: views)
    for size, pending in ((5, True), (0, False)):
        events = SimpleNamespace(size=size, num_insertions=2 if size else 0)
        commit = device_apply.PendingCommit.__new__(device_apply.PendingCommit)
        commit.scratch, commit.events, commit._pending, commit._expired = scratch, events, pending, False
        commit.changes_grid = False  # the switch as a commit reads it by default
        got, launch = device_apply.DeviceChangeLists(commit, 1).captured_staging(ws)
        assert got is views
        if size:
            assert launch[0] == ("fn", "apply_changes_sized", np.dtype(np.int32), np.dtype(np.int32))
            assert launch[1][:4] == ("sizes", "src", "dst", "inc")
            assert [int(a) for a in launch[1][4:6]] == [2, 1] and launch[1][6:] == views
            assert launch[2] == ((1,), (device_apply.CHANGES_THREADS,))  # one block unless switched
            assert views[3].filled is None
        else:
            assert launch is None and views[3].filled == 0
    commit._expired = True
    commit._pending = True
    with pytest.raises(errors.InternalError):
        commit.sized_staging(0, *views)


def test_the_capture_key_names_every_address_and_scalar(monkeypatch):
    """fused._capture_key with stand-in device arrays (an object with ``data.ptr``, CuPy's
    layout): equal for the same addresses and values in the same places, different when any
    address or scalar changes, and worked out anew for another argument count."""
    import types

    import numpy as np

    class Array:
        def __init__(self, ptr):
            self.data = types.SimpleNamespace(ptr=ptr)

    monkeypatch.setattr(runtime, "cupy_module", lambda: types.SimpleNamespace(ndarray=Array))
    monkeypatch.setattr(runtime, "_key_layouts", {})
    fn = object()

    def args(ptrs=(10, 20), scalars=(5, 7)):
        return (np.int32(scalars[0]), Array(ptrs[0]), np.uint64(scalars[1]), Array(ptrs[1]))

    key = fused._capture_key(fn, 4, args())
    assert fused._capture_key(fn, 4, args()) == key
    assert fused._capture_key(fn, 8, args()) != key
    assert fused._capture_key(fn, 4, args(ptrs=(10, 21))) != key
    assert fused._capture_key(fn, 4, args(ptrs=(20, 10))) != key
    assert fused._capture_key(fn, 4, args(scalars=(5, 8))) != key
    assert fused._capture_key(object(), 4, args()) != key
    longer = args() + (Array(30),)
    assert fused._capture_key(fn, 4, longer) != key and fused._capture_key(fn, 4, longer)[3][-1] == 30



def test_an_update_carries_the_pull_by_offers_percent_and_compute_none(monkeypatch):
    """fused.run_choice reads ENGINES_PULL_OFFERS for an update (fused.update passes
    offer_above(n, percent) to the kernel) and leaves compute(), which has no pull, at 0; the
    module variant does not depend on it (a kernel argument, not a define)."""
    plan = SimpleNamespace(push_expansion="group", batch_changes=0)
    monkeypatch.delenv(fused.OFFERS_ENV, raising=False)
    assert fused.run_choice(plan).offers_percent == fused.OFFERS_DEFAULT
    monkeypatch.setenv(fused.OFFERS_ENV, "37")
    on = fused.run_choice(plan)
    assert on.offers_percent == 37 and fused.run_choice(plan, False).offers_percent == 0
    monkeypatch.setenv(fused.OFFERS_ENV, "off")
    assert fused.run_choice(plan).offers_percent == 0 and fused.run_choice(plan).defines == on.defines
    monkeypatch.setenv(fused.OFFERS_ENV, "all")
    with pytest.raises(errors.InvalidArgumentError, match="ENGINES_PULL_OFFERS"):
        fused.run_choice(plan)
