"""The slack layout's commit plan (device_apply._plan with a slack_apply.SlackChoice), without a
GPU: each way of bringing the target up to date gives its own first steps on each side (nothing,
apply_sync_rows over the right commit's keys, or copies of every row and entry with the rest of
the target cleared), every commit then decides on the current set's row ends and rebuilds in
place, a compaction lays the rows out first, and the record's slots and this commit's keys are
written before the record goes to the host. The bytes are checked on a GPU
(tests/gpu/test_slack_layout.py)."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace

import numpy as np
import pytest

from engines.graph import apply_sides, device_apply, device_graph, slack_apply

from ..fake_cupy import FakeCupy
from .test_apply_reserve import _fresh_scratch

N, M_CAP, K = 10, 60, 2


class _Module:
    def functions(self, vertex, offset):
        return {name: name for name in device_apply.KERNELS}


def _sets(monkeypatch):
    monkeypatch.setattr(device_graph, "cupy_module", lambda: FakeCupy())
    cur = device_graph.CsrBuffers(0, N, M_CAP, K, np.int32, slack=True)
    target = device_graph.CsrBuffers(0, N, M_CAP, K, np.int32, slack=True)
    for s in (cur, target):
        s.num_vertices, s.num_edges = N, 20
        s.keep_touched(8)
    cur.tail_ub, cur.lineage, cur.state, cur.parent, cur.touched_slots = 30, 1, 5, 4, 8
    target.tail_ub, target.lineage = 45, 1
    return cur, target


def _plan(monkeypatch, kind: str, parallel: bool = False):
    monkeypatch.setattr(device_apply, "load_module", lambda device: _Module())
    monkeypatch.setattr(device_apply.runtime, "operators_blocks", lambda work, device: 3)
    monkeypatch.setattr(device_apply, "_at", lambda arr, first=0: ("at", id(arr), int(first)))
    scratch = _fresh_scratch()
    monkeypatch.setattr(device_apply, "cupy_module", lambda: FakeCupy())
    monkeypatch.setenv(apply_sides.PARALLEL_SIDES_ENV, "1" if parallel else "0")
    monkeypatch.setenv("ENGINES_APPLY_KEY_SORT", "library")
    monkeypatch.setenv("ENGINES_MAPPED_RECORDS", "0")
    scratch.reserve(N, M_CAP, 8, stream=nullcontext())
    cur, target = _sets(monkeypatch)
    target.state = {"same": 5, "rows_of_source": 4, "rows_of_target": 6, "full": None, "compact": None}[kind]
    if kind == "rows_of_target":
        target.parent, target.touched_slots = 5, 8
    assert kind == "compact" or device_graph.sync_kind(target, cur) == kind
    owner = {"rows_of_source": cur, "rows_of_target": target}.get(kind)
    listed = None if owner is None else (owner.touched, owner.touched_slots, owner.touched_serial)
    choice = slack_apply.SlackChoice(target, kind, need=50, dirty=45, slots=8, insertions=4, listed=listed)
    slack_apply.failed(choice)  # as the commit does before it plans: the list was taken before
    steps = device_apply._plan(SimpleNamespace(device=0), scratch, cur, target, N, 2, (8, 30, 24), choice)
    return scratch, cur, target, steps


def _names(steps):
    return [s[1] if s[0] == "kernel" else s[0] for s in steps]


def _side_chains(steps):
    """The serial plan's out side's chain and in side's (between the sort and the rescan: the
    same steps on each side)."""
    body = steps[2: _names(steps).index("apply_rescan_max")]
    half = len(body) // 2
    assert _names(body[:half]) == _names(body[half:])
    return body[:half], body[half:]


@pytest.mark.parametrize("kind", ["same", "rows_of_source", "rows_of_target", "full", "compact"])
def test_every_slack_plan_decides_on_the_row_ends_and_ends_with_the_record(monkeypatch, kind):
    scratch, cur, target, steps = _plan(monkeypatch, kind)
    names = _names(steps)
    assert names[:2] == ["apply_keys", "sort"]
    assert names[-4:] == ["apply_rescan_max", "apply_slack_finish", "copy", "download"]
    assert "apply_move" not in names or kind == "compact"  # only a compaction moves the rows
    assert not {"apply_row_ptr", "apply_row_ptr_touched", "apply_rebuild"} & set(names)
    for step in steps:
        if step[0] == "kernel" and step[1] == "apply_decide":
            side = "out" if step[3][5] is cur.ptr["out"] else "in"
            assert step[3][6] is cur.end[side]  # the current set's own row ends, not ptr + 1
    rescan = steps[names.index("apply_rescan_max")][3]
    assert rescan[-1].base is target.meta or rescan[-1] is target.meta  # reads up to the out side's tail
    finish = steps[names.index("apply_slack_finish")]
    assert finish[3][1] is target.meta and finish[3][2] is scratch.record
    copy = steps[-2]
    assert copy[1] == ("at", id(target.touched), 0) and copy[3] == 2 * 8 * 8  # both sides' keys of the plan


def test_the_rows_kinds_copy_the_right_commits_rows_first(monkeypatch):
    for kind, owner in (("rows_of_source", "cur"), ("rows_of_target", "target")):
        _, cur, target, steps = _plan(monkeypatch, kind)
        keys = (cur if owner == "cur" else target).touched
        out_chain, in_chain = _side_chains(steps)
        for si, chain in enumerate((out_chain, in_chain)):
            assert _names(chain) == ["apply_sync_rows", "apply_decide", "apply_rebuild_slack"], kind
            args = chain[0][3]
            assert args[0].base is keys and args[0].size == 8  # this side's 8 slots of that list
            assert np.shares_memory(args[0], keys[si * 8: (si + 1) * 8])
            assert args[1] == 8 and args[-2] == si
            rebuild = chain[2][3]
            assert rebuild[-3] == si and rebuild[-2] == 0  # in place, not a compaction


def test_a_target_of_the_same_state_needs_nothing_and_a_stranger_every_entry(monkeypatch):
    _, _, _, steps = _plan(monkeypatch, "same")
    out_chain, in_chain = _side_chains(steps)
    assert _names(out_chain) == _names(in_chain) == ["apply_decide", "apply_rebuild_slack"]
    _, cur, target, steps = _plan(monkeypatch, "full")
    out_chain, _ = _side_chains(steps)
    names = _names(out_chain)
    assert names[-2:] == ["apply_decide", "apply_rebuild_slack"]
    copies = [s for s in out_chain if s[0] == "copy"]
    sets = [s for s in out_chain if s[0] == "memset"]
    # rows (start, end, room): all N + 1 of the current set; entries: its extent (tail 30) of the
    # key, row id and K weight columns, the rest up to the target's dirty bound (45) cleared; the
    # side's tail and longest row
    assert [c[3] for c in copies] == [4 * (N + 1)] * 3 + [4 * 30] * (2 + K) + [8, 8]
    assert [s[3] for s in sets] == [0] * 3 + [4 * 15] * (2 + K)
    assert [s[2] for s in sets[3:]] == [0xFF, 0xFF] + [0] * K  # room: key -1, row id -1, weight 0


def test_a_compaction_lays_out_moves_and_clears(monkeypatch):
    _, cur, target, steps = _plan(monkeypatch, "compact")
    out_chain, in_chain = _side_chains(steps)
    expected = ["copy", "apply_decide", "apply_slack_lengths", "cumsum", "apply_slack_layout", "apply_move",
                "apply_rebuild_slack", "apply_clear_from_tail"]
    # decide, then the longest row's bound carried over, and the layout, move and rebuild
    assert _names(out_chain) == ["apply_decide"] + [n for n in expected if n != "apply_decide"]
    cumsum = next(s for s in out_chain if s[0] == "cumsum")
    assert cumsum[1].base is target.end["out"] and cumsum[2].base is target.limit["out"] and cumsum[3] == np.int32
    move = next(s for s in out_chain if s[0] == "kernel" and s[1] == "apply_move")[3]
    assert move[2] is cur.ptr["out"] and move[3] is target.ptr["out"] and move[-1].base is cur.meta
    rebuild = next(s for s in out_chain if s[0] == "kernel" and s[1] == "apply_rebuild_slack")[3]
    assert rebuild[-2] == 1  # into the new layout
    clear = next(s for s in out_chain if s[0] == "kernel" and s[1] == "apply_clear_from_tail")[3]
    assert (int(clear[0]), int(clear[1])) == (0, 45)  # the target's entries up to its dirty bound


def test_the_plan_key_of_a_slack_commit_names_its_list(monkeypatch):
    scratch, cur, target, _ = _plan(monkeypatch, "rows_of_source")
    scratch.arena = SimpleNamespace(serial=3)
    choice = slack_apply.SlackChoice(target, "rows_of_source", need=50, dirty=45, slots=8,
                                     listed=(cur.touched, 8, cur.touched_serial))
    key = device_apply._plan_key(cur, target, N, scratch, 2, choice)
    other = slack_apply.SlackChoice(target, "same", need=50, dirty=45, slots=8)
    assert key != device_apply._plan_key(cur, target, N, scratch, 2, other)
    assert key[:6] == device_apply._plan_key(cur, target, N, scratch, 2)
    assert cur.touched_serial in key and 8 in key[6:]
