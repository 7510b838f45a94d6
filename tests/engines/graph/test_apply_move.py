"""The device apply's move by segments (``ENGINES_APPLY_MOVE``, device_apply.cu
``apply_move_segments``) without a GPU: the switch, read with the event capacity; the plan's move
step under each value; and a model of the kernel's arithmetic (each block's range, the warp's
32-way search for its first boundary, the rounds of up to 256 boundaries, each entry's boundary)
that must move every untouched entry exactly where the row-by-row move puts it, and nothing else.
The bytes are checked on the GPU (tests/gpu/test_apply_move.py)."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines import errors
from engines.graph import device_apply

from ..fake_cupy import FakeCupy
from .test_apply_reserve import _fresh_scratch
from .test_apply_sides import _planned

from tests.switch_env import set_switch

BLOCK = 256  # SSSP_BLOCK: boundaries a round, threads a block


@pytest.mark.parametrize("text, move", [(None, "rows"), ("", "rows"), ("rows", "rows"),
                                        ("segments", "segments"), (" segments ", "segments")])
def test_the_switch(monkeypatch, text, move):
    set_switch(monkeypatch, device_apply.MOVE_ENV, text)
    assert device_apply.move_rule() == move


@pytest.mark.parametrize("text", ["Segments", "runs", "1", "on"])
def test_a_bad_switch_names_itself(monkeypatch, text):
    monkeypatch.setenv(device_apply.MOVE_ENV, text)
    with pytest.raises(errors.InvalidArgumentError, match="ENGINES_APPLY_MOVE=.*rows, segments"):
        device_apply.move_rule()


def test_the_switch_is_read_when_the_event_buffers_grow(monkeypatch):
    """A captured commit's plan depends on it, and only a growth of the event buffers makes a new
    layout: a reserve that grows rows or entries keeps the reading, one that grows the events takes
    the switch's value, and a bad value refuses the reserve before anything changes."""
    scratch = _fresh_scratch()
    monkeypatch.setattr(device_apply, "cupy_module", lambda: FakeCupy())
    monkeypatch.setenv(device_apply.MOVE_ENV, "segments")
    scratch.reserve(10, 20, 8, stream=nullcontext())
    assert scratch.move == "segments"
    monkeypatch.setenv(device_apply.MOVE_ENV, "rows")
    scratch.reserve(500, 900, 8, stream=nullcontext())  # rows and entries grow, events fit
    assert scratch.move == "segments"
    monkeypatch.setenv(device_apply.MOVE_ENV, "runs")
    before = (scratch.layout, scratch.event_cap, scratch.keys)
    with pytest.raises(errors.InvalidArgumentError, match="ENGINES_APPLY_MOVE"):
        scratch.reserve(500, 900, 5000, stream=nullcontext())
    assert (scratch.layout, scratch.event_cap, scratch.keys) == before and scratch.move == "segments"
    monkeypatch.setenv(device_apply.MOVE_ENV, "rows")
    scratch.reserve(500, 900, 5000, stream=nullcontext())
    assert scratch.move == "rows"


@pytest.mark.parametrize("move", ["rows", "segments"])
def test_the_plan_moves_each_side_with_the_chosen_kernel(monkeypatch, move):
    """Both sides' move step: the kernel the switch names, after the side's row offsets; the
    segments' one walks that side's sorted keys on a grid of a block per MOVE_ENTRIES_PER_BLOCK
    old entries (the reserved capacity's here: the plan of a captured commit)."""
    monkeypatch.setenv(device_apply.MOVE_ENV, move)
    monkeypatch.setattr(device_apply.runtime, "operators_grid_cap", lambda device: 1056)
    scratch, plan = _planned(monkeypatch, parallel=False, touched=False, blocks=lambda items, device: 7)
    kernels = [step[1] for step in plan if step[0] == "kernel"]
    wanted = "apply_move_segments" if move == "segments" else "apply_move"
    moves = [step for step in plan if step[0] == "kernel" and step[1] in ("apply_move", "apply_move_segments")]
    assert [step[1] for step in moves] == [wanted, wanted]
    for step, name in zip(moves, ("out", "in")):
        assert kernels.index(step[1]) > kernels.index("apply_row_ptr")
    if move == "segments":
        cap = scratch.event_cap
        for step, (lo, hi) in zip(moves, ((0, cap), (cap, 2 * cap))):
            keys = step[3][1]
            assert keys.base is scratch.keys and keys.size == hi - lo
            assert keys.__array_interface__["data"][0] == scratch.keys[lo:].__array_interface__["data"][0]
        assert [step[2] for step in moves] == [1, 1]  # m_old = 20 entries (the capacity): one block
    else:
        assert [step[2] for step in moves] == [7, 7]  # runtime.operators_blocks'


@pytest.mark.parametrize("entries, blocks", [
    (0, 1), (1, 1), (2048, 1), (2049, 2),
    (176_000, 86),          # the 4,039-vertex graph
    (300_000, 147),
    (3_083_796, 1056),      # roadNet-PA: the grid cap (an H200's or H100's 132 x 8 blocks)
    (57_708_624, 1056),
])
def test_the_segments_grid(monkeypatch, entries, blocks):
    """A block per MOVE_ENTRIES_PER_BLOCK old entries up to the grid cap (not the operators' rule of
    a thread per item, which gave roadNet-PA 6 blocks of half a million entries each: 3.5 ms a side
    on an H100 at 0cdc6e9)."""
    monkeypatch.setattr(device_apply.runtime, "operators_grid_cap", lambda device: 1056)
    assert device_apply.move_blocks(entries, 0) == blocks


# -- the kernel's arithmetic ----------------------------------------------------------------------

def _first_boundary_past(rows, count, old_ptr, n_old, m_old, entry):
    """first_boundary_past: 32 probes a round, positions at or past hi counting as past."""
    lo, hi = 0, count
    while lo < hi:
        step = (hi - lo + 31) // 32
        past = []
        for lane in range(32):
            q = lo + (lane + 1) * step - 1
            if q < hi:
                r = rows[q]
                past.append((old_ptr[r + 1] if r < n_old else m_old) > entry)
            else:
                past.append(True)
        if not any(past):
            return hi
        first = past.index(True)
        new_hi = lo + (first + 1) * step - 1
        lo = lo if first == 0 else lo + first * step
        hi = min(new_hi, hi)
    return lo


def _boundary(rows, p, count, old_ptr, new_ptr, n_old, m_old, tail):
    r = rows[p] if p < count else n_old
    if r < n_old:
        return old_ptr[r], old_ptr[r + 1], new_ptr[r] - old_ptr[r]
    return m_old, m_old, tail


def _segments_model(rows, old_ptr, new_ptr, n_old, blocks):
    """apply_move_segments over ``blocks`` blocks: {new position: old position} of every entry it
    copies (a position written twice fails)."""
    count, m_old = len(rows), old_ptr[n_old]
    tail = new_ptr[n_old] - m_old
    moved = {}
    for b in range(blocks):
        begin, end = m_old * b // blocks, m_old * (b + 1) // blocks
        if begin >= end:
            continue
        p, cur = _first_boundary_past(rows, count, old_ptr, n_old, m_old, begin), begin
        while True:
            loaded = min(count + 1 - p, BLOCK)
            bounds = [_boundary(rows, p + t, count, old_ptr, new_ptr, n_old, m_old, tail) for t in range(loaded)]
            stop = min((t for t in range(loaded) if bounds[t][0] >= end), default=BLOCK)
            last_round = stop < BLOCK or loaded < BLOCK
            usable = stop + 1 if stop < BLOCK else loaded
            upto = end if last_round else min(bounds[loaded - 1][0], end)
            for thread in range(BLOCK):
                j = 0
                for e in range(cur + thread, upto, BLOCK):
                    while j < usable - 1 and bounds[j][1] <= e:
                        j += 1
                    if bounds[j][0] <= e:
                        continue
                    to = e + bounds[j][2]
                    assert to not in moved, f"entry {e} written over {moved[to]} at {to}"
                    moved[to] = e
            if last_round:
                break
            p, cur = p + loaded - 1, upto
    return moved


def _rows_move(touched, old_ptr, new_ptr, n_old):
    """apply_move: each entry of an untouched row by its row's shift."""
    return {int(new_ptr[r] + e - old_ptr[r]): int(e) for r in range(n_old) if r not in touched
            for e in range(old_ptr[r], old_ptr[r + 1])}


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_old=st.integers(1, 80), new_vertices=st.integers(0, 4),
       events=st.integers(1, 900), degree=st.integers(0, 9), hubs=st.booleans(), blocks=st.integers(1, 12))
def test_the_segments_move_every_untouched_entry_where_rows_do(seed, n_old, new_vertices, events, degree, hubs,
                                                               blocks):
    """Random rows (empty ones included), sorted events on old and new rows (many per row when
    ``hubs``: more boundaries than a round holds), touched rows of any new length."""
    rng = np.random.default_rng(seed)
    old_deg = rng.integers(0, degree + 1, n_old)
    old_ptr = np.concatenate([[0], np.cumsum(old_deg)]).astype(np.int64)
    n_after = n_old + new_vertices
    pool = rng.integers(0, n_after, 3) if hubs else np.arange(n_after)
    rows = np.sort(rng.choice(pool, events))
    touched = set(rows.tolist())
    new_deg = np.zeros(n_after, dtype=np.int64)
    new_deg[:n_old] = old_deg
    for r in touched:
        new_deg[r] = rng.integers(0, 6)
    new_ptr = np.concatenate([[0], np.cumsum(new_deg)]).astype(np.int64)
    got = _segments_model(rows.tolist(), old_ptr.tolist(), new_ptr.tolist(), n_old, blocks)
    assert got == _rows_move(touched, old_ptr, new_ptr, n_old)


def test_the_comparison_fails_a_boundary_that_takes_the_shift_before_it():
    """The property above can fail: with each boundary carrying the shift of the boundary before
    it (the rows before a touched row moved by the previous run's shift), over two rounds of
    boundaries, the model no longer moves the entries where the row-by-row move does."""
    rows = [1] * 300 + [3]  # more boundaries than a round: the walk needs a second round
    old_ptr, new_ptr = [0, 2, 4, 6, 8], [0, 2, 3, 5, 7]
    good = _segments_model(rows, old_ptr, new_ptr, 4, 1)
    assert good == _rows_move({1, 3}, np.array(old_ptr), np.array(new_ptr), 4)
    original = _boundary

    def shifted(rows, p, count, old_ptr, new_ptr, n_old, m_old, tail):  # each boundary's shift of the one before
        lo, hi, _ = original(rows, p, count, old_ptr, new_ptr, n_old, m_old, tail)
        return lo, hi, original(rows, max(p - 1, 0), count, old_ptr, new_ptr, n_old, m_old, tail)[2]

    globals()["_boundary"] = shifted
    try:
        assert _segments_model(rows, old_ptr, new_ptr, 4, 1) != good
    finally:
        globals()["_boundary"] = original
