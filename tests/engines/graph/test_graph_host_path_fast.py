"""Graph's per-update host checks on their fast paths (no GPU needed): the objective check, the
offset dtype choice and the device commit's offset test give what the straightforward code gave
(values, types, the very dtype objects, the same errors with the same messages)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from engines.errors import InvalidArgumentError
from engines.graph import graph as graph_module
from engines.graph.graph import OFFSET32_MAX, Graph


def reference_check_objective(num_weights, k):
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= int(k) < num_weights:
        raise InvalidArgumentError(f"objective {k!r} is out of range [0, {num_weights})")
    return int(k)


class _IntSubclass(int):
    pass


OBJECTIVES = [0, 1, 2, 3, -1, -4, 10**30, True, False, np.int32(1), np.int64(2), np.uint8(0), np.int64(-1),
              _IntSubclass(1), _IntSubclass(7), 1.0, "0", None, np.float64(0.0), np.bool_(True)]


@pytest.mark.parametrize("k", OBJECTIVES, ids=repr)
def test_check_objective_matches_the_reference(k):
    g = Graph.from_edges([0, 1], [1, 2], [[1, 2, 3], [4, 5, 6]])
    try:
        want = reference_check_objective(3, k)
    except InvalidArgumentError as exc:
        with pytest.raises(InvalidArgumentError) as got:
            g._check_objective(k)
        assert str(got.value) == str(exc)
        with pytest.raises(InvalidArgumentError):
            g.max_weight(k)
        return
    got = g._check_objective(k)
    assert type(got) is int and got == want
    assert g.max_weight(k) == [4, 5, 6][want] and g.weight_sum(k) == [5, 7, 9][want]


def test_offset_dtype_is_numpy_own_object():
    for m in (0, 5, OFFSET32_MAX, OFFSET32_MAX + 1):
        want = np.dtype(np.int32) if m <= OFFSET32_MAX else np.dtype(np.int64)
        got = graph_module._offset_dtype_for(m, None)
        assert got is want and got == want
    for forced in (np.int32, "int64", np.dtype(np.int64), "i4"):
        assert graph_module._offset_dtype_for(10, forced) == np.dtype(forced)
    with pytest.raises(InvalidArgumentError, match="int32 or int64"):
        graph_module._offset_dtype_for(10, np.int16)
    with pytest.raises(InvalidArgumentError, match="do not fit int32 offsets"):
        graph_module._offset_dtype_for(OFFSET32_MAX + 1, np.int32)


class _Rebuilt(Exception):
    pass


@pytest.mark.parametrize("current", [np.int32, np.int64, ">i8", "<i8"])
@pytest.mark.parametrize("forced", [None, np.int32, np.int64])
@pytest.mark.parametrize("m", [10, OFFSET32_MAX])
def test_device_offsets_rebuild_exactly_when_the_reference_did(current, forced, m):
    """The early return of _device_offsets_for against its previous condition; past it the graph
    would rebuild the device copy (here a sentinel stands in for the download that starts it)."""
    g = Graph.from_edges([0, 1], [1, 2], [1, 2])
    g._forced_offset = None if forced is None else np.dtype(forced)
    g._m = m
    g._device = types.SimpleNamespace(current=types.SimpleNamespace(offset_dtype=np.dtype(current)))

    def rebuild():
        raise _Rebuilt

    g._host_out = rebuild
    events = types.SimpleNamespace(num_insertions=5)
    try:
        wanted = graph_module._offset_dtype_for(m + 5, g._forced_offset)
    except InvalidArgumentError:
        with pytest.raises(InvalidArgumentError):
            g._device_offsets_for(events)
        return
    stays = np.dtype(current) == wanted or wanted == np.dtype(np.int32)
    if stays:
        assert g._device_offsets_for(events) is None
    else:
        with pytest.raises(_Rebuilt):
            g._device_offsets_for(events)
