"""The slack layout's host rules (engines/graph/slack_apply.py, device_graph.sync_kind and the
layout switch), checked without a GPU: the room a moving row takes against the device's rule, the
bound on a commit's tail growth against every way the touched rows can move, and which copy a
commit's target needs for each relation between two buffer sets. The kernels' results are checked
on a GPU (tests/gpu/test_slack_layout.py)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.errors import InvalidArgumentError
from engines.graph import device_graph, slack_apply

SOURCE = Path(device_graph.__file__).with_name("device_apply.cu")


def test_the_room_of_a_moving_row_is_the_devices():
    """slack_capacity is written twice (the host bounds the tail with it, the kernel takes it):
    the kernel's expression is the host's."""
    text = SOURCE.read_text()
    body = re.search(r"i64 slack_capacity\(i64 length\) \{ return (.*?); \}", text)
    assert body is not None, "device_apply.cu slack_capacity not found"
    assert body.group(1) == "length + (length >> 2) + 2"
    for length in (0, 1, 3, 4, 7, 1000, 2**31 - 1):
        assert slack_apply.slack_capacity(length) == length + (length >> 2) + 2


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 60), st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=30))
def test_a_commit_never_moves_the_tail_past_the_worst_growth(rows):
    """For any touched rows (old length, insertions, deletions of the row: each event touches one
    row of a side), the rooms of every row that moves (its new length past its room: at worst
    every row) sum to at most worst_growth of the batch's sizes and the longest row."""
    m_old = sum(length for length, _, _ in rows)
    insertions = sum(ins for _, ins, _ in rows)
    events = sum(ins + dels for _, ins, dels in rows)
    longest = max(length for length, _, _ in rows)
    moved = sum(slack_apply.slack_capacity(length + ins) for length, ins, dels in rows if ins + dels > 0)
    assert moved <= slack_apply.worst_growth(m_old, insertions, events, longest)
    assert moved <= slack_apply.worst_growth(m_old, insertions, events, longest + 5)  # a looser bound


def _set(state, parent=None, lineage=1, touched=4, slack=True):
    return SimpleNamespace(state=state, parent=parent, lineage=lineage, touched_slots=touched, slack=slack)


@pytest.mark.parametrize("target, source, kind", [
    (_set(5), _set(5), "same"),
    (_set(4), _set(5, parent=4), "rows_of_source"),
    (_set(4), _set(5, parent=4, touched=0), "full"),  # the source's rows are not kept
    (_set(6, parent=5), _set(5), "rows_of_target"),  # after restore(): the target is a commit ahead
    (_set(6, parent=5, touched=0), _set(5), "full"),
    (_set(4), _set(5, parent=3), "full"),  # two commits apart
    (_set(5, lineage=2), _set(5), "full"),  # laid out apart (a compaction)
    (_set(None), _set(5), "full"),  # a new set, or one a failed commit wrote
    (_set(5, lineage=None), _set(5), "full"),
    (_set(5), _set(5, slack=False), "full"),
])
def test_the_copy_a_target_needs(target, source, kind):
    assert device_graph.sync_kind(target, source) == kind
    assert kind in device_graph.SYNC_KINDS


def test_a_failed_commit_leaves_its_target_unknown_and_a_published_one_known():
    target = SimpleNamespace(state=7, parent=6, lineage=3, tail_ub=10, m_cap=100, touched_slots=5)
    source = SimpleNamespace(state=8, lineage=3, longest_ub=12)
    choice = slack_apply.SlackChoice(target, "rows_of_source", need=40, dirty=10, slots=9, insertions=5)
    slack_apply.failed(choice)
    assert (target.state, target.parent, target.lineage, target.tail_ub, target.touched_slots) == (None, None, None,
                                                                                                    100, 0)
    assert device_graph.sync_kind(target, _set(8)) == "full"
    slack_apply.published(choice, source)
    assert (target.parent, target.lineage, target.tail_ub, target.touched_slots) == (8, 3, 40, 9)
    assert target.longest_ub == 17  # the source's longest row and the batch's insertions
    assert target.state not in (None, 7, 8)
    compacted = slack_apply.SlackChoice(target, "compact", need=30, dirty=40, slots=9)
    slack_apply.published(compacted, source)
    assert target.lineage != 3 and target.tail_ub == 30


@pytest.mark.parametrize("value, layout", [(None, "packed"), ("packed", "packed"), ("slack", "slack")])
def test_the_layout_switch(monkeypatch, value, layout):
    if value is None:
        monkeypatch.delenv(device_graph.LAYOUT_ENV, raising=False)
    else:
        monkeypatch.setenv(device_graph.LAYOUT_ENV, value)
    assert device_graph.chosen_layout() == layout


def test_a_bad_layout_is_refused_by_name(monkeypatch):
    monkeypatch.setenv(device_graph.LAYOUT_ENV, "loose")
    with pytest.raises(InvalidArgumentError, match=device_graph.LAYOUT_ENV):
        device_graph.chosen_layout()
    assert device_graph.DEFAULT_LAYOUT == "packed"  # until the slack layout's GPU tests have passed


# -- the commits' choices over a graph's life (host bookkeeping only: no kernels run) -----------

def _events(n_after=100, insertions=10, size=20):
    return SimpleNamespace(n_after=n_after, num_insertions=insertions, size=size)


class _Life:
    """A slack DeviceGraph whose commits are chosen, marked and published as device_apply.commit
    does, their records resolved as the device would report them (no kernels)."""

    def __init__(self, monkeypatch, n=100, m=400):
        import numpy as np

        from ..fake_cupy import FakeCupy

        monkeypatch.setattr(device_graph, "cupy_module", lambda: FakeCupy())
        self.dg = device_graph.DeviceGraph(0, "slack")
        loaded = self.dg.target(n, m, 1, np.int32)
        loaded.num_vertices, loaded.num_edges, loaded.tail_ub, loaded.longest_ub = n, m, m, 8
        loaded.state, loaded.lineage = device_graph.next_state(), device_graph.next_lineage()
        self.dg.current = loaded
        self.kinds = []

    def commit(self, events=None, moved=5):
        events = events or _events()
        cur = self.dg.current
        choice = slack_apply.choose(self.dg, events, 32)
        assert choice.target is not cur and choice.target.m_cap >= choice.need
        slack_apply.failed(choice)
        slack_apply.published(choice, cur)
        target = choice.target
        # as many edges deleted as inserted; the record resolved: the tail moved by ``moved``
        # entries (rows that left their rooms), the longest row as it was
        target.num_vertices, target.num_edges = events.n_after, cur.num_edges
        self.dg.publish(target)
        target.tail_ub = (target.num_edges if choice.kind == "compact" else cur.tail_ub) + moved
        target.longest_ub = cur.longest_ub
        self.kinds.append(choice.kind)
        return choice

    def snapshot(self):
        cur = self.dg.current
        return SimpleNamespace(state=cur.state, lineage=cur.lineage, parent=None, slack=True, touched_slots=0,
                               tail_ub=cur.tail_ub, longest_ub=cur.longest_ub, num_edges=cur.num_edges,
                               num_vertices=cur.num_vertices, num_weights=1, offset_dtype=cur.offset_dtype,
                               m_cap=cur.tail_ub, n_cap=cur.n_cap, touched=None, touched_serial=0,
                               extent=cur.tail_ub)


def test_a_steady_chain_settles_on_the_last_commits_rows(monkeypatch):
    """Two full copies while the sets are made (the loaded set is too tight to be a target), then
    every commit copies the rows of the one before it, with no new set."""
    life = _Life(monkeypatch)
    for _ in range(12):
        life.commit()
    assert life.kinds[:2] == ["full", "full"] and set(life.kinds[2:]) == {"rows_of_source"}, life.kinds
    assert len(life.dg.owned) == 2


def test_the_restore_loop_copies_the_targets_own_rows_back(monkeypatch):
    """restore(snapshot), commit, again: the first commit writes the set that holds the snapshot's
    state (nothing to copy), each later one the set one commit ahead of it (its own rows back)."""
    life = _Life(monkeypatch)
    for _ in range(4):
        life.commit()
    snap = life.snapshot()
    life.kinds.clear()
    for _ in range(5):
        life.dg.current = snap  # restore(): the snapshot's set becomes current, uncopied
        life.commit()
    assert life.kinds == ["same"] + ["rows_of_target"] * 4, life.kinds


def test_a_far_tail_compacts_and_the_next_commit_copies_everything(monkeypatch):
    life = _Life(monkeypatch)
    for _ in range(3):
        life.commit()
    life.dg.current.tail_ub = int(1.5 * 410) + slack_apply.COMPACT_MIN + 1  # rows moved far: past 1.5x the edges
    assert life.commit().kind == "compact"
    lineages = {s.lineage for s in life.dg.owned}
    assert len(lineages) == 2  # the compacted set starts a lineage of its own
    assert life.commit().kind == "full" and life.commit().kind == "rows_of_source"


def test_a_commit_that_would_outgrow_its_offsets_compacts(monkeypatch):
    """A tail whose worst growth would pass what the row offsets hold compacts instead of moving
    rows there."""
    life = _Life(monkeypatch)
    for _ in range(3):
        life.commit()
    monkeypatch.setattr(slack_apply, "offset_limit", lambda offset: life.dg.current.tail_ub + 10)
    assert life.commit().kind == "compact"
