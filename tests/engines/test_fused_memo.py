"""The captured fused update's launch memo without a GPU (issue 27; ``ENGINES_FUSED_MEMO``; the GPU
side, where "check" proves the memo key sound and "on" gives the host reference's bytes, is
tests/gpu/test_fused_memo.py): the switch, its key, the entries it keeps and drops, the route an
update takes in each mode and what a hit stages."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace

import numpy as np
import pytest

from engines import errors
from engines.graph import device_apply
from engines.sssp.cuda import fused, runtime, switches, workspace

from .test_fused_capture import _Control, capturing_into_a_log


@pytest.mark.parametrize("text, mode", [("", "on"), ("0", "off"), (" OFF ", "off"), ("1", "on"),
                                        ("On", "on"), ("check", "check"), (" Check ", "check")])
def test_the_switch(monkeypatch, text, mode):
    monkeypatch.setenv(fused.MEMO_ENV, text)
    assert fused.memo_mode() == mode


def test_unset_is_on(monkeypatch):
    """The default since its GPU tests passed in both modes and the H100's A/B (0.920x and 0.884x
    per batch on the 4k graph's and luxembourg_osm's streams)."""
    monkeypatch.delenv(fused.MEMO_ENV, raising=False)
    assert fused.memo_mode() == "on"


@pytest.mark.parametrize("text", ["2", "yes", "checked", "-1"])
def test_a_bad_value_names_the_switch(monkeypatch, text):
    monkeypatch.setenv(fused.MEMO_ENV, text)
    with pytest.raises(errors.InvalidArgumentError, match=fused.MEMO_ENV):
        fused.memo_mode()


def test_the_run_choice_carries_the_mode_for_a_captured_update_only(monkeypatch):
    plan = SimpleNamespace(push_expansion="group", batch_changes=0)
    monkeypatch.delenv(fused.CAPTURE_ENV, raising=False)
    for text, mode in (("", "on"), ("0", "off"), ("1", "on"), ("check", "check")):
        monkeypatch.setenv(fused.MEMO_ENV, text)
        assert fused.run_choice(plan).launch_memo == mode
        assert fused.run_choice(plan, False).launch_memo == "off"  # compute() is never captured
    monkeypatch.setenv(fused.CAPTURE_ENV, "0")
    assert fused.run_choice(plan).launch_memo == "off"
    monkeypatch.setenv(fused.MEMO_ENV, "maybe")  # read (and refused) only where it counts
    assert fused.run_choice(plan).launch_memo == "off"
    monkeypatch.setenv(fused.CAPTURE_ENV, "1")
    with pytest.raises(errors.InvalidArgumentError, match=fused.MEMO_ENV):
        fused.run_choice(plan)


def _key_inputs(**change):
    """Stand-ins for what _memo_key reads, with ``change`` applied by name."""
    values = dict(serial=5, d_ptr=1000, p_ptr=2000, n=10, source=3, bits=20, no_parent=99, bound=7,
                  expansion="group", objective=0, plan_objective=0, ws_layout=11, scratch_layout=12, grid=False,
                  num_edges=40, delta=6, heads=2)
    values.update(change)
    v = SimpleNamespace(**values)
    graph = SimpleNamespace(_device=SimpleNamespace(current=SimpleNamespace(serial=v.serial,
                                                                            num_edges=v.num_edges)))
    distances = SimpleNamespace(data=SimpleNamespace(ptr=v.d_ptr))
    parents = SimpleNamespace(data=SimpleNamespace(ptr=v.p_ptr))
    plan = SimpleNamespace(num_vertices=v.n, source=v.source, push_expansion=v.expansion, device_delta=v.delta,
                           objective=v.plan_objective,
                           packing=SimpleNamespace(bits=v.bits, no_parent=v.no_parent, bound=v.bound))
    pending = SimpleNamespace(scratch=SimpleNamespace(layout=v.scratch_layout), changes_grid=v.grid)
    changes = SimpleNamespace(objective=v.objective, pending=pending, num_heads=v.heads)
    ws = SimpleNamespace(layout=v.ws_layout)
    return graph, distances, parents, plan, changes, ws


CHOICE = object()


def _key(choice=CHOICE, **change):
    graph, distances, parents, plan, changes, ws = _key_inputs(**change)
    return fused._memo_key(graph, distances, parents, plan, changes, choice, ws)


@pytest.mark.parametrize("name, value", [
    ("serial", 6), ("d_ptr", 1008), ("p_ptr", 2008), ("n", 11), ("source", 4), ("bits", 21),
    ("no_parent", 98), ("bound", 8), ("expansion", "batched"), ("objective", 1), ("plan_objective", 1),
    ("ws_layout", 13),
    ("scratch_layout", 14), ("grid", True)])
def test_the_memo_key_names_what_the_captured_launch_fixes(monkeypatch, name, value):
    """Each value a captured update's graph depends on (its kernel arguments' addresses by the
    layouts and serials that stand for them, its scalars, the staging's kernel and grid) changes
    the key; the same values give the same key."""
    monkeypatch.delenv(fused.GRID_ENV, raising=False)
    monkeypatch.delenv(fused.MAX_BLOCKS_ENV, raising=False)
    assert _key() == _key()
    assert _key(**{name: value}) != _key()


@pytest.mark.parametrize("name, value", [("num_edges", 41), ("delta", 9), ("heads", 3)])
def test_the_memo_key_leaves_out_what_the_control_block_carries(name, value):
    """The solo limit (from the edge count), delta and the head count change from update to
    update and travel in the initial record, not in the graph: they do not change the key."""
    assert _key(**{name: value}) == _key()


def test_the_memo_key_names_the_run_choice_and_the_grid_switches(monkeypatch):
    monkeypatch.delenv(fused.GRID_ENV, raising=False)
    monkeypatch.delenv(fused.MAX_BLOCKS_ENV, raising=False)
    key = _key()
    assert _key(choice=object()) != key
    monkeypatch.setenv(fused.GRID_ENV, "device")
    assert _key() != key
    monkeypatch.delenv(fused.GRID_ENV)
    monkeypatch.setenv(fused.MAX_BLOCKS_ENV, "4")
    assert _key() != key


def test_the_memo_keeps_an_entry_holding_its_choice_and_refuses_a_second_capture_key(monkeypatch):
    state = fused.CaptureState()
    choice = SimpleNamespace(name="choice")
    fused._keep_in_memo(state, (("k",), choice), ("capture", 1), "g1", False)
    entry = state.memo[("k",)]
    assert (entry.graph, entry.key, entry.mapped_record, entry.choice) == ("g1", ("capture", 1), False, choice)
    # the same capture key again (a graph captured anew after an eviction, say): the entry follows
    fused._keep_in_memo(state, (("k",), choice), ("capture", 1), "g2", True)
    assert state.memo[("k",)].graph == "g2" and state.memo[("k",)].mapped_record is True
    with pytest.raises(errors.InternalError, match=fused.MEMO_ENV):
        fused._keep_in_memo(state, (("k",), choice), ("capture", 2), "g3", False)
    assert state.memo[("k",)].graph == "g2"  # refused: nothing kept


def test_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(fused, "MAX_CAPTURED", 3)
    state = fused.CaptureState()
    for i in range(7):
        fused._keep_in_memo(state, ((i,), None), ("capture", i), f"g{i}", False)
        assert 1 <= len(state.memo) <= 3 and (i,) in state.memo


def test_a_captured_run_keeps_its_graph_in_the_memo_and_an_eviction_empties_it(monkeypatch):
    """fused._run_captured with ``memo``: the graph it captured, or found, is kept under the memo
    key with its capture key; a capture that drops another graph (MAX_CAPTURED) drops the memo,
    which may name that graph; without ``memo`` nothing is kept."""
    log = capturing_into_a_log(monkeypatch)
    monkeypatch.setattr(fused, "MAX_CAPTURED", 2)

    def fn(grid, block, args, stream=None):
        log.append(("fused", stream))

    def run(args, memo):
        assert fused._run_captured(fn, 1, args, _Control(), "s", 0, "int32", None, memo=memo) == "record"

    state = fused.capture_state(0, "int32")
    run(("a",), (("ma",), "choice"))
    key_a = state.memo[("ma",)].key
    assert key_a[:2] == (1, "a") and state.memo[("ma",)].graph is state.graphs[key_a]
    run(("b",), None)
    assert list(state.memo) == [("ma",)]
    run(("a",), (("ma",), "choice"))  # found, not captured: the same entry
    assert state.made == 2 and state.memo[("ma",)].graph is state.graphs[key_a]
    run(("c",), (("mc",), "choice"))  # drops b's graph, and the memo with it, then keeps c's
    assert state.made == 3 and list(state.memo) == [("mc",)]


class _Lock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _routed(monkeypatch, mode, upper=5, entry=None):
    """fused.update with every device part a stand-in: which of _launch and _replay_memo it takes
    in ``mode`` (the memo holding ``entry`` under any key), and the memo key it hands _launch."""
    routes = []
    ws = SimpleNamespace(lock=_Lock(), reserve=lambda n, c, s: routes.append(("reserve", n, c)), layout=4)
    state = fused.CaptureState()
    cupy = SimpleNamespace(cuda=SimpleNamespace(Device=lambda device: nullcontext()))
    monkeypatch.setattr(runtime, "cupy_module", lambda: cupy)
    monkeypatch.setattr(runtime, "stream", lambda device: nullcontext())
    monkeypatch.setattr(runtime, "order_after_current_stream", lambda s, device: None)
    monkeypatch.setattr(workspace, "get", lambda device, dtype: ws)
    monkeypatch.setattr(fused, "capture_state", lambda device, dtype=np.int32: state)
    monkeypatch.setattr(fused, "_memo_key", lambda *args: ("memo-key",))
    if entry is not None:
        state.memo[("memo-key",)] = entry
    monkeypatch.setattr(fused, "_launch", lambda *args: routes.append(("launch", args[-1])) or "record")
    monkeypatch.setattr(fused, "_replay_memo", lambda entry, *args: routes.append(("replay", entry)) or "record")
    monkeypatch.setattr(fused, "_values", lambda record: {"record": record})
    monkeypatch.setattr(fused, "_epilogue", lambda *args: SimpleNamespace())
    monkeypatch.setattr(fused, "grid_syncs", lambda record, **kw: 0)
    choice = SimpleNamespace(poll_record=False, launch_memo=mode)
    plan = SimpleNamespace(num_vertices=10, packed=True)
    changes = SimpleNamespace(upper=upper, num_heads=2, resolve_ready=lambda: True, num_changed=lambda: upper)
    parents = np.zeros(10, dtype=np.int32)
    fused.update("graph", "distances", parents, plan, changes, 0, choice=choice)
    return routes


@pytest.mark.parametrize("mode, upper, has_entry, route", [
    ("off", 5, True, ("launch", None)),  # off: no key, never the memo
    ("check", 5, True, ("launch", ("memo-key",))),  # check: the key worked out, the launch's own
    ("on", 5, False, ("launch", ("memo-key",))),  # on, a miss: the launch, which keeps its graph
    ("on", 5, True, ("replay", "entry")),  # on, a hit
    ("on", 0, True, ("launch", None)),  # an empty batch stages nothing: never the memo
    ("check", 0, True, ("launch", None)),
])
def test_the_route_an_update_takes(monkeypatch, mode, upper, has_entry, route):
    routes = _routed(monkeypatch, mode, upper, "entry" if has_entry else None)
    assert routes[0][0] == "reserve"  # before the key: a growth changes the layout it reads
    assert routes[1:] == [route]


class _Recorder:
    """A control block and a graph that log what a memo hit does with them."""

    def __init__(self, log):
        self.log = log
        self.host_read_ptr = 777

    def stage_initial(self, **fields):
        self.log.append(("stage", fields))

    def launch(self, stream):
        self.log.append(("replay", stream))


@pytest.mark.parametrize("mapped", [False, True])
def test_a_hit_stages_the_record_then_replays_then_waits(monkeypatch, mapped):
    """_replay_memo stages what _launch stages for a captured run (the next generation, the head
    count, the solo limit from the current edge count, delta; the host record's address when
    mapped), replays the entry's graph, counts the hit and does the overlapping host work before
    the one wait."""
    log = []
    control = _Recorder(log)
    entry = fused.MemoEntry(_Recorder(log), ("capture",), mapped, None)
    ws = SimpleNamespace(control=lambda layout: control, next_generation=lambda s: 41)
    state = fused.CaptureState()
    monkeypatch.setattr(runtime, "wait_record", lambda control, s, syncs: log.append(("wait",)) or "record")
    graph, distances, parents, plan, changes, _ = _key_inputs(n=1000, num_edges=4000, delta=37, heads=9)
    commit = device_apply.PendingCommit.__new__(device_apply.PendingCommit)
    commit._expired = False
    changes.pending = commit  # its require_current: the same refusal as the staging's
    choice = SimpleNamespace(solo_edges=64)
    record = fused._replay_memo(entry, state, graph, plan, changes, choice, ws, "s", np.dtype(np.int32), None,
                                lambda: log.append(("while running",)))
    assert record == "record" and state.hits == 1
    fields = log[0][1]
    expected = {"base_generation": 41, "num_heads": 9, "solo_limit": fused.solo_limit(1000, 4000, 64),
                "delta": 37}
    if mapped:
        expected["host_record"] = 777
    assert fields == expected and type(fields["delta"]) is np.uint64 and type(fields["solo_limit"]) is np.int32
    assert [item[0] for item in log] == ["stage", "replay", "while running", "wait"]
    commit._expired = True
    with pytest.raises(errors.InternalError):
        fused._replay_memo(entry, state, graph, plan, changes, choice, ws, "s", np.dtype(np.int32), None, None)


def test_the_switch_is_one_of_the_engines_switches():
    assert "ENGINES_FUSED_MEMO" in switches.__doc__ and fused.MEMO_ENV in fused._OWN_SWITCHES
