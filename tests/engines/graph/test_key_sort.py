"""The one-block key sort's host side (engines/graph/key_sort.py; no GPU needed): the switch, the
plan (which tile, how many bits, when the library's sort must do), the scratch reading the switch
with its event capacity, and the packing that key_sort.cu relies on, modelled in NumPy against
the library's order of the 64-bit keys (np.sort of the same uint64 array)."""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines import errors
from engines.graph import device_apply, key_sort

from ..fake_cupy import FakeCupy
from .test_apply_reserve import _fresh_scratch

from tests.switch_env import set_switch

PAD_OUT, PAD_IN = np.uint64(0x7FFFFFFFFFFFFFFF), np.uint64(0xFFFFFFFFFFFFFFFF)


@pytest.mark.parametrize("text, sort", [(None, "block"), ("", "block"), ("library", "library"),
                                        ("block", "block"), (" block ", "block")])
def test_the_switch(monkeypatch, text, sort):
    set_switch(monkeypatch, key_sort.KEY_SORT_ENV, text)
    assert key_sort.chosen() == sort


@pytest.mark.parametrize("text", ["Block", "cub", "1", "on"])
def test_a_bad_switch_names_itself(monkeypatch, text):
    monkeypatch.setenv(key_sort.KEY_SORT_ENV, text)
    with pytest.raises(errors.InvalidArgumentError, match="ENGINES_APPLY_KEY_SORT=.*library, block"):
        key_sort.chosen()


@pytest.mark.parametrize("count, rows, kernel, event_bits, end_bit", [
    (1, 1, "key_sort_2k", 1, 1),
    (1024, 114_599, "key_sort_2k", 11, 28),      # luxembourg_osm at the capacity floor
    (2048, 4039, "key_sort_2k", 12, 24),         # a power of two takes one bit more than its events
    (2049, 4039, "key_sort_4k", 12, 24),
    (1760, 4039, "key_sort_2k", 11, 23),         # the 4,039-vertex graph's 1,760-change batches
    (2641, 4039, "key_sort_4k", 12, 24),
    (4097, 2, "key_sort_8k", 13, 14),
    (8192, 1 << 17, "key_sort_8k", 14, 31),      # the widest packing that fits
])
def test_the_plan(count, rows, kernel, event_bits, end_bit):
    plan = key_sort.plan(count, rows)
    assert plan == key_sort.BlockSort(kernel, count, event_bits, end_bit)


@pytest.mark.parametrize("count, rows", [(0, 100), (8193, 100), (8192, (1 << 17) + 1), (1024, 1_088_092)])
def test_the_library_sorts_what_no_tile_or_packing_fits(count, rows):
    """No keys, more than the largest tile, or more than 31 bits (roadNet-PA's 1.09 M rows at the
    capacity floor need 21 + 11)."""
    assert key_sort.plan(count, rows) is None


def _apply_keys(rows_out, rows_in, count: int) -> np.ndarray:
    """device_apply.cu apply_keys: both sides' keys at ``count`` slots each, padding past the events."""
    real = rows_out.size
    j = np.arange(real, dtype=np.uint64)
    out = np.full(count, PAD_OUT, dtype=np.uint64)
    inn = np.full(count, PAD_IN, dtype=np.uint64)
    out[:real] = (rows_out.astype(np.uint64) << np.uint64(32)) | j
    inn[:real] = np.uint64(1 << 63) | (rows_in.astype(np.uint64) << np.uint64(32)) | j
    return np.concatenate([out, inn])


def _tile_items(plan: key_sort.BlockSort) -> int:
    return dict((kernel, tile) for tile, kernel in key_sort.TILES)[plan.kernel] // key_sort.THREADS


def _block_sort_model(keys: np.ndarray, plan: key_sort.BlockSort, check_packing: bool = True) -> np.ndarray:
    """key_sort.cu in NumPy, arrangement included: each side's keys packed into 32 bits (padding and
    the tile's slots past the count: every bit set), loaded striped (thread t, item i holds slot
    i * THREADS + t) into cub::BlockRadixSort, which ranks them in blocked order (position
    t * ITEMS + i) by the bits below end_bit alone, stably, as an LSD radix sort does; rank r is
    written back to slot r (SortBlockedToStriped); then unpacked. With ``check_packing`` it also
    asserts the packing's own invariant: no real key has every sorted bit set."""
    items = _tile_items(plan)
    tile = items * key_sort.THREADS
    out = np.empty_like(keys)
    mask = np.uint64((1 << plan.end_bit) - 1)
    # slot of each blocked position p = t * ITEMS + i
    thread, item = np.divmod(np.arange(tile), items)
    slot_of_position = item * key_sort.THREADS + thread
    for side in range(2):
        part = keys[side * plan.count:(side + 1) * plan.count]
        row = (part >> np.uint64(32)) & np.uint64(0x7FFFFFFF)
        pad = row == np.uint64(0x7FFFFFFF)
        packed = np.full(tile, 0xFFFFFFFF, dtype=np.uint64)
        packed[:plan.count] = np.where(pad, np.uint64(0xFFFFFFFF),
                                       (row << np.uint64(plan.event_bits)) | (part & np.uint64(0xFFFFFFFF)))
        if check_packing:
            assert not ((packed[:plan.count] & mask) == mask)[~pad].any(), "a real key packs to the padding's bits"
        in_blocked_order = packed[slot_of_position]
        ranked = in_blocked_order[np.argsort(in_blocked_order & mask, kind="stable")][:plan.count]
        side_bit = np.uint64(side << 63)
        unpacked = side_bit | ((ranked >> np.uint64(plan.event_bits)) << np.uint64(32)) | (
            ranked & np.uint64((1 << plan.event_bits) - 1))
        out[side * plan.count:(side + 1) * plan.count] = np.where(ranked == np.uint64(0xFFFFFFFF),
                                                                  side_bit | PAD_OUT, unpacked)
    return out


@settings(max_examples=200, deadline=None)
@given(count=st.integers(1, 8192), rows=st.integers(1, 1 << 20), fill=st.floats(0, 1), seed=st.integers(0, 2**32 - 1))
def test_the_packing_keeps_the_librarys_order(count, rows, fill, seed):
    """Whatever the rows (the largest row at the last event included, the case where every packed
    bit below end_bit but the event's top one is set) and however many slots are padding, the
    packed order is the library's order of the 64-bit keys, byte for byte."""
    plan = key_sort.plan(count, rows)
    if plan is None:
        assert count.bit_length() + (rows - 1).bit_length() > key_sort.MAX_END_BIT
        return
    rng = np.random.default_rng(seed)
    real = int(round(fill * count))
    rows_out = rng.integers(0, rows, real)
    rows_in = rng.integers(0, rows, real)
    if real:
        rows_out[-1] = rows_in[-1] = rows - 1
    keys = _apply_keys(rows_out, rows_in, count)
    assert np.array_equal(_block_sort_model(keys, plan), np.sort(keys))


def test_the_model_fails_a_packing_one_event_bit_short():
    """The model can tell the wrong packing the plan's extra event bit prevents: with event_bits the
    bit length of count - 1, a full side's last key on the last row packs to every sorted bit set,
    ties with the tile's padding, and (loaded striped, ranked blocked) sorts after padding that was
    ahead of it; the keys no longer come out in the library's order."""
    count, rows = 1024, 2
    good = key_sort.plan(count, rows)
    short = key_sort.BlockSort(good.kernel, count, good.event_bits - 1, good.end_bit - 1)
    rng = np.random.default_rng(5)
    rows_out, rows_in = rng.integers(0, rows, count), rng.integers(0, rows, count)
    rows_out[-1] = rows_in[-1] = rows - 1
    keys = _apply_keys(rows_out, rows_in, count)
    assert np.array_equal(_block_sort_model(keys, good), np.sort(keys))
    assert not np.array_equal(_block_sort_model(keys, short, check_packing=False), np.sort(keys))
    with pytest.raises(AssertionError, match="packs to the padding's bits"):
        _block_sort_model(keys, short)


def test_the_tiles_match_the_kernels():
    """key_sort.py's THREADS and TILES against key_sort.cu: the block size, and each tile kernel's
    items per thread times THREADS (a tile the kernel does not hold would drop keys silently)."""
    import re
    from pathlib import Path

    source = Path(key_sort.SOURCE).read_text()
    assert int(re.search(r"constexpr int THREADS = (\d+);", source).group(1)) == key_sort.THREADS
    for tile, kernel in key_sort.TILES:
        body = re.search(kernel + r"\(.*?\)\s*\{\s*keysort::sort_both_sides<(\d+)>", source, re.S)
        assert body is not None, kernel
        assert int(body.group(1)) * key_sort.THREADS == tile, kernel
